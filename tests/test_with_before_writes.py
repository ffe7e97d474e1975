"""``WITH x AS (...) INSERT INTO t SELECT ... FROM x`` on a tique table failed with "no such table 'x'": it is
planned as ``INSERT INTO t WITH x AS (...) SELECT ...``, which MonetDB reads the same, reading the snapshot with
the transaction's own writes. WITH before an UPDATE or DELETE of a tique table gets a clear NotSupportedError and
the transaction goes on."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique


def test_with_before_insert_runs_and_before_update_is_refused_clearly(
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
    for write in (f"UPDATE {t} SET v = 5", f"DELETE FROM {t}"):
        with pytest.raises(tique.NotSupportedError, match="WITH before"):
            cur.execute(f"WITH x AS (SELECT 1 AS k) {write} WHERE k IN (SELECT k FROM x)")
    conn.commit()
    cur.execute(f"SELECT k, v FROM {t} ORDER BY k")
    assert cur.fetchall() == [(1, 1), (11, 1), (31, 2), (41, 2)]
    conn.commit()
