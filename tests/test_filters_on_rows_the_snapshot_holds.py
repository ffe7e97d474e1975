"""A query's filter that can fail on a value (a CAST, a division) fails only on rows the snapshot holds. tique
filters Storage rows by the query's own filters before removing those a newer version overrides, so the engine
also evaluated them on a checkpointed row that a committed or the transaction's own UPDATE or DELETE had
replaced: 'conversion of string to type int failed' where MonetDB, holding only the current rows, answered (found
by a differential review). Such an error now runs the statement again with its filters above each snapshot."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique
from tique.checkpoint import Checkpointer
from tique.engine import open_engine

STATEMENTS = [
    ("SELECT k FROM {t} WHERE CAST(s AS INT) > 0 ORDER BY k", [(1,), (2,)]),
    ("SELECT COUNT(*) FROM {t} WHERE CAST(s AS INT) = 2", [(1,)]),
    ("SELECT k FROM {t} WHERE k IN (SELECT k FROM {t} WHERE CAST(s AS INT) >= 1) ORDER BY k", [(1,), (2,)]),
    ("UPDATE {t} SET s = 'x' WHERE CAST(s AS INT) = 1", 1),
    ("DELETE FROM {t} WHERE CAST(s AS INT) = 1", 1),
    ("DELETE FROM {t} WHERE 10 / (k - 3) < 0", 2),  # k = 3 is deleted
    ("INSERT INTO {t} SELECT k + 10, s FROM {t} WHERE CAST(s AS INT) > 0", 2),
]


@pytest.mark.parametrize("own", [False, True], ids=["committed", "own"])
@pytest.mark.parametrize("statement", range(len(STATEMENTS)))
def test_a_failing_filter_meets_only_the_rows_of_the_snapshot(
    url: str, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str], own: bool, statement: int
) -> None:
    conn = connect()
    cur = conn.cursor()
    t = unique_name("flt")
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, s VARCHAR(10))")
    cur.execute(f"INSERT INTO {t} VALUES (1, '1'), (2, 'oops'), (3, 'bad')")
    conn.commit()
    Checkpointer(open_engine(url).connect()).run_once()  # the rows in Storage
    cur.execute(f"UPDATE {t} SET s = '2' WHERE k = 2")  # cleaned: versions that override the Storage rows
    cur.execute(f"DELETE FROM {t} WHERE k = 3")
    if not own:
        conn.commit()
    sql, expected = STATEMENTS[statement]
    cur.execute(sql.format(t=t))
    assert (cur.fetchall() if cur.description else cur.rowcount) == expected
    conn.commit()  # the transaction went on


def test_a_filter_failing_on_a_row_of_the_snapshot_still_fails(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    conn = connect()
    cur = conn.cursor()
    t = unique_name("flf")
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, s VARCHAR(10))")
    cur.execute(f"INSERT INTO {t} VALUES (1, '1'), (2, 'oops')")
    conn.commit()
    with pytest.raises(tique.DataError, match="conversion"):
        cur.execute(f"SELECT k FROM {t} WHERE CAST(s AS INT) > 0")
