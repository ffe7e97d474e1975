"""A transaction writes rows (inserts, updates, an update that moves a key, a delete) and reads them back by key
with every shape a pinned key takes: integer literals quoted, signed, zero-padded, as decimals and doubles, and
parameters of many Python types. A plain MonetDB twin given the same statements is the oracle. A read decides
from the literal whether the transaction's pending writes must reach the Cache first (write_buffer.py
_pending_match): a wrong "no" answers from the snapshot without the transaction's own write."""

from __future__ import annotations

import contextlib
import decimal
import enum
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

import tique
from tique.database import Database
from tique.engine.base import RawConnection
from tique.params import inline


class K(enum.IntEnum):
    FIVE = 5


KEYS = {
    "int": "(k INT PRIMARY KEY, v INT)",
    "tinyint": "(k TINYINT PRIMARY KEY, v INT)",
    "bigint": "(k BIGINT PRIMARY KEY, v INT)",
    "hugeint": "(k HUGEINT PRIMARY KEY, v INT)",
}

LITERALS = (
    "{n}", "'{n}'", "+{n}", "'+{n}'", "0{n}", "'0{n}'", "' {n}'", "'{n} '", "{n}.0", "'{n}.0'", "{n}e0",
    "CAST({n} AS BIGINT)", "-(-{n})",
)  # fmt: skip


def params(n: int) -> list[Any]:
    return [n, str(n), decimal.Decimal(n), float(n), True, K.FIVE, f" {n}", decimal.Decimal(f"{n}.00")]


@contextlib.contextmanager
def twin_tables(
    connect: Callable[..., tique.Connection], url: str, unique_name: Callable[[str], str], ddl: str, **settings: Any
) -> Iterator[tuple[tique.Connection, tique.Cursor, RawConnection, str, str]]:
    """A tique table and its plain MonetDB twin of the same definition; the transaction rolled back after."""
    t, p = unique_name("kt"), unique_name("kp")
    conn = connect(**settings)
    cur = conn.cursor()
    raw = Database.get(url).connect_raw()
    try:
        cur.execute(f"CREATE TABLE {t} {ddl}")
        raw.execute(f"CREATE TABLE {p} {ddl} -- tique: plain")
        conn.commit()
        yield conn, cur, raw, t, p
    finally:
        conn.rollback()
        raw.close()


def answer(run: Callable[..., list[tuple[Any, ...]]], *args: Any, ordered: bool = False) -> Any:
    """What a differential test compares with the twin's: the rows ``run(*args)`` returns (sorted unless
    ``ordered``), or the name of the error class it raised where the engine refuses the statement."""
    try:
        rows = run(*args)
    except tique.Error as exc:
        return type(exc).__name__
    return list(rows) if ordered else sorted(rows, key=repr)


def rows_of(cur: tique.Cursor, sql: str, args: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
    cur.execute(sql, args)
    return cur.fetchall()


@pytest.mark.parametrize("kind", list(KEYS))
def test_reads_of_own_writes_by_key_answer_as_monetdb(
    connect: Callable[..., tique.Connection], url: str, unique_name: Callable[[str], str], kind: str
) -> None:
    with twin_tables(connect, url, unique_name, KEYS[kind]) as (conn, cur, raw, t, p):
        cur.execute(f"INSERT INTO {t} VALUES (1, 10), (2, 20), (3, 30)")
        raw.execute(f"INSERT INTO {p} VALUES (1, 10), (2, 20), (3, 30)")
        conn.commit()
        writes = [
            ("INSERT INTO {t} VALUES (%s, %s)", (5, 50)),
            ("INSERT INTO {t} VALUES (%s, %s)", ("6", 60)),
            ("INSERT INTO {t} VALUES (%s, %s)", (decimal.Decimal(7), 70)),
            ("INSERT INTO {t} VALUES (%s, %s)", (8.0, 80)),
            ("UPDATE {t} SET v = v + 1 WHERE k = %s", ("2",)),
            ("UPDATE {t} SET k = k + 10 WHERE k = %s", (3,)),
            ("DELETE FROM {t} WHERE k = %s", (decimal.Decimal(1),)),
            ("UPDATE {t} SET v = v + 1 WHERE k = '5'", ()),
        ]
        wrong = []
        for sql, args in writes:
            cur.execute(sql.format(t=t), args)
            raw.execute(inline(sql.format(t=p), args))
            for n in (1, 2, 3, 5, 6, 7, 8, 13):
                for shape in LITERALS:
                    query = f"SELECT k, v FROM {{t}} WHERE k = {shape.format(n=n)}"
                    try:
                        want = sorted(raw.execute(query.format(t=p)).rows)
                    except tique.DataError:
                        continue  # MonetDB refuses the literal (an error would end the transaction)
                    cur.execute(query.format(t=t))
                    got = sorted(cur.fetchall())
                    if got != want:
                        wrong.append((sql, query, got, want))
                for arg in params(n):
                    query = "SELECT k, v FROM {t} WHERE k = %s"
                    try:
                        want = sorted(raw.execute(inline(query.format(t=p), (arg,))).rows)
                    except (tique.DataError, tique.ProgrammingError):
                        continue
                    cur.execute(query.format(t=t), (arg,))
                    got = sorted(cur.fetchall())
                    if got != want:
                        wrong.append((sql, repr(arg), got, want))
        assert not wrong, wrong[:10]


COMPOSITE = {
    "int,varchar": ("(a INT, b VARCHAR(8), v INT, PRIMARY KEY (a, b))", "'{m}'"),
    "int,bigint": ("(a INT, b BIGINT, v INT, PRIMARY KEY (a, b))", "{m}"),
    "smallint,hugeint": ("(a SMALLINT, b HUGEINT, v INT, PRIMARY KEY (a, b))", "{m}"),
}


@pytest.mark.parametrize("kind", list(COMPOSITE))
def test_reads_of_own_writes_by_composite_key_answer_as_monetdb(
    connect: Callable[..., tique.Connection], url: str, unique_name: Callable[[str], str], kind: str
) -> None:
    ddl, b_literal = COMPOSITE[kind]
    with twin_tables(connect, url, unique_name, ddl) as (conn, cur, raw, t, p):
        initial = ", ".join(f"({a}, {b_literal.format(m=b)}, {a * 10 + b})" for a in (1, 2) for b in (1, 2))
        cur.execute(f"INSERT INTO {t} VALUES {initial}")
        raw.execute(f"INSERT INTO {p} VALUES {initial}")
        conn.commit()
        writes = [
            ("INSERT INTO {t} VALUES (%s, %s, %s)", (5, "5" if "varchar" in kind else 5, 55)),
            ("INSERT INTO {t} VALUES (%s, %s, %s)", ("6", "1" if "varchar" in kind else 1, 61)),
            ("UPDATE {t} SET v = v + 1 WHERE a = %s", (2,)),
            ("UPDATE {t} SET a = a + 10 WHERE a = %s", (1,)),
            ("DELETE FROM {t} WHERE a = 12 AND v = 22", ()),
        ]
        wrong = []
        for sql, args in writes:
            cur.execute(sql.format(t=t), args)
            raw.execute(inline(sql.format(t=p), args))
            for a in (1, 2, 5, 6, 11, 12):
                for b in (1, 2, 5):
                    for a_shape in ("{n}", "'{n}'", "{n}.0", "0{n}"):
                        for where in (
                            f"a = {a_shape.format(n=a)} AND b = {b_literal.format(m=b)}",
                            f"b = {b_literal.format(m=b)} AND a = {a_shape.format(n=a)}",
                            f"a = {a_shape.format(n=a)}",
                            f"a = {a_shape.format(n=a)} AND b = '{b}'",
                        ):
                            query = f"SELECT a, b, v FROM {{t}} WHERE {where}"
                            try:
                                want = sorted(raw.execute(query.format(t=p)).rows)
                            except tique.DataError:
                                continue
                            cur.execute(query.format(t=t))
                            got = sorted(cur.fetchall())
                            if got != want:
                                wrong.append((sql, where, got, want))
        assert not wrong, wrong[:10]
