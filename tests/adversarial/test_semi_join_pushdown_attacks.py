"""Semi-joins pushed into a snapshot's Storage scan, lone-table snapshots without their LIMIT, and results decoded
by column answer as plain MonetDB does: the same statements on tique tables and on plain twins holding the rows
the reader should see, while the tique tables hold every kind of version (Storage rows, committed Cache versions
updated, deleted, reinserted and new, tombstones, a commit after the reader's snapshot, the reader's own
uncommitted writes), on both adapters."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

import tique
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

Reader = tuple[tique.Connection, RawConnection, dict[str, str], dict[str, str]]


@pytest.fixture
def reader(url: str, unique_name: Callable[[str], str]) -> Iterator[Reader]:
    """A tique transaction reading s, f, o and h in every state above, a raw connection, and the names of the
    tique tables and of their plain twins."""
    prefix = unique_name("sja")
    names = {n: f"{prefix}_t{n}" for n in DDL}
    twins = {n: f"{prefix}_p{n}" for n in DDL}
    conn, other = tique.connect(url), tique.connect(url)
    raw = Database.get(url).connect_raw()
    try:
        cur = conn.cursor()
        for n, ddl in DDL.items():
            cur.execute(ddl.format(t=names[n]))
            raw.execute(ddl.format(t=twins[n]) + " -- tique: plain")
        conn.commit()
        for n, rows in STABLE.items():
            conn.bulk_load(names[n], rows)
            values = ", ".join(str(r).replace("None", "NULL") for r in rows)
            raw.execute(f"INSERT INTO {twins[n]} VALUES {values}")
        for sql in COMMITTED:
            cur.execute(sql.format(**names))
            raw.execute(sql.format(**twins))
        conn.commit()
        cur.execute(f"SELECT COUNT(*) FROM {names['f']}")  # the reader's snapshot starts here
        cur.fetchall()
        ocur = other.cursor()
        for sql in AFTER_SNAPSHOT:
            ocur.execute(sql.format(**names))
        other.commit()
        for sql in OWN:
            cur.execute(sql.format(**names))
            raw.execute(sql.format(**twins))
        yield conn, raw, names, twins
    finally:
        conn.rollback()
        conn.close()
        other.close()
        raw.close()


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
]


@pytest.mark.parametrize("query", ATTACKS)
def test_attack(reader: Reader, query: str) -> None:
    compare(reader, query)


ORDERED = [
    "SELECT w, i, q FROM {s} ORDER BY w, i LIMIT 5 OFFSET 3",
    "SELECT w, i, q FROM {s} ORDER BY q DESC NULLS LAST, w, i LIMIT 7",
    "SELECT w, i FROM {s} ORDER BY w DESC, i OFFSET 50",
    "SELECT DISTINCT w FROM {s} ORDER BY w",
    f"SELECT w, i FROM {{s}} WHERE i IN ({SEMI}) ORDER BY w, i LIMIT 4 OFFSET 1",
    "SELECT i, v FROM {h} ORDER BY v LIMIT 3",
]


@pytest.mark.parametrize("query", ORDERED)
def test_ordered_attack(reader: Reader, query: str) -> None:
    compare(reader, query, ordered=True)
