"""A write to a plain table (one tique does not manage) that reads tique tables reads the transaction's snapshot,
with its own writes: it was sent as written, so it read MonetDB's views of those tables (the latest committed
state), missing the transaction's own writes and seeing commits made after its snapshot."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

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
