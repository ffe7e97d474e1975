"""A long IN list of plain values (literals or parameters) is planned without a parse-tree node per value: tique
lifts it out of the statement before sqlglot parses it and puts it back in the SQL it sends (rewrite/lists.py).
Before, each value became nodes that were parsed, copied, walked and printed: 200,000 values took 30 s in the
client (issue 16, item 7). Answers, parameters, own writes and writes by such a list stay as they were."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlglot import exp

import tique

ROWS = 3000
VALUES = 20_000
NODE_BUDGET = 2000  # nodes created while planning a 20,000-value list: a handful per value before


@pytest.fixture
def node_count(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], int]]:
    """How many sqlglot expression nodes were created since the fixture started."""
    created = [0]
    original = exp.Expression.__init__

    def counting(self: exp.Expression, *args: Any, **kwargs: Any) -> None:
        created[0] += 1
        original(self, *args, **kwargs)

    monkeypatch.setattr(exp.Expression, "__init__", counting)
    yield lambda: created[0]


def _listed(values: range) -> str:
    return ", ".join(str(v) for v in values)


def test_long_in_lists_are_planned_without_a_node_per_value(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str], node_count: Callable[[], int]
) -> None:
    table = unique_name("lil")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {table} (k INT PRIMARY KEY, v INT, s VARCHAR(10))")
    conn.bulk_load(table, [(k, k, f"s{k}") for k in range(ROWS)])
    conn.commit()
    cur.execute(f"UPDATE {table} SET v = v + 1 WHERE k < 10")  # own writes the reads must see

    evens = range(0, 2 * VALUES, 2)
    before = node_count()
    cur.execute(f"SELECT k, v FROM {table} WHERE k IN ({_listed(evens)}) AND v >= 0")
    assert node_count() - before < NODE_BUDGET, "planning built parse-tree nodes for every listed value"
    assert sorted(cur.fetchall()) == [(k, k + 1 if k < 10 else k) for k in range(0, ROWS, 2)]

    odds = list(range(1, 2 * VALUES, 2))
    before = node_count()
    cur.execute(f"SELECT COUNT(*) FROM {table} WHERE k NOT IN ({', '.join(['%s'] * len(odds))})", odds)
    assert node_count() - before < NODE_BUDGET, "planning built parse-tree nodes for every listed parameter"
    assert cur.fetchone() == (ROWS // 2,)

    names = ", ".join(f"'s{k}'" for k in range(0, VALUES, 3))
    cur.execute(f"SELECT COUNT(*) FROM {table} WHERE s IN ({names})")
    assert cur.fetchone() == (ROWS // 3,)

    cur.execute(f"UPDATE {table} SET v = -v WHERE k IN ({_listed(range(1, 2 * VALUES, 2))})")
    cur.execute(f"DELETE FROM {table} WHERE k IN ({_listed(range(100, VALUES))})")
    conn.commit()
    cur.execute(f"SELECT COUNT(*), SUM(CASE WHEN v < 0 THEN 1 ELSE 0 END) FROM {table}")
    assert cur.fetchall() == [(100, 50)]


def test_a_200k_value_in_list_runs_in_seconds(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    table = unique_name("lil")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {table} (k INT PRIMARY KEY, v INT)")
    conn.bulk_load(table, [(k, k) for k in range(ROWS)])
    conn.commit()
    started = time.monotonic()
    cur.execute(f"SELECT COUNT(*) FROM {table} WHERE k IN ({_listed(range(0, 400_000, 2))})")
    assert cur.fetchone() == (ROWS // 2,)
    assert time.monotonic() - started < 20, "a 200,000-value IN list still takes tens of seconds"
