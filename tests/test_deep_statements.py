"""Deeply nested statements (long AND chains, nested parentheses, CASE and subqueries) answer as plain MonetDB
answers them, and one nested too deeply for tique gets a clear error that loses nothing. sqlglot recursed about 19
Python frames per level: 50 nested parentheses raised a bare RecursionError (no DB-API error) where MonetDB
answered, and so did an AND chain of 1,000 terms (tique's own recursion over it)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator

import pytest

import tique
from tique.database import Database
from tique.engine.base import RawConnection


def _and_chain(n: int) -> str:
    return " AND ".join(f"v <> {-i}" for i in range(1, n))


def _parens(n: int, inner: str) -> str:
    return "(" * n + inner + ")" * n


def _cases(n: int) -> str:
    return "CASE WHEN v = 1 THEN 1 ELSE " * n + "v" + " END" * n


# each a query over {t}: what tique answers must be what plain MonetDB answers over the twin
READS = {
    "and_chain_2000": "SELECT k, v FROM {t} WHERE " + _and_chain(2000),  # no ORDER BY: a key read's shape
    "and_chain_in_parens": "SELECT k FROM {t} WHERE k = 2 AND (" + _and_chain(1500) + ")",
    "or_chain_300": "SELECT k FROM {t} WHERE " + " OR ".join(f"v = {i}" for i in range(300)) + " ORDER BY k",
    "parens_120": "SELECT k, " + _parens(120, "v + 1") + " FROM {t} ORDER BY k",
    "parens_in_where_120": "SELECT k FROM {t} WHERE " + _parens(120, "v > 15") + " ORDER BY k",
    "case_200": "SELECT k, " + _cases(200) + " FROM {t} ORDER BY k",
    "subqueries_60": "SELECT k, v FROM " + "(SELECT k, v FROM " * 60 + "{t}" + ") AS s" * 60 + " ORDER BY k",
    "point_read_parens_80": "SELECT v FROM {t} WHERE " + _parens(80, "k = 2"),
}


@pytest.fixture
def tables(
    url: str, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> Iterator[tuple[tique.Connection, RawConnection, str, str]]:
    t, twin = unique_name("deep"), unique_name("deep_twin")
    conn, raw = connect(on_statement_error="continue"), Database.get(url).connect_raw()
    conn.cursor().execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT)")
    conn.commit()
    raw.execute(f"CREATE TABLE {twin} (k INT PRIMARY KEY, v INT) -- tique: plain")
    for sql in ("INSERT INTO {t} VALUES (1, 10), (2, 20), (3, 30)", "UPDATE {t} SET v = v + 1 WHERE k = 3"):
        conn.cursor().execute(sql.format(t=t))
        raw.execute(sql.format(t=twin))
    conn.commit()
    try:
        yield conn, raw, t, twin
    finally:
        raw.close()


@pytest.mark.parametrize("shape", list(READS))
def test_deep_reads_answer_as_plain_monetdb(
    tables: tuple[tique.Connection, RawConnection, str, str], shape: str
) -> None:
    conn, raw, t, twin = tables
    cur = conn.cursor()
    cur.execute(READS[shape].format(t=t))
    got = sorted(tuple(r) for r in cur.fetchall())
    want = sorted(tuple(r) for r in raw.execute(READS[shape].format(t=twin)).rows)
    assert got == want
    assert sys.getrecursionlimit() < 10_000  # raised only while a deep statement is planned


def test_deep_writes_commit_as_plain_monetdb(tables: tuple[tique.Connection, RawConnection, str, str]) -> None:
    conn, raw, t, twin = tables
    writes = [
        "UPDATE {t} SET v = " + _parens(150, "v * 2") + " WHERE " + _and_chain(1200),
        "UPDATE {t} SET v = " + _cases(120) + " WHERE " + _parens(100, "k = 2"),
        "INSERT INTO {t} VALUES (4, " + _parens(150, "7") + ")",
        "DELETE FROM {t} WHERE " + _parens(100, "k = 1") + " AND " + _and_chain(800),
    ]
    cur = conn.cursor()
    for sql in writes:
        cur.execute(sql.format(t=t))
        raw.execute(sql.format(t=twin))
    conn.commit()
    cur.execute(f"SELECT k, v FROM {t} ORDER BY k")
    want = raw.execute(f"SELECT k, v FROM {twin} ORDER BY k").rows
    assert [tuple(r) for r in cur.fetchall()] == [tuple(r) for r in want]


def test_a_statement_too_deep_for_tique_is_a_clear_error_that_loses_nothing(
    tables: tuple[tique.Connection, RawConnection, str, str],
) -> None:
    conn, _, t, _ = tables
    cur = conn.cursor()
    cur.execute(f"UPDATE {t} SET v = 99 WHERE k = 1")
    limit = sys.getrecursionlimit()
    with pytest.raises(tique.ProgrammingError, match=r"nested too deeply.*split it"):
        cur.execute(f"SELECT k FROM {t} WHERE " + _parens(8000, "v > 1"))
    assert sys.getrecursionlimit() == limit
    cur.execute(f"SELECT v FROM {t} WHERE k = 1")  # the transaction goes on, with its write
    assert cur.fetchall() == [(99,)]
    conn.commit()
    cur.execute(f"SELECT k, v FROM {t} ORDER BY k")
    assert cur.fetchall() == [(1, 99), (2, 20), (3, 31)]
