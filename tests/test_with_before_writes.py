"""``WITH x AS (...) INSERT INTO t SELECT ... FROM x`` on a tique table failed with "no such table 'x'": it is
planned as ``INSERT INTO t WITH x AS (...) SELECT ...``, which MonetDB reads the same, reading the snapshot with
the transaction's own writes. WITH before an UPDATE or DELETE of a tique table was refused; it runs now, each
reference to a CTE read as its query (tests/test_merge_and_with_writes.py compares such writes with a plain twin)."""

from __future__ import annotations

from collections.abc import Callable

import tique


def test_with_before_insert_update_and_delete_runs(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    t = unique_name("wi")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT)")
    cur.execute(f"INSERT INTO {t} VALUES (1, 1)")
    conn.commit()
    cur.execute(f"WITH x AS (SELECT k + 10 AS k, v FROM {t}) INSERT INTO {t} SELECT k, v FROM x")
    assert cur.rowcount == 1
    cur.execute(f"WITH x AS (SELECT k + 30 AS k, v + 1 AS v FROM {t}) INSERT INTO {t} (k, v) SELECT k, v FROM x")
    assert cur.rowcount == 2  # it read the transaction's own row 11
    cur.execute(f"WITH x AS (SELECT 1 AS k) UPDATE {t} SET v = 5 WHERE k IN (SELECT k FROM x)")
    assert cur.rowcount == 1
    cur.execute(f"WITH x AS (SELECT k FROM {t} WHERE v = 5) DELETE FROM {t} WHERE k IN (SELECT k FROM x)")
    assert cur.rowcount == 1  # it read the transaction's own update
    conn.commit()
    cur.execute(f"SELECT k, v FROM {t} ORDER BY k")
    assert cur.fetchall() == [(11, 1), (31, 2), (41, 2)]
    conn.commit()
