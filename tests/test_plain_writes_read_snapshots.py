"""A write to a plain table (one tique does not manage) that reads tique tables reads the transaction's snapshot,
with its own writes: it was sent as written, so it read MonetDB's views of those tables (the latest committed
state), missing the transaction's own writes and seeing commits made after its snapshot."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import tique
from tique.database import Database


def test_writes_to_a_plain_table_read_the_transactions_snapshot(
    url: str, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    t, pl = unique_name("snap"), unique_name("plain")
    conn, other = connect(), connect()
    raw = Database.get(url).connect_raw()
    try:
        cur = conn.cursor()
        cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT)")
        cur.execute(f"INSERT INTO {t} VALUES (1, 1), (4, 4)")
        conn.commit()
        raw.execute(f"CREATE TABLE {pl} (k INT, v INT) -- tique: plain")
        raw.execute(f"INSERT INTO {pl} VALUES (1, 0), (2, 0), (3, 0), (4, 0)")
        cur.execute(f"SELECT COUNT(*) FROM {t}")  # the snapshot starts here
        assert cur.fetchall() == [(2,)]
        oc = other.cursor()
        oc.execute(f"INSERT INTO {t} VALUES (3, 3)")  # committed after the snapshot: not read
        oc.execute(f"DELETE FROM {t} WHERE k = 4")
        other.commit()
        cur.execute(f"INSERT INTO {t} VALUES (2, 2)")  # its own writes, still in the client: read
        cur.execute(f"UPDATE {t} SET v = 100 WHERE k = 1")
        # over MAPI the embedded kernel's listener sends no update count: -1 (unknown, as PEP 249 allows), never
        # the count of an earlier statement, which pymonetdb's cursor used to keep
        counted = url.startswith("monetdbe:")
        cur.execute(f"UPDATE {pl} SET v = (SELECT MAX(v) FROM {t}) WHERE k IN (SELECT k FROM {t})")
        assert cur.rowcount == (3 if counted else -1)  # keys 1, 2, 4
        cur.execute(f"DELETE FROM {pl} WHERE k NOT IN (SELECT k FROM {t})")
        assert cur.rowcount == (1 if counted else -1)  # key 3
        cur.execute(f"INSERT INTO {pl} SELECT k + 10, v FROM {t}")
        assert cur.rowcount == (3 if counted else -1)
        cur.execute(f"UPDATE {pl} SET v = s.v + 1 FROM {t} AS s WHERE s.k + 10 = {pl}.k")
        assert cur.rowcount == (3 if counted else -1)
        conn.commit()
        got = sorted(tuple(r) for r in raw.execute(f"SELECT k, v FROM {pl}").rows)
        assert got == [(1, 100), (2, 100), (4, 100), (11, 101), (12, 3), (14, 5)]
    finally:
        raw.close()


def test_copy_into_a_plain_table_loads_as_monetdb_does(
    url: str, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str], tmp_path: Path
) -> None:
    """COPY INTO a plain table went through sqlglot's PostgreSQL COPY and failed ("expecting INTO"): it is sent
    as written."""
    pl = unique_name("copied")
    source = tmp_path / "rows.csv"
    source.write_text("1,2\n3,4\n5,6\n")
    conn = connect()
    raw = Database.get(url).connect_raw()
    try:
        raw.execute(f"CREATE TABLE {pl} (k INT, v INT) -- tique: plain")
        cur = conn.cursor()
        cur.execute(f"COPY INTO {pl} FROM '{source}' USING DELIMITERS ','")
        cur.execute(f"COPY 2 RECORDS INTO {pl} FROM '{source}' USING DELIMITERS ','")
        conn.commit()
        got = sorted(tuple(r) for r in raw.execute(f"SELECT k, v FROM {pl}").rows)
        assert got == sorted([(1, 2), (3, 4), (5, 6), (1, 2), (3, 4)])
    finally:
        raw.close()


def test_create_plain_table_as_select_reads_the_snapshot(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    """CREATE TABLE p AS SELECT ... -- tique: plain was refused ("not supported by tique yet"; found by a
    differential review): it makes MonetDB's own table, its rows read as the transaction reads them, all or none."""
    t, pl, failed, empty = (unique_name(p) for p in ("src", "ctas", "ctasf", "ctase"))
    conn, other = connect(), connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v VARCHAR(5))")
    cur.execute(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    conn.commit()
    cur.execute(f"SELECT COUNT(*) FROM {t}")  # the snapshot starts here
    other.cursor().execute(f"INSERT INTO {t} VALUES (5, 'late')")
    other.commit()
    cur.execute(f"INSERT INTO {t} VALUES (3, 'own')")
    cur.execute(f"CREATE TABLE {pl} AS SELECT k, v FROM {t} -- tique: plain")
    conn.rollback()  # the table and its rows stay: DDL and plain writes take effect at once
    assert conn.db.catalog.get("sys", pl) is not None and conn.db.catalog.get("sys", pl).kind == "plain"
    assert other.execute(f"SELECT k, v FROM {pl} ORDER BY k").fetchall() == [(1, "a"), (2, "b"), (3, "own")]
    with pytest.raises(tique.DatabaseError, match="division by zero"):
        cur.execute(f"CREATE TABLE {failed} AS SELECT k / (k - 1) AS x FROM {t} -- tique: plain")
    conn.rollback()
    assert conn.db.catalog.get("sys", failed) is None
    assert conn.execute(f"SELECT COUNT(*) FROM sys.tables WHERE name = '{failed}'").fetchall() == [(0,)]
    cur.execute(f"CREATE TABLE {empty} AS SELECT k FROM {t} WITH NO DATA -- tique: plain")
    assert conn.execute(f"SELECT COUNT(*) FROM {empty}").fetchall() == [(0,)]


def test_create_table_as_names_its_columns_as_listed(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    """CREATE TABLE x (a, b) AS SELECT ... ignored the list, plain or transactional (found by a review)."""
    t, pl, tx = unique_name("src"), unique_name("ctasp"), unique_name("ctast")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v VARCHAR(5))")
    cur.execute(f"INSERT INTO {t} VALUES (1, 'a')")
    cur.execute(f"CREATE TABLE {pl} (x, y) AS SELECT k, v FROM {t} -- tique: plain")
    cur.execute(f"CREATE TABLE {tx} (x, y) AS SELECT k, v FROM {t}")
    for name in (pl, tx):
        assert conn.execute(f"SELECT x, y FROM {name}").fetchall() == [(1, "a")]


def test_a_plain_tables_generated_column_is_generated_by_monetdb(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    """A plain table's SERIAL or AUTO_INCREMENT column was created as a bare NOT NULL column, so an INSERT that left
    it out failed (found by a review)."""
    conn = connect()
    for spec in ("s SERIAL", "s INT AUTO_INCREMENT PRIMARY KEY", "s BIGINT GENERATED ALWAYS AS IDENTITY"):
        name = unique_name("gen")
        conn.cursor().execute(f"CREATE TABLE {name} ({spec}, v INT) -- tique: plain")
        conn.cursor().execute(f"INSERT INTO {name} (v) VALUES (10), (20)")
        assert conn.execute(f"SELECT s, v FROM {name} ORDER BY v").fetchall() == [(1, 10), (2, 20)]
