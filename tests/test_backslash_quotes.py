"""A string literal with a backslash-escaped quote (``'It\\'s'``, as pymonetdb's own quoting writes a value) is one
literal to MonetDB; tique's parser (PostgreSQL's reader) ended it at the escaped quote and refused the statement,
on reads and writes. Raw strings (R'...', no escapes) were refused too. Each statement runs on a tique table and
on a plain twin: the rows and answers must be equal."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from pymonetdb.sql.monetize import convert

import tique
from tique.database import Database
from tique.engine.base import RawConnection

DDL = "CREATE TABLE {t} (k INT PRIMARY KEY, s VARCHAR(20), d VARCHAR(20) DEFAULT 'd\\'s')"

# statements in the application's text; {t} is the table
WRITES = [
    "INSERT INTO {t} (k, s) VALUES (1, " + convert("It's") + ")",
    r"INSERT INTO {t} (k, s) VALUES (2, 'a\\'), (3, 'b\'c''d')",
    r"INSERT INTO {t} (k, s) VALUES (4, E'e\'s'), (5, R'raw\'), (6, r'r\\w\n')",
    "INSERT INTO {t} (k, s) VALUES (7, 'x') -- it\\'s a comment",
    r"INSERT INTO {t} (k, s) VALUES (8, 'two' ' parts\' '), (9, '\'')",
    r"UPDATE {t} SET s = s || '\'' WHERE s = 'It\'s' OR s = R'raw\'",
    r"UPDATE {t} SET d = 'q\'\\' WHERE k IN (2, 3)",
    r"DELETE FROM {t} WHERE s = 'b\'c''d'",
]
READS = [
    r"SELECT k FROM {t} WHERE s = 'It\'s'''",
    r"SELECT k, s || '\'' FROM {t} WHERE s LIKE '%\'%'",
    r"SELECT k FROM {t} WHERE s = R'raw\'''",
    r"SELECT count(*) FROM {t} WHERE d <> 'd\'s' AND s <> E'\''",
]


@pytest.fixture
def twins(
    embedded_url: str, unique_name: Callable[[str], str]
) -> Iterator[tuple[tique.Connection, RawConnection, str, str]]:
    conn = tique.connect(embedded_url)
    raw = Database.get(embedded_url).connect_raw()
    t, p = unique_name("bsq_t"), unique_name("bsq_p")
    conn.cursor().execute(DDL.format(t=t))
    conn.commit()
    raw.execute(DDL.format(t=p) + " -- tique: plain")
    yield conn, raw, t, p
    conn.rollback()
    conn.close()
    raw.close()


def test_backslash_escaped_quotes_read_as_monetdb_reads_them(
    twins: tuple[tique.Connection, RawConnection, str, str],
) -> None:
    conn, raw, t, p = twins
    cur = conn.cursor()
    for statement in WRITES:
        raw.execute(statement.format(t=p))
        cur.execute(statement.format(t=t))
        cur.execute(f"SELECT * FROM {t} ORDER BY k")
        assert cur.fetchall() == [tuple(r) for r in raw.execute(f"SELECT * FROM {p} ORDER BY k").rows], statement
    for _ in ("own writes", "committed"):
        for query in READS:
            cur.execute(query.format(t=t))
            want = sorted(tuple(r) for r in raw.execute(query.format(t=p)).rows)
            assert want and sorted(cur.fetchall()) == want, query
        conn.commit()
    cur.execute(f"SELECT s FROM {t} WHERE k = 1")
    assert cur.fetchall() == [("It's'",)]


def test_parameters_quoted_with_backslashes(twins: tuple[tique.Connection, RawConnection, str, str]) -> None:
    """pymonetdb quotes a parameter's quote as \\' : such values, in reads and writes, with placeholders after
    the literal."""
    conn, raw, t, p = twins
    cur = conn.cursor()
    values = ["It's", "a\\", "\\'", "x'%s'y", "''"]
    for k, value in enumerate(values):
        cur.execute(f"INSERT INTO {t} (k, s) VALUES (%s, %s)", (k, value))
        raw.execute(f"INSERT INTO {p} (k, s) VALUES ({k}, {convert(value)})")
    conn.commit()
    for value in values:
        cur.execute(f"SELECT k FROM {t} WHERE s = %s AND d = 'd\\'s' AND k >= %s", (value, 0))
        want = raw.execute(f"SELECT k FROM {p} WHERE s = {convert(value)}").rows
        assert cur.fetchall() == [tuple(r) for r in want] and len(want) == 1
    cur.execute(f"SELECT k, s FROM {t} WHERE s = R'a\\' OR s = %(v)s ORDER BY k", {"v": "It's"})
    assert cur.fetchall() == [(0, "It's"), (1, "a\\")]
    conn.commit()
