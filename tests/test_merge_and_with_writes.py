"""SQL MonetDB runs that tique refused (found by a differential review): MERGE INTO a plain table USING a tique
table (refused as 'MERGE on a tique table'), and WITH before an UPDATE or DELETE of a tique table. The MERGE now
reads the transaction's snapshot, as a plain table's INSERT ... SELECT does; a WITH's queries go where they are
used. Each statement runs on a tique table and on a plain twin; both must end alike."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique

WRITES = [
    "WITH c AS (SELECT k FROM {t} WHERE k < 3) UPDATE {t} SET v = 0 WHERE k IN (SELECT k FROM c)",
    "WITH c AS (SELECT k FROM {t} WHERE k > 2) DELETE FROM {t} WHERE k IN (SELECT k FROM c)",
    "WITH a AS (SELECT k, v FROM {t} WHERE v >= 20), b (kk) AS (SELECT k FROM a WHERE v < 40) "
    "UPDATE {t} SET v = v + 1 WHERE k IN (SELECT kk FROM b)",
    "WITH m AS (SELECT MAX(v) AS top FROM {t}) UPDATE {t} SET v = (SELECT top FROM m) WHERE k = 1",
    "WITH {t} AS (SELECT 2 AS k) DELETE FROM {t} WHERE k IN (SELECT k FROM {t})",  # the CTE shadows the table
    # a quoted name is not the unquoted target: an alias that dropped the quotes hid the target (all rows set)
    'WITH "T" AS (SELECT k FROM {t} WHERE v > 25) '
    'UPDATE {t} SET v = 0 WHERE EXISTS (SELECT 1 FROM "T" WHERE k = {t}.k)',
    'WITH "X" AS (SELECT k, v FROM {t}) UPDATE {t} SET v = 1 WHERE k IN (SELECT "X".k FROM "X" WHERE "X".v > 20)',
]


@pytest.mark.parametrize("write", range(len(WRITES)))
def test_with_before_update_or_delete_as_monetdb_runs_it(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str], write: int
) -> None:
    conn = connect()
    cur = conn.cursor()
    tx, plain = unique_name("wu"), unique_name("wup")
    ends = []
    for t, comment in ((tx, ""), (plain, " -- tique: plain")):
        cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT){comment}")
        cur.execute(f"INSERT INTO {t} VALUES (1, 10), (2, 20), (3, 30), (4, 40)")
        conn.commit()
        cur.execute(f"UPDATE {t} SET v = 25 WHERE k = 2")  # the transaction's own write, not yet flushed
        cur.execute(WRITES[write].format(t=t))
        conn.commit()
        ends.append(conn.execute(f"SELECT k, v FROM {t} ORDER BY k").fetchall())
    assert ends[0] == ends[1]


def test_with_recursive_before_a_write_is_refused_clearly(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    conn = connect(on_statement_error="continue")
    t = unique_name("wr")
    conn.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT)")
    with pytest.raises(tique.NotSupportedError, match="RECURSIVE"):
        conn.execute(
            f"WITH RECURSIVE r (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) "
            f"DELETE FROM {t} WHERE k IN (SELECT n FROM r)"
        )


def test_merge_into_a_plain_table_reads_the_snapshot(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    conn, other = connect(), connect()
    cur = conn.cursor()
    t, target = unique_name("ms"), unique_name("mt")
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT)")
    cur.execute(f"CREATE TABLE {target} (k INT, v INT) -- tique: plain")
    cur.execute(f"INSERT INTO {t} VALUES (1, 10), (2, 20)")
    cur.execute(f"INSERT INTO {target} VALUES (1, 0)")
    conn.commit()
    cur.execute(f"SELECT COUNT(*) FROM {t}")  # the snapshot begins
    other.execute(f"UPDATE {t} SET v = 99 WHERE k = 1")  # committed after it: not seen
    other.commit()
    cur.execute(f"INSERT INTO {t} VALUES (3, 30)")  # the transaction's own: seen
    cur.execute(
        f"MERGE INTO {target} USING {t} ON {target}.k = {t}.k WHEN MATCHED THEN UPDATE SET v = {t}.v "
        f"WHEN NOT MATCHED THEN INSERT (k, v) VALUES ({t}.k, {t}.v)"
    )
    conn.commit()
    assert conn.execute(f"SELECT k, v FROM {target} ORDER BY k").fetchall() == [(1, 10), (2, 20), (3, 30)]
    with pytest.raises(tique.NotSupportedError, match="MERGE on a tique table"):
        conn.execute(f"MERGE INTO {t} USING {target} ON {t}.k = {target}.k WHEN MATCHED THEN DELETE")
