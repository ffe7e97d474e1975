"""Analytical snapshots whose shape depends on the statement (no LIMIT barrier for a lone table, semi-joins pushed
into the Storage scan): tique's answers must equal MonetDB's on plain twins holding the same rows, while the
tables hold every kind of version - Storage rows, committed Cache versions (updated, deleted, reinserted and new
keys, keys whose newest version is a tombstone), a commit after the reader's snapshot (invisible to it) and the
reader's own uncommitted writes."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest

from tests.twins import Reader, World, twin_reader

# s: a composite key (w, i) as TPC-C's stock; f: a filter table as item; o: rows to join as order_line
DDL = {
    "s": "CREATE TABLE {t} (w INT, i INT, q INT, PRIMARY KEY (w, i))",
    "f": "CREATE TABLE {t} (id INT PRIMARY KEY, d VARCHAR(10))",
    "o": "CREATE TABLE {t} (k INT PRIMARY KEY, i INT, amt INT)",
}
STABLE = {
    "s": [(w, i, (w * i) % 7) for w in (1, 2, 3) for i in range(1, 21)],
    "f": [(i, "co" if i % 3 == 0 else "zz") for i in range(1, 21)],
    "o": [(k, k % 20 + 1, k) for k in range(1, 41)],
}
COMMITTED = [
    "UPDATE {s} SET q = q + 3 WHERE w = 1 AND i IN (3, 6, 7)",
    "DELETE FROM {s} WHERE w = 2 AND i = 6",  # a Storage row whose newest version is a tombstone
    "INSERT INTO {s} VALUES (4, 3, 5), (4, 6, 2), (1, 21, 4)",  # new keys (i = 21: a new f row's)
    "DELETE FROM {s} WHERE w = 4 AND i = 6",  # a key only in Cache, a tombstone newest
    "DELETE FROM {s} WHERE w = 3 AND i = 9",
    "INSERT INTO {s} VALUES (3, 9, 6)",  # deleted, then reinserted
    "UPDATE {s} SET q = 1 WHERE w = 1 AND i = 12",
    "UPDATE {s} SET q = q + 1 WHERE w = 1 AND i = 12",  # two Cache versions of a key
    "UPDATE {f} SET d = 'co' WHERE id = 4",  # now matches the filter
    "UPDATE {f} SET d = 'zz' WHERE id = 6",  # no longer matches
    "DELETE FROM {f} WHERE id = 9",
    "INSERT INTO {f} VALUES (21, 'co')",
    "UPDATE {o} SET i = 21 WHERE k = 5",
    "DELETE FROM {o} WHERE k = 6",
]
AFTER_SNAPSHOT = [  # committed by another transaction after the reader's snapshot: the reader must not see them
    "UPDATE {f} SET d = 'co' WHERE id = 1",
    "DELETE FROM {f} WHERE id = 3",
    "UPDATE {s} SET q = 100 WHERE w = 1 AND i = 3",
    "INSERT INTO {s} VALUES (5, 15, 3)",
]
OWN = [  # the reader's own writes, not committed when it reads
    "UPDATE {s} SET q = q + 10 WHERE w = 3",
    "DELETE FROM {s} WHERE w = 1 AND i = 15",
    "INSERT INTO {s} VALUES (5, 12, 1)",
    "UPDATE {f} SET d = 'co' WHERE id = 10",
    "DELETE FROM {f} WHERE id = 12",
    "INSERT INTO {o} VALUES (41, 10, 41)",
]

WORLD = World(DDL, STABLE, COMMITTED, AFTER_SNAPSHOT, OWN)


@pytest.fixture
def reader(embedded_url: str, unique_name: Callable[[str], str]) -> Iterator[Reader]:
    """A tique transaction reading s, f and o in every state above, a raw connection, and the names of the tique
    tables and of their plain twins (which hold what the reader should see)."""
    yield from twin_reader(embedded_url, unique_name("pd"), WORLD)


@pytest.fixture(scope="module")
def shared_reader(embedded_url: str) -> Iterator[Reader]:
    """``reader`` once, for the tests that only read (a read leaves the tables and the transaction as they were);
    the tests that write take their own."""
    yield from twin_reader(embedded_url, f"pds_{os.getpid()}", WORLD)


def compare(reader: Reader, query: str) -> list[tuple[object, ...]]:
    conn, raw, names, twins = reader
    cur = conn.cursor()
    cur.execute(query.format(**names))
    got = sorted(cur.fetchall(), key=repr)
    want = sorted(raw.execute(query.format(**twins)).rows, key=repr)
    assert got == want
    return got


@pytest.mark.parametrize(
    "query",
    [
        "SELECT w, COUNT(*), SUM(q) FROM {s} WHERE q > 1 GROUP BY w",
        "SELECT * FROM {s}",
        "SELECT COUNT(*) FROM {s} WHERE q BETWEEN 2 AND 5",
        "SELECT id, d FROM {f} WHERE d LIKE 'co%'",
    ],
)
def test_a_lone_table_reads_its_snapshot(shared_reader: Reader, query: str) -> None:
    assert compare(shared_reader, query)


SEMI = "SELECT id FROM {f} WHERE d LIKE 'co%'"


@pytest.mark.parametrize(
    "query",
    [
        f"SELECT w, i, q FROM {{s}} WHERE i IN ({SEMI})",
        f"SELECT x.w, x.i, x.q FROM {{s}} AS x WHERE x.i IN ({SEMI}) AND x.q > 1",
        f"SELECT s.w, s.i, o.k FROM {{s}} AS s, {{o}} AS o WHERE s.i IN ({SEMI}) AND o.i = s.i AND o.amt > 5",
        f"SELECT w, i FROM {{s}} WHERE i IN ({SEMI}) AND i NOT IN (SELECT id FROM {{f}} WHERE id > 15)",
        f"SELECT w, i, q FROM {{s}} WHERE q IN ({SEMI})",  # not a key column: Storage rows only, before the anti-join
        f"SELECT o.k, x.w FROM {{o}} AS o LEFT JOIN {{s}} AS x ON x.i = o.i AND x.i IN ({SEMI}) AND x.w < 3",
        # CH's Q20 in small: the semi-join inside an IN subquery of another table
        f"SELECT id, d FROM {{f}} WHERE id IN (SELECT MOD(x.w * x.i, 20) FROM {{s}} AS x, {{o}} AS o "
        f"WHERE x.i IN ({SEMI}) AND o.i = x.i AND amt > 3 GROUP BY x.w, x.i, x.q HAVING 2 * x.q > SUM(amt) / 10)",
    ],
)
def test_semi_join_pushed_into_the_snapshot(shared_reader: Reader, query: str) -> None:
    assert compare(shared_reader, query)


@pytest.mark.parametrize(
    "query",
    [
        "SELECT w, i FROM {s} WHERE i IN (SELECT id FROM {f} WHERE d = 'none')",
        "SELECT w, i FROM {s} WHERE i NOT IN (SELECT id FROM {f} WHERE d = 'none')",
        "SELECT w, i FROM {s} WHERE i IN (SELECT id FROM {f} WHERE d = 'none') OR q > 5",
    ],
)
def test_semi_join_over_an_empty_subquery(shared_reader: Reader, query: str) -> None:
    # MonetDB 11.41 answers IN over an empty subquery holding a NOT EXISTS wrongly (README Engine facts)
    compare(shared_reader, query)


def test_correlated_subquery_stays_in_the_query(shared_reader: Reader) -> None:
    # y.q = x.q names the outer row: pushed into the snapshot it would name a version instead
    query = "SELECT x.w, x.i FROM {s} AS x WHERE x.i IN (SELECT y.i FROM {s} AS y WHERE y.w = 1 AND y.q = x.q)"
    assert compare(shared_reader, query)


@pytest.mark.parametrize(
    "write",
    [f"UPDATE {{s}} SET q = q + 1 WHERE i IN ({SEMI})", f"DELETE FROM {{s}} WHERE i IN ({SEMI}) AND q > 2"],
)
def test_write_by_a_semi_join(reader: Reader, write: str) -> None:
    conn, raw, names, twins = reader
    conn.cursor().execute(write.format(**names))
    raw.execute(write.format(**twins))
    assert compare(reader, "SELECT * FROM {s}")


def test_semi_join_with_a_parameter(reader: Reader) -> None:
    # the copy in the Storage scan holds the parameter again; run twice, as a prepared statement runs again
    conn, raw, names, twins = reader
    query = "SELECT w, i FROM {s} WHERE i IN (SELECT id FROM {f} WHERE d LIKE %s) AND q > %s"
    cur = conn.cursor()
    for pattern, floor in (("co%", 1), ("z%", 2)):
        cur.execute(query.format(**names), (pattern, floor))
        got = sorted(cur.fetchall())
        want = sorted(raw.execute(query.format(**twins) % (f"'{pattern}'", floor)).rows)
        assert got == want and got
