"""Semi-joins pushed into a snapshot's Storage scan, lone-table snapshots without their LIMIT, and results decoded
by column answer as plain MonetDB does: the same statements on tique tables and on plain twins holding the rows
the reader should see, while the tique tables hold every kind of version (Storage rows, committed Cache versions
updated, deleted, reinserted and new, tombstones, a commit after the reader's snapshot, the reader's own
uncommitted writes), on both adapters."""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable, Iterator
from decimal import Decimal

import pytest

import tique
from tests.twins import Reader, World, twin_reader
from tique.database import Database
from tique.engine.base import RawConnection

DDL = {
    "s": "CREATE TABLE {t} (w INT, i INT, q INT, PRIMARY KEY (w, i))",
    "f": "CREATE TABLE {t} (id INT PRIMARY KEY, d VARCHAR(10), n INT)",
    "o": "CREATE TABLE {t} (k INT PRIMARY KEY, i INT, amt INT)",
    "h": "CREATE TABLE {t} (i INT, v INT)",  # no key: a hidden row id
}
STABLE = {
    "s": [(w, i, None if (w + i) % 5 == 0 else (w * i) % 7) for w in (1, 2, 3) for i in range(1, 21)],
    "f": [(i, "co" if i % 3 == 0 else "zz", None if i % 4 == 0 else i % 6) for i in range(1, 21)],
    "o": [(k, None if k % 9 == 0 else k % 20 + 1, k) for k in range(1, 41)],
    "h": [(i % 7, i) for i in range(1, 15)],
}
COMMITTED = [
    "UPDATE {s} SET q = q + 3 WHERE w = 1 AND i IN (3, 6, 7)",
    "DELETE FROM {s} WHERE w = 2 AND i = 6",
    "INSERT INTO {s} VALUES (4, 3, 5), (4, 6, 2), (1, 21, 4), (4, 7, NULL)",
    "DELETE FROM {s} WHERE w = 4 AND i = 6",
    "DELETE FROM {s} WHERE w = 3 AND i = 9",
    "INSERT INTO {s} VALUES (3, 9, 6)",
    "UPDATE {s} SET q = 1 WHERE w = 1 AND i = 12",
    "UPDATE {s} SET q = q + 1 WHERE w = 1 AND i = 12",
    "UPDATE {s} SET q = NULL WHERE w = 2 AND i = 2",
    "UPDATE {f} SET d = 'co' WHERE id = 4",
    "UPDATE {f} SET d = 'zz' WHERE id = 6",
    "DELETE FROM {f} WHERE id = 9",
    "INSERT INTO {f} VALUES (21, 'co', NULL)",
    "UPDATE {f} SET n = NULL WHERE id = 2",
    "UPDATE {f} SET n = 3 WHERE id = 8",
    "UPDATE {o} SET i = 21 WHERE k = 5",
    "UPDATE {o} SET i = NULL WHERE k = 7",
    "DELETE FROM {o} WHERE k = 6",
    "UPDATE {h} SET v = v + 100 WHERE i = 3",
    "DELETE FROM {h} WHERE i = 4",
    "INSERT INTO {h} VALUES (4, 44), (9, 99)",
]
AFTER_SNAPSHOT = [
    "UPDATE {f} SET d = 'co' WHERE id = 1",
    "DELETE FROM {f} WHERE id = 3",
    "UPDATE {f} SET n = 1 WHERE id = 4",
    "UPDATE {s} SET q = 100 WHERE w = 1 AND i = 3",
    "INSERT INTO {s} VALUES (5, 15, 3)",
    "DELETE FROM {s} WHERE w = 2 AND i = 1",
    "UPDATE {h} SET v = 0",
    "DELETE FROM {o} WHERE k < 4",
]
OWN = [
    "UPDATE {s} SET q = q + 10 WHERE w = 3",
    "DELETE FROM {s} WHERE w = 1 AND i = 15",
    "INSERT INTO {s} VALUES (5, 12, 1), (5, 13, NULL)",
    "UPDATE {f} SET d = 'co' WHERE id = 10",
    "DELETE FROM {f} WHERE id = 12",
    "INSERT INTO {f} VALUES (22, 'co', 2)",
    "INSERT INTO {o} VALUES (41, 10, 41)",
    "UPDATE {h} SET v = -v WHERE i = 5",
]

WORLD = World(
    DDL,
    STABLE,
    COMMITTED,
    AFTER_SNAPSHOT,
    OWN,
    views={"v": "CREATE VIEW {v} AS SELECT w, i, q FROM {s} WHERE q > 2"},
    upper_names=True,
)


@pytest.fixture
def reader(url: str, unique_name: Callable[[str], str]) -> Iterator[Reader]:
    """A tique transaction reading s, f, o and h in every state above, a raw connection, and the names of the
    tique tables and of their plain twins."""
    yield from twin_reader(url, unique_name("sja"), WORLD)


@pytest.fixture(scope="module", params=["embedded", "server"])
def shared_reader(request: pytest.FixtureRequest) -> Iterator[Reader]:
    """``reader`` once per adapter, for the tests that only read: a read leaves the tables, the twins and the
    transaction as they were, and building them for each of some 230 queries took three quarters of this file's
    time (about a second each). Tests that write take their own ``reader``."""
    adapter = request.param
    url = request.getfixturevalue("embedded_url") if adapter == "embedded" else request.getfixturevalue("server").url
    yield from twin_reader(url, f"sjr_{os.getpid()}_{adapter}", WORLD)


def compare(reader: Reader, query: str, ordered: bool = False) -> list[tuple[object, ...]]:
    conn, raw, names, twins = reader
    cur = conn.cursor()
    cur.execute(query.format(**names))
    got = cur.fetchall()
    want = raw.execute(query.format(**twins)).rows
    if not ordered:
        got, want = sorted(got, key=repr), sorted(want, key=repr)
    assert [tuple(r) for r in got] == [tuple(r) for r in want]
    return got


SEMI = "SELECT id FROM {f} WHERE d LIKE 'co%'"

ATTACKS = [
    # self-semi-joins
    "SELECT w, i, q FROM {s} WHERE i IN (SELECT i FROM {s} WHERE q > 4)",
    "SELECT w, i, q FROM {s} AS x WHERE x.q IN (SELECT q FROM {s} WHERE w = 1)",
    "SELECT w, i, q FROM {s} WHERE q IN (SELECT i FROM {s} AS {s} WHERE w = 3)",
    "SELECT w, i FROM {s} WHERE i IN (SELECT i FROM {s} WHERE w = 1 AND i = 3)",
    "SELECT w, i FROM {s} WHERE w IN (SELECT w FROM {s} WHERE q IS NULL)",
    "SELECT i, v FROM {h} WHERE v IN (SELECT v FROM {h} WHERE i > 2)",
    "SELECT i, v FROM {h} WHERE i IN (SELECT i FROM {s} WHERE q = 5)",
    # NULLs in the subquery or in the column
    "SELECT w, i, q FROM {s} WHERE q IN (SELECT n FROM {f})",
    "SELECT w, i, q FROM {s} WHERE q IN (SELECT n FROM {f} WHERE n IS NULL)",
    "SELECT w, i, q FROM {s} WHERE q NOT IN (SELECT n FROM {f} WHERE n IS NOT NULL)",
    "SELECT w, i, q FROM {s} WHERE q NOT IN (SELECT n FROM {f})",
    "SELECT k, i FROM {o} WHERE i IN (SELECT n FROM {f})",
    # IN not a top-level conjunct
    f"SELECT w, i FROM {{s}} WHERE i IN ({SEMI}) OR q = 1",
    f"SELECT w, i FROM {{s}} WHERE NOT (i IN ({SEMI}))",
    f"SELECT w, i, CASE WHEN i IN ({SEMI}) THEN 1 ELSE 0 END FROM {{s}}",
    "SELECT w, COUNT(*) FROM {s} GROUP BY w HAVING w IN (SELECT n FROM {f})",
    f"SELECT w, i, i IN ({SEMI}) FROM {{s}}",
    f"SELECT w, i FROM {{s}} WHERE (i IN ({SEMI})) = FALSE",
    f"SELECT w, i FROM {{s}} WHERE i IN ({SEMI}) AND (q > 3 OR q IS NULL)",
    # joins
    f"SELECT x.w, x.i, o.k FROM {{s}} AS x LEFT JOIN {{o}} AS o ON o.i = x.i AND x.i IN ({SEMI})",
    f"SELECT x.w, x.i, o.k FROM {{s}} AS x LEFT JOIN {{o}} AS o ON o.i = x.i WHERE x.i IN ({SEMI})",
    f"SELECT x.w, x.i, o.k FROM {{s}} AS x LEFT JOIN {{o}} AS o ON o.i = x.i WHERE o.i IN ({SEMI})",
    f"SELECT x.w, x.i, o.k FROM {{s}} AS x RIGHT JOIN {{o}} AS o ON o.i = x.i AND x.i IN ({SEMI})",
    f"SELECT x.w, x.i, o.k FROM {{s}} AS x RIGHT JOIN {{o}} AS o ON o.i = x.i WHERE x.i IN ({SEMI})",
    f"SELECT x.w, x.i, o.k FROM {{s}} AS x RIGHT JOIN {{o}} AS o ON o.i = x.i AND o.i IN ({SEMI})",
    f"SELECT x.w, x.i, o.k FROM {{s}} AS x FULL JOIN {{o}} AS o ON o.i = x.i AND x.i IN ({SEMI})",
    f"SELECT x.w, x.i, o.k FROM {{s}} AS x FULL JOIN {{o}} AS o ON o.i = x.i WHERE x.i IN ({SEMI})",
    f"SELECT x.w, x.i, o.k FROM {{o}} AS o LEFT JOIN {{s}} AS x ON o.i = x.i AND o.i IN ({SEMI})",
    f"SELECT x.w, x.i, o.k FROM {{o}} AS o JOIN {{s}} AS x ON o.i = x.i AND x.i IN ({SEMI}) WHERE o.amt > 3",
    f"SELECT x.w, x.i, o.k FROM {{o}} AS o, {{s}} AS x WHERE o.i = x.i AND x.i IN ({SEMI}) AND o.k IN ({SEMI})",
    f"SELECT x.w, y.w FROM {{s}} AS x JOIN {{s}} AS y ON x.i = y.i WHERE x.i IN ({SEMI}) AND y.w = 2",
    # names: an outer alias named as an inner table, the same table inside and out, case
    "SELECT {f}.w, {f}.i FROM {s} AS {f} WHERE {f}.i IN (SELECT {f}.id FROM {f} WHERE {f}.d = 'co')",
    "SELECT x.w, x.i FROM {s} AS x WHERE x.i IN (SELECT x.id FROM {f} AS x WHERE x.d = 'co')",
    "SELECT x.w, x.i FROM {s} AS x WHERE x.i IN (SELECT id FROM {f} WHERE n = x.q)",
    "SELECT x.w, x.i FROM {s} AS x WHERE x.i IN (SELECT id FROM {f} WHERE n = q)",
    'SELECT "X".w, "X".i, x.w FROM {s} AS "X", {s} AS x WHERE "X".i = x.i AND x.w = 1 AND x.i IN (' + SEMI + ")",
    'SELECT "X".w, "X".i, x.w FROM {s} AS "X", {s} AS x WHERE "X".i = x.i AND "X".w = 1 AND x.i IN (' + SEMI + ")",
    'SELECT "X".w, "X".i, x.w FROM {s} AS "X", {s} AS x WHERE "X".i = x.i AND "X".q > 2 AND x.w = 2',
    # X.w is x's column, not "X"'s: as a key predicate of "X" it made a point read of the wrong table
    'SELECT "X".w, "X".i, x.w FROM {s} AS "X", {s} AS x WHERE "X".i = x.i AND X.w = 1',
    'SELECT "X".w, "X".i, x.w FROM {s} AS "X", {s} AS x WHERE "X".i = x.i AND X.w = 1 AND X.i = 3',
    'SELECT "X".w, x.w FROM {s} AS "X" JOIN {s} AS x ON "X".i = x.i AND X.q > 2 WHERE "X".w = 3',
    # x.d is the outer row's: "X" is another name
    'SELECT x.id FROM {f} AS x WHERE x.id IN (SELECT "X".i FROM {s} AS "X" WHERE "X".q = x.n)',
    'SELECT x.id FROM {f} AS x WHERE x.id IN (SELECT "X".i FROM {s} AS "X" WHERE X.n = "X".q)',
    # subqueries with GROUP BY / HAVING / DISTINCT / UNION / aggregates
    "SELECT w, i FROM {s} WHERE i IN (SELECT DISTINCT id FROM {f} WHERE n > 1)",
    "SELECT w, i FROM {s} WHERE i IN (SELECT MAX(id) FROM {f} GROUP BY d)",
    "SELECT w, i FROM {s} WHERE i IN (SELECT n FROM {f} GROUP BY n HAVING COUNT(*) > 2)",
    "SELECT w, i FROM {s} WHERE i IN (SELECT id FROM {f} WHERE d = 'co' UNION SELECT k FROM {o} WHERE amt > 38)",
    "SELECT w, i FROM {s} WHERE i IN (SELECT COUNT(*) FROM {f})",
    "SELECT w, i FROM {s} WHERE i IN (SELECT g.id FROM {f} AS g JOIN {o} AS o ON o.i = g.id WHERE o.amt > 20)",
    "SELECT w, i FROM {s} WHERE i IN (SELECT g.id FROM {f} AS g LEFT JOIN {o} AS o ON o.i = g.id WHERE o.k IS NULL)",
    "SELECT w, i FROM {s} WHERE i IN (SELECT id + 0 FROM {f} WHERE d = 'co')",
    "SELECT w, i FROM {s} WHERE i IN (SELECT id FROM {f} WHERE d = 'co') AND i IN (SELECT i FROM {o})",
    "SELECT w, i FROM {s} WHERE i IN (SELECT i FROM {h})",
    "SELECT w, i FROM {s} WHERE i IN (SELECT id FROM {f} WHERE id IN (SELECT i FROM {o} WHERE amt > 30))",
    # an empty subquery
    "SELECT w, i FROM {s} WHERE i IN (SELECT id FROM {f} WHERE id > 1000)",
    "SELECT w, i FROM {s} WHERE i IN (SELECT i FROM {s} WHERE w > 1000)",
    "SELECT COUNT(*) FROM {s} WHERE i IN (SELECT id FROM {f} WHERE id > 1000)",
    # the outer table inside a subquery, a CTE, a derived table
    f"SELECT id FROM {{f}} WHERE id IN (SELECT i FROM {{s}} WHERE i IN ({SEMI}) AND q > 3)",
    f"SELECT id, (SELECT COUNT(*) FROM {{s}} WHERE {{s}}.i = {{f}}.id AND {{s}}.i IN ({SEMI})) FROM {{f}}",
    f"WITH c AS (SELECT w, i FROM {{s}} WHERE i IN ({SEMI})) SELECT w, COUNT(*) FROM c GROUP BY w",
    f"SELECT w, COUNT(*) FROM (SELECT w, i FROM {{s}} WHERE i IN ({SEMI})) AS z GROUP BY w",
    f"SELECT w, i FROM {{s}} WHERE i IN ({SEMI}) UNION ALL SELECT k, i FROM {{o}} WHERE i IN ({SEMI})",
    f"SELECT w, i FROM {{s}} WHERE i IN ({SEMI}) EXCEPT SELECT w, i FROM {{s}} WHERE q > 3",
    # lone tables
    "SELECT w, COUNT(*), SUM(q), MIN(q), MAX(i) FROM {s} GROUP BY w",
    "SELECT DISTINCT q FROM {s}",
    "SELECT COUNT(DISTINCT q) FROM {s}",
    "SELECT w, i, ROW_NUMBER() OVER (PARTITION BY w ORDER BY i) FROM {s}",
    "SELECT w, i, SUM(q) OVER (PARTITION BY w ORDER BY i ROWS UNBOUNDED PRECEDING) FROM {s}",
    "SELECT w, i, RANK() OVER (ORDER BY q) FROM {s}",
    "SELECT i, v FROM {h}",
    "SELECT i, SUM(v) FROM {h} GROUP BY i",
    "SELECT * FROM {s} WHERE i IN (SELECT 3 UNION SELECT 6)",
    "SELECT * FROM {s} WHERE i NOT IN (SELECT 3 WHERE 1 = 0)",
    "SELECT w, i, EXISTS (SELECT 1 WHERE 1 = 0) FROM {s}",
    "SELECT w, i FROM {s} WHERE NOT EXISTS (SELECT 1 WHERE 1 = 0)",
    "SELECT w, i FROM {s} WHERE i NOT IN (SELECT 1 WHERE FALSE) AND q > 2",
    "SELECT * FROM {s} CROSS JOIN (SELECT 1 AS one) AS z WHERE q > 4",
    "SELECT MAX(q) FROM {s} WHERE w = 3",
    "SELECT w, i FROM {s} WHERE q = (SELECT MAX(q) FROM {s})",
    "SELECT COUNT(*) FROM {s} WHERE q IS NULL",
    # a CTE named as a tique table, in another case: FROM names the CTE (MonetDB folds unquoted names)
    "WITH {F} AS (SELECT 1 AS id, 'q' AS d) SELECT id, d FROM {f}",
    "WITH {f} AS (SELECT 1 AS id, 'q' AS d) SELECT id, d FROM {F}",
    "WITH {F} AS (SELECT 3 AS id) SELECT w, i FROM {s} WHERE i IN (SELECT id FROM {f})",
    "WITH {F} AS (SELECT 3 AS id) SELECT w, i FROM {s} WHERE i IN (SELECT id FROM {f}) AND q > 0",
    "WITH {S} AS (SELECT 1 AS w, 2 AS i, 3 AS q) SELECT w, i, q FROM {s}",
    "WITH {V} AS (SELECT 1 AS w, 2 AS i, 3 AS q) SELECT w, i, q FROM {v}",
    # a parenthesised join: the join hangs off its first table, and went with it when the table became a snapshot
    "SELECT x.w, x.i, g.d FROM ({s} AS x JOIN {f} AS g ON g.id = x.i)",
    "SELECT COUNT(*) FROM ({s} AS x CROSS JOIN {f} AS g) WHERE x.q > 2",
    f"SELECT o.k, x.w FROM {{o}} AS o LEFT JOIN ({{s}} AS x JOIN {{f}} AS g ON g.id = x.i) ON x.i = o.i "
    f"WHERE x.i IN ({SEMI}) OR x.i IS NULL",
    "SELECT o.k, x.w, g.n FROM {o} AS o LEFT JOIN ({s} AS x LEFT JOIN {f} AS g ON g.id = x.i AND g.n > 2) "
    "ON x.i = o.i AND x.q > 1",
    # a view of a tique table inside the subquery (it becomes a subquery: not pushed) and as the outer table
    "SELECT w, i FROM {s} WHERE i IN (SELECT i FROM {v} WHERE w = 1)",
    f"SELECT w, i, q FROM {{v}} WHERE i IN ({SEMI})",
    "SELECT w, i, q FROM {v} WHERE i IN (SELECT i FROM {s} WHERE q IS NULL)",
]


@pytest.mark.parametrize("query", ATTACKS)
def test_attack(shared_reader: Reader, query: str) -> None:
    compare(shared_reader, query)


ORDERED = [
    "SELECT w, i, q FROM {s} ORDER BY w, i LIMIT 5 OFFSET 3",
    "SELECT w, i, q FROM {s} ORDER BY q DESC NULLS LAST, w, i LIMIT 7",
    "SELECT w, i FROM {s} ORDER BY w DESC, i OFFSET 50",
    "SELECT DISTINCT w FROM {s} ORDER BY w",
    f"SELECT w, i FROM {{s}} WHERE i IN ({SEMI}) ORDER BY w, i LIMIT 4 OFFSET 1",
    "SELECT i, v FROM {h} ORDER BY v LIMIT 3",
]


@pytest.mark.parametrize("query", ORDERED)
def test_ordered_attack(shared_reader: Reader, query: str) -> None:
    compare(shared_reader, query, ordered=True)


# ---- writes whose WHERE holds a semi-join ---------------------------------------------------------------------

WRITES = [
    # the subquery reads the table the statement writes
    "UPDATE {s} SET q = q + 1 WHERE i IN (SELECT i FROM {s} WHERE q > 4)",
    "DELETE FROM {s} WHERE i IN (SELECT i FROM {s} WHERE q IS NULL)",
    "UPDATE {s} SET q = 0 WHERE q IN (SELECT i FROM {s} WHERE w = 3)",
    "UPDATE {f} SET n = 7 WHERE id IN (SELECT i FROM {s} WHERE q = 5)",
    "DELETE FROM {f} WHERE id IN (SELECT id FROM {f} WHERE d = 'co') AND n IS NOT NULL",
    "UPDATE {h} SET v = v * 2 WHERE i IN (SELECT i FROM {h} WHERE v > 5)",
    "DELETE FROM {h} WHERE v IN (SELECT q FROM {s})",
    # the inserted rows come from a read with a semi-join (of the written table too)
    "INSERT INTO {s} SELECT w + 10, i, q FROM {s} WHERE i IN (SELECT id FROM {f} WHERE d = 'co')",
    "INSERT INTO {f} SELECT id + 100, d, n FROM {f} WHERE id IN (SELECT i FROM {s} WHERE q > 3)",
    "INSERT INTO {h} SELECT i, v + 1 FROM {h} WHERE i IN (SELECT i FROM {h} WHERE v < 5)",
    "INSERT INTO {o} SELECT k + 100, i, amt FROM {o} WHERE i IN (SELECT id FROM {f} WHERE n IS NULL)",
]


@pytest.mark.parametrize("write", WRITES)
def test_write_then_read(reader: Reader, write: str) -> None:
    """The write sees the snapshot with the transaction's own writes; a second run (not of an INSERT of keys) and
    reads with semi-joins see the write's own rows in their subqueries too."""
    conn, raw, names, twins = reader
    cur = conn.cursor()
    for _ in range(1 if write.startswith("INSERT") and "{h}" not in write[:16] else 2):
        cur.execute(write.format(**names))
        raw.execute(write.format(**twins))
        for table in ("s", "f", "o", "h"):
            compare(reader, f"SELECT * FROM {{{table}}}")
    compare(reader, f"SELECT w, i, q FROM {{s}} WHERE i IN ({SEMI}) AND q IN (SELECT v FROM {{h}})")
    compare(reader, "SELECT w, i FROM {s} WHERE i IN (SELECT i FROM {s} WHERE w > 10)")


def test_parameters_inside_the_subquery(reader: Reader) -> None:
    """A self-semi-join with parameters inside and outside the subquery, run again (prepared) with other values,
    also after a write to the table it reads."""
    conn, raw, names, twins = reader
    query = "SELECT w, i, q FROM {s} WHERE i IN (SELECT i FROM {s} WHERE q > %s AND w = %s) AND w <> %s"
    cur = conn.cursor()
    for round_ in range(3):
        for floor, w, skip in ((1, 1, 2), (3, 3, 1), (0, 5, 0), (4, 1, 1)):
            cur.execute(query.format(**names), (floor, w, skip))
            got = sorted(cur.fetchall())
            want = sorted(raw.execute(query.format(**twins) % (floor, w, skip)).rows)
            assert got == want
        write = f"UPDATE {{s}} SET q = q + 1 WHERE w = {round_ + 1}"
        cur.execute(write.format(**names))
        raw.execute(write.format(**twins))


# ---- at a size where MonetDB's default pipeline splits and parallelises the scans ------------------------------

BIG_STABLE = {
    "s": [(w, i, None if (w * i) % 97 == 0 else (w * i) % 13) for w in (1, 2, 3) for i in range(1, 8001)],
    "f": [(i, "co" if i % 11 == 0 else "zz", None if i % 17 == 0 else i % 29) for i in range(1, 8001)],
    "o": [(k, None if k % 31 == 0 else k % 8000 + 1, k % 50) for k in range(1, 16001)],
    "h": [(i % 101, i % 37) for i in range(1, 5001)],
}
BIG_COMMITTED = [
    "UPDATE {s} SET q = q + 3 WHERE w = 1 AND i % 7 = 0",
    "DELETE FROM {s} WHERE w = 2 AND i % 13 = 0",
    "INSERT INTO {s} SELECT 4, id, n FROM {f} WHERE id % 5 = 0",
    "DELETE FROM {s} WHERE w = 4 AND i % 10 = 0",
    "UPDATE {f} SET d = 'co' WHERE id % 23 = 0",
    "UPDATE {f} SET d = 'zz' WHERE id % 33 = 0",
    "DELETE FROM {f} WHERE id % 101 = 0",
    "INSERT INTO {f} SELECT id + 8000, d, n FROM {f} WHERE id < 300",
    "UPDATE {o} SET i = NULL WHERE k % 41 = 0",
    "DELETE FROM {h} WHERE i = 4",
    "UPDATE {h} SET v = v + 1 WHERE v % 5 = 0",
]
BIG_OWN = [
    "UPDATE {s} SET q = q + 10 WHERE w = 3 AND i % 3 = 0",
    "DELETE FROM {s} WHERE w = 1 AND i % 19 = 0",
    "UPDATE {f} SET d = 'co' WHERE id % 19 = 1",
    "DELETE FROM {f} WHERE id % 43 = 0",
    "INSERT INTO {h} SELECT i + 1000, v FROM {h} WHERE v = 3",
]


@pytest.fixture(scope="module")
def big(embedded_url: str) -> Iterator[Reader]:
    """The four tables at a few thousand rows each, in every state as above (embedded: the same plans run over
    MAPI)."""
    yield from twin_reader(embedded_url, f"sjb_{os.getpid()}", BIG_WORLD)


BIG_WORLD = World(DDL, BIG_STABLE, BIG_COMMITTED, AFTER_SNAPSHOT, BIG_OWN)


BIG = [
    "SELECT w, COUNT(*), SUM(q), MIN(q), MAX(q), COUNT(q) FROM {s} GROUP BY w",
    "SELECT COUNT(*), SUM(q) FROM {s} WHERE q BETWEEN 2 AND 9",
    "SELECT q, COUNT(*) FROM {s} GROUP BY q HAVING COUNT(*) > 100",
    "SELECT COUNT(DISTINCT i) FROM {s}",
    "SELECT w, i, q FROM {s} ORDER BY q DESC NULLS LAST, w, i LIMIT 20 OFFSET 100",
    "SELECT w, MAX(r) FROM (SELECT w, ROW_NUMBER() OVER (PARTITION BY w ORDER BY i) AS r FROM {s}) AS z GROUP BY w",
    "SELECT i, COUNT(*), SUM(v) FROM {h} GROUP BY i",
    "SELECT d, COUNT(*), SUM(n) FROM {f} GROUP BY d",
    f"SELECT w, COUNT(*), SUM(q) FROM {{s}} WHERE i IN ({SEMI}) GROUP BY w",
    f"SELECT w, COUNT(*) FROM {{s}} WHERE i IN ({SEMI}) AND q > 3 GROUP BY w",
    "SELECT w, COUNT(*) FROM {s} WHERE i IN (SELECT i FROM {s} WHERE w = 4) GROUP BY w",
    "SELECT w, COUNT(*) FROM {s} WHERE q IN (SELECT n FROM {f} WHERE d = 'co') GROUP BY w",
    "SELECT COUNT(*), SUM(amt) FROM {o} WHERE i IN (SELECT id FROM {f} WHERE n > 20)",
    "SELECT COUNT(*) FROM {s} AS x, {o} AS o WHERE x.i = o.i AND x.i IN (SELECT id FROM {f} WHERE n < 3) AND x.w = 1",
    "SELECT id, d FROM {f} WHERE id IN (SELECT MOD(x.w * x.i, 8000) FROM {s} AS x, {o} AS o "
    "WHERE x.i IN (SELECT id FROM {f} WHERE d LIKE 'co%') AND o.i = x.i AND amt > 3 "
    "GROUP BY x.w, x.i, x.q HAVING 20 * x.q > SUM(amt))",
    "SELECT COUNT(*) FROM {h} WHERE i IN (SELECT q FROM {s} WHERE w = 3)",
]


@pytest.mark.parametrize("query", BIG)
def test_big(big: Reader, query: str) -> None:
    compare(big, query, ordered="ORDER BY" in query)


# ---- results decoded by column ----------------------------------------------------------------------------------

TYPED = (
    "CREATE TABLE {t} (id INT PRIMARY KEY, ts0 TIMESTAMP(0), ts3 TIMESTAMP(3), ts6 TIMESTAMP, t0 TIME, "
    "t3 TIME(3), t6 TIME(6), d0 DECIMAL(18,0), d2 DECIMAL(10,2), v VARCHAR(8))"
)
D = datetime.datetime
T = datetime.time
TYPED_ROWS = [
    (
        1,
        D(2026, 11, 26, 1, 2, 3),
        D(2026, 11, 26, 1, 2, 3, 123000),
        D(2026, 11, 26, 1, 2, 3, 123456),
        T(1, 2, 3),
        T(1, 2, 3, 456000),
        T(23, 59, 59, 999999),
        Decimal(12345678901234567),
        Decimal("-1.05"),
        "a",
    ),
    (2, None, None, None, None, None, None, None, None, None),
    (
        3,
        D(1, 1, 1),
        D(1, 1, 1, 0, 0, 0, 1000),
        D(1, 1, 1, 0, 0, 0, 1),
        T(0, 0),
        T(0, 0, 0, 1000),
        T(0, 0, 0, 1),
        Decimal(-999999999999999999),
        Decimal("0.00"),
        "",
    ),
    (
        4,
        D(9999, 12, 31, 23, 59, 59),
        D(9999, 12, 31, 23, 59, 59, 999000),
        D(9999, 12, 31, 23, 59, 59, 999999),
        T(23, 59, 59),
        T(23, 59, 59, 999000),
        T(12, 0, 0, 500000),
        Decimal(0),
        Decimal("99999999.99"),
        "z",
    ),
    (
        5,
        D(2000, 2, 29, 12),
        None,
        D(2000, 2, 29, 12, 0, 0, 100000),
        None,
        T(7, 7, 7, 7000),
        None,
        Decimal(7),
        None,
        None,
    ),
]


def _literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, D):  # strings: MonetDB types TIME '...' as TIME(0), dropping the fraction
        return f"'{value.isoformat(sep=' ')}'"
    if isinstance(value, T):
        return f"'{value.isoformat()}'"
    if isinstance(value, str):
        return f"'{value}'"
    return str(value)


def _row(values: tuple[object, ...]) -> str:
    return "(" + ", ".join(_literal(v) for v in values) + ")"


@pytest.fixture
def typed(url: str, unique_name: Callable[[str], str]) -> Iterator[tuple[tique.Connection, RawConnection, str, str]]:
    """Rows 1 and 2 in Storage, 3 a committed insert, 4 a committed update of a Storage row, 5 an own write."""
    name, twin = unique_name("dec_t"), unique_name("dec_p")
    conn = tique.connect(url)
    raw = Database.get(url).connect_raw()
    try:
        cur = conn.cursor()
        cur.execute(TYPED.format(t=name))
        raw.execute(TYPED.format(t=twin) + " -- tique: plain")
        conn.commit()
        stable = [TYPED_ROWS[0], TYPED_ROWS[1], (4, *TYPED_ROWS[1][1:])]
        cur.execute(f"INSERT INTO {name} VALUES " + ", ".join(_row(r) for r in stable))
        conn.commit()
        cur.execute(f"INSERT INTO {name} VALUES {_row(TYPED_ROWS[2])}")
        sets = ", ".join(f"{c} = {_literal(v)}" for c, v in zip(COLUMNS[1:], TYPED_ROWS[3][1:]))
        cur.execute(f"UPDATE {name} SET {sets} WHERE id = 4")
        conn.commit()
        cur.execute(f"INSERT INTO {name} VALUES {_row(TYPED_ROWS[4])}")
        raw.execute(f"INSERT INTO {twin} VALUES " + ", ".join(_row(r) for r in TYPED_ROWS))
        yield conn, raw, name, twin
    finally:
        conn.rollback()
        conn.close()
        raw.close()


COLUMNS = ("id", "ts0", "ts3", "ts6", "t0", "t3", "t6", "d0", "d2", "v")


@pytest.mark.parametrize(
    "outputs, where",
    [
        ("*", ""),
        ("*", "WHERE id = 4"),
        ("*", "WHERE id = 2"),
        ("*", "WHERE id > 100"),
        ("v, ts6, id, t6, d0", ""),
        ("d2, t3, ts3, ts0, t0", "WHERE id IN (1, 3)"),
        ("ts6", "WHERE id = 5"),
        ("id, ts6", "WHERE ts6 IS NULL"),
        ("x.ts0, x.d0, x.t0", "AS x WHERE x.id >= 3"),
    ],
)
def test_decoded_values(typed: tuple[tique.Connection, RawConnection, str, str], outputs: str, where: str) -> None:
    conn, raw, name, twin = typed
    cur = conn.cursor()
    cur.execute(f"SELECT {outputs} FROM {name} {where}")
    got = sorted(cur.fetchall(), key=repr)
    names = [c.split(".")[-1].strip() for c in outputs.split(",")] if outputs != "*" else list(COLUMNS)
    index = [COLUMNS.index(n) for n in names]
    wanted_ids = {r[0] for r in raw.execute(f"SELECT id FROM {twin} {where}").rows}
    want = sorted((tuple(r[i] for i in index) for r in TYPED_ROWS if r[0] in wanted_ids), key=repr)
    assert [tuple(r) for r in got] == want
    for row, want_row in zip(got, want):
        assert [type(v) for v in row] == [type(v) for v in want_row]
    assert cur.description is not None
    assert [d[0] for d in cur.description] == names
    types = {"t": tique.DATETIME, "d": tique.NUMBER, "i": tique.NUMBER, "v": tique.STRING}
    assert all(d[1] == types[n[0]] for d, n in zip(cur.description, names))


def test_decoded_aggregates(typed: tuple[tique.Connection, RawConnection, str, str]) -> None:
    conn, _, name, _ = typed
    cur = conn.cursor()
    cur.execute(f"SELECT MIN(ts6), MAX(ts6), MIN(t6), MAX(t3), MAX(d0), COUNT(ts0) FROM {name}")
    stamps = [r[3] for r in TYPED_ROWS if r[3] is not None]
    assert cur.fetchall() == [
        (min(stamps), max(stamps), T(0, 0, 0, 1), T(23, 59, 59, 999000), Decimal(12345678901234567), 4)
    ]
    cur.execute(f"SELECT MIN(ts6) FROM {name} WHERE id > 100")
    assert cur.fetchall() == [(None,)]


def test_a_cte_named_as_the_table_is_not_decoded(typed: tuple[tique.Connection, RawConnection, str, str]) -> None:
    # FROM names the CTE (MonetDB folds the unquoted upper-case name): its ts6 is a number, not the column's text
    conn, _, name, _ = typed
    cur = conn.cursor()
    cur.execute(f"WITH {name.upper()} AS (SELECT 7 AS ts6, 'x' AS t0) SELECT ts6, t0 FROM {name}")
    assert cur.fetchall() == [(7, "x")]


@pytest.mark.parametrize(
    "query, twin_query",
    [
        (
            f"SELECT id FROM {{f}} AS g WHERE EXISTS (SELECT 1 FROM {{s}} AS x WHERE x.i = g.id AND x.i IN ({SEMI}))",
            f"SELECT id FROM {{f}} WHERE id IN (SELECT i FROM {{s}} WHERE i IN ({SEMI}))",
        ),
        (
            f"SELECT id FROM {{f}} AS g WHERE NOT EXISTS "
            f"(SELECT 1 FROM {{s}} AS x WHERE x.i = g.id AND x.i IN ({SEMI}))",
            f"SELECT id FROM {{f}} WHERE id NOT IN (SELECT i FROM {{s}} WHERE i IN ({SEMI}))",
        ),
    ],
)
def test_exists_around_a_semi_join(shared_reader: Reader, query: str, twin_query: str) -> None:
    # MonetDB 11.41 answers these EXISTS forms wrongly on the plain twins (ids repeated, NOT EXISTS returning the
    # EXISTS rows), so the twins answer an equivalent IN form; tique's snapshots must give the right answer
    conn, raw, names, twins = shared_reader
    cur = conn.cursor()
    cur.execute(query.format(**names))
    got = sorted(cur.fetchall())
    assert got == sorted(raw.execute(twin_query.format(**twins)).rows)
    assert len(set(got)) == len(got)


def test_subquery_table_of_another_schema(url: str, unique_name: Callable[[str], str]) -> None:
    """The subquery reads a table of another schema with the outer table's name; its rows are partly committed
    Cache versions and partly the reader's own writes."""
    schema, name = unique_name("sjs"), unique_name("sjn")
    conn = tique.connect(url)
    try:
        cur = conn.cursor()
        cur.execute(f"CREATE SCHEMA {schema}")
        conn.commit()
        for table in (name, f"{schema}.{name}"):
            cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, n INT)")
        conn.commit()
        conn.bulk_load(name, [(i, i % 4) for i in range(1, 31)])
        cur.execute(f"INSERT INTO {schema}.{name} VALUES " + ", ".join(f"({i}, {i % 3})" for i in range(1, 31)))
        conn.commit()
        cur.execute(f"UPDATE {name} SET n = 9 WHERE id % 5 = 0")
        cur.execute(f"DELETE FROM {schema}.{name} WHERE id % 7 = 0")
        conn.commit()
        cur.execute(f"UPDATE {schema}.{name} SET n = 0 WHERE id % 6 = 1")
        cur.execute(f"DELETE FROM {name} WHERE id = 3")
        # what the reader sees, by hand: outer n (id 3 gone) and inner n (multiples of 7 gone)
        outer = {i: (9 if i % 5 == 0 else i % 4) for i in range(1, 31) if i != 3}
        inner = {i: (0 if i % 6 == 1 else i % 3) for i in range(1, 31) if i % 7}
        cases = [
            (
                f"SELECT id FROM {name} WHERE id IN (SELECT id FROM {schema}.{name} WHERE n = 0)",
                [i for i in outer if inner.get(i) == 0],
            ),
            (
                f"SELECT id FROM {name} WHERE n IN (SELECT n FROM {schema}.{name} AS x WHERE x.id > 20)",
                [i for i in outer if outer[i] in {n for j, n in inner.items() if j > 20}],
            ),
            (
                f"SELECT x.id FROM {schema}.{name} AS x WHERE x.id IN (SELECT {name}.id FROM {name} WHERE n = 9)",
                [i for i in inner if outer.get(i) == 9],
            ),
        ]
        for query, want in cases:
            cur.execute(query)
            assert sorted(r[0] for r in cur.fetchall()) == sorted(want), query
    finally:
        conn.rollback()
        conn.close()
