"""``UPDATE t SET (a, b) = (SELECT x, y ...)``, a row assignment MonetDB runs, was refused on a tique table with
"UPDATE: cannot read assignment". It is planned as one scalar subquery per column over the whole row subquery.
Each statement runs on a tique table and a plain twin: the rows must be equal, no row sets NULLs, and a subquery
yielding more than one row fails on both, leaving the rows as they were."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

import tique
from tique.database import Database
from tique.engine.base import RawConnection

DDL = "CREATE TABLE {t} (k INT PRIMARY KEY, v INT, s VARCHAR(5), ts TIMESTAMP)"
ROWS = (
    "INSERT INTO {t} VALUES (1, 10, 'a', TIMESTAMP '2024-01-01 10:00:00'), (2, 20, 'b', NULL), "
    "(3, 20, 'c', TIMESTAMP '2024-03-01 12:30:00.25')"
)
RUNS = [
    "UPDATE {t} SET (v, s) = (SELECT v, s FROM {t} WHERE k = 2) WHERE k = 1",
    "UPDATE {t} SET (v, s) = (SELECT v, s FROM {t} WHERE k = 99) WHERE k = 1",
    "UPDATE {t} SET (v, s) = (SELECT DISTINCT v, 'z' FROM {t} WHERE k > 1) WHERE k = 1",
    "UPDATE {t} SET (v) = (SELECT max(v) + 1 FROM {t})",
    "UPDATE {t} SET (s, ts, v) = (SELECT x.s, x.ts, x.v + 1 FROM {t} x WHERE x.k = {t}.k + 1) WHERE k < 3",
    "UPDATE {t} SET (v, ts) = (SELECT count(*), max(ts) FROM {t} GROUP BY v HAVING v = 20), s = 'q' WHERE k = 3",
    "UPDATE {t} SET s = 'w', (v, ts) = (SELECT min(v), min(ts) FROM {t}) WHERE k IN (1, 2)",
]
FAILS = [
    ("UPDATE {t} SET (v, s) = (SELECT v, s FROM {t} WHERE k > 1) WHERE k = 1", None),
    ("UPDATE {t} SET (v, s) = (SELECT v, s, k FROM {t} WHERE k = 2) WHERE k = 1", "don't match"),
    ("UPDATE {t} SET (v, s) = (SELECT v FROM {t} WHERE k = 2) WHERE k = 1", "don't match"),
]


@pytest.fixture
def twins(
    embedded_url: str, unique_name: Callable[[str], str]
) -> Iterator[tuple[tique.Connection, RawConnection, str, str]]:
    conn = tique.connect(embedded_url)
    raw = Database.get(embedded_url).connect_raw()
    t, p = unique_name("rsu_t"), unique_name("rsu_p")
    cur = conn.cursor()
    cur.execute(DDL.format(t=t))
    cur.execute(ROWS.format(t=t))
    conn.commit()
    raw.execute(DDL.format(t=p) + " -- tique: plain")
    raw.execute(ROWS.format(t=p))
    yield conn, raw, t, p
    conn.rollback()
    conn.close()
    raw.close()


def _rows(raw: RawConnection, p: str) -> list[tuple[object, ...]]:
    return [tuple(r) for r in raw.execute(f"SELECT * FROM {p} ORDER BY k").rows]


@pytest.mark.parametrize("statement", RUNS)
def test_row_assignment_from_a_subquery_as_monetdb_does(
    twins: tuple[tique.Connection, RawConnection, str, str], statement: str
) -> None:
    conn, raw, t, p = twins
    before = _rows(raw, p)
    raw.execute(statement.format(t=p))
    cur = conn.cursor()
    cur.execute(statement.format(t=t))
    cur.execute(f"SELECT * FROM {t} ORDER BY k")
    assert cur.fetchall() == _rows(raw, p) != before
    conn.commit()
    cur.execute(f"SELECT * FROM {t} ORDER BY k")
    assert cur.fetchall() == _rows(raw, p)
    conn.commit()


@pytest.mark.parametrize(("statement", "message"), FAILS)
def test_row_assignment_errors_as_monetdb_and_writes_nothing(
    twins: tuple[tique.Connection, RawConnection, str, str], statement: str, message: str | None
) -> None:
    conn, raw, t, p = twins
    before = _rows(raw, p)
    with pytest.raises(tique.DatabaseError):
        raw.execute(statement.format(t=p))
    cur = conn.cursor()
    with pytest.raises(tique.DatabaseError, match=message):
        cur.execute(statement.format(t=t))
    conn.rollback()
    cur.execute(f"SELECT * FROM {t} ORDER BY k")
    assert cur.fetchall() == before == _rows(raw, p)
    conn.commit()


def test_row_assignment_of_values_or_star_is_refused_naming_what_to_write(
    twins: tuple[tique.Connection, RawConnection, str, str],
) -> None:
    conn, _, t, _ = twins
    cur = conn.cursor()
    with pytest.raises(tique.ProgrammingError, match="SET a = x, b = y"):
        cur.execute(f"UPDATE {t} SET (v, s) = (5, 'x') WHERE k = 1")
    with pytest.raises(tique.NotSupportedError, match="name the subquery's columns"):
        cur.execute(f"UPDATE {t} SET (v, s) = (SELECT * FROM (SELECT 1 AS a, 'x' AS b) AS u) WHERE k = 1")
    conn.rollback()
