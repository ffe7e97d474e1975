"""``UPDATE t SET ts = (SELECT ...)`` of a TIME or TIMESTAMP column failed with a DataError naming tique's internal
output (``Type (tq_new_1) unknown``): the bare subquery was given the output's name as a derived-table alias, and
it printed inside the casts that read the value as text. Each statement here runs on a tique table and on a plain
twin; the rows must then be equal (a subquery yielding no row sets NULL)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

import tique
from tique.database import Database
from tique.engine.base import RawConnection

DDL = "CREATE TABLE {t} (k INT PRIMARY KEY, ts TIMESTAMP, tm TIME, dt DATE, t3 TIMESTAMP(3))"
ROWS = (
    "INSERT INTO {t} VALUES "
    "(1, TIMESTAMP '2024-01-01 10:00:00', TIME '10:00:00', DATE '2024-01-01', TIMESTAMP '2024-01-01 10:00:00.123'), "
    "(2, TIMESTAMP '2024-02-01 11:00:00.5', TIME '11:00:01', DATE '2024-02-01', NULL), "
    "(3, NULL, NULL, NULL, TIMESTAMP '2024-03-01 12:00:00.999')"
)
STATEMENTS = [
    "UPDATE {t} SET ts = (SELECT max(ts) FROM {t}) WHERE k = 1",
    "UPDATE {t} SET tm = (SELECT tm FROM {t} WHERE k = 2) WHERE k = 1",
    "UPDATE {t} SET dt = (SELECT max(dt) FROM {t}) WHERE k = 1",
    "UPDATE {t} SET t3 = (SELECT min(t3) FROM {t}) WHERE k = 2",
    "UPDATE {t} SET ts = (SELECT ts FROM {t} WHERE k = 99) WHERE k = 2",
    "UPDATE {t} SET ts = (SELECT max(x.ts) FROM {t} x WHERE x.k > {t}.k)",
    "UPDATE {t} SET tm = (SELECT min(x.tm) FROM {t} x WHERE x.k < {t}.k), ts = (SELECT max(ts) FROM {t}) WHERE k > 1",
]


@pytest.fixture
def twins(embedded_url: str, unique_name: Callable[[str], str]) -> Iterator[tuple[tique.Connection, RawConnection]]:
    conn = tique.connect(embedded_url)
    raw = Database.get(embedded_url).connect_raw()
    yield conn, raw
    conn.rollback()
    conn.close()
    raw.close()


@pytest.mark.parametrize("statement", STATEMENTS)
def test_temporal_column_set_to_a_subquery_as_monetdb_does(
    twins: tuple[tique.Connection, RawConnection], unique_name: Callable[[str], str], statement: str
) -> None:
    conn, raw = twins
    t, p = unique_name("tsu_t"), unique_name("tsu_p")
    cur = conn.cursor()
    cur.execute(DDL.format(t=t))
    cur.execute(ROWS.format(t=t))
    conn.commit()
    raw.execute(DDL.format(t=p) + " -- tique: plain")
    raw.execute(ROWS.format(t=p))
    raw.execute(statement.format(t=p))
    cur.execute(statement.format(t=t))
    cur.execute(f"SELECT * FROM {t} ORDER BY k")  # the transaction's own writes
    own = cur.fetchall()
    conn.commit()
    cur.execute(f"SELECT * FROM {t} ORDER BY k")
    want = [tuple(row) for row in raw.execute(f"SELECT * FROM {p} ORDER BY k").rows]
    assert own == want
    assert cur.fetchall() == want
    conn.commit()
