"""Guarantee: a WHERE clause that tique copies into the snapshot's scans (key predicates, filters on the table
alone) selects exactly the rows the snapshot holds, whatever its operators: ``id = 1 OR id = 2`` returns the
newest version of each key and no deleted one, as a plain MonetDB twin table returns it.

Found while testing issue 16 item 4: the copied predicate was joined to the snapshot's own conditions without
parentheses (``... AND NOT tq_deleted AND id = 1 OR id = 2``), so a key named in a second OR branch came back in
every version, deleted ones included.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import tique

Connect = Callable[..., tique.Connection]


@pytest.fixture
def tables(connect: Connect, unique_name: Callable[[str], str]) -> tuple[tique.Connection, str, str]:
    """A tique table and its plain twin, each written alike: keys 1-6, updated, some deleted, in several commits
    (so the tique table holds several versions and tombstones per key)."""
    conn = connect()
    cur = conn.cursor()
    name = unique_name("kpred")
    twin = f"{name}_twin"
    cur.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, a INT)")
    cur.execute(f"CREATE TABLE {twin} (id INT PRIMARY KEY, a INT) -- tique: plain")
    conn.commit()
    for table in (name, twin):
        cur.execute(f"INSERT INTO {table} VALUES (1, 10), (2, 20), (3, 30), (4, 40), (5, 50), (6, 60)")
        conn.commit()
        cur.execute(f"UPDATE {table} SET a = a + 1 WHERE id IN (2, 3, 4)")
        conn.commit()
        cur.execute(f"DELETE FROM {table} WHERE id IN (2, 5)")
        conn.commit()
    return conn, name, twin


_KEY = st.integers(0, 7).map(lambda k: f"id = {k}")
_FILTER = st.sampled_from(["a > 25", "a < 45", "a = 31", "a IS NULL", "id > 3", "id <> 4"])
_ATOM = _KEY | _FILTER
_WHERE = st.recursive(
    _ATOM,
    lambda inner: (
        st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})")
        | inner.map(lambda w: f"NOT {w}")
    ),
    max_leaves=4,
).map(lambda w: w[1:-1] if w.startswith("(") and w.endswith(")") else w)


def test_or_of_keys(tables: tuple[tique.Connection, str, str]) -> None:
    conn, name, _ = tables
    cur = conn.cursor()
    cur.execute(f"SELECT id, a FROM {name} WHERE id = 1 OR id = 2 OR id = 4 ORDER BY id")
    assert cur.fetchall() == [(1, 10), (4, 41)]
    conn.commit()


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.generate])
@given(where=_WHERE)
def test_where_reads_what_monetdb_reads(tables: tuple[tique.Connection, str, str], where: str) -> None:
    conn, name, twin = tables
    cur = conn.cursor()
    answers = []
    for table in (name, twin):
        cur.execute(f"SELECT id, a FROM {table} WHERE {where} ORDER BY id")
        answers.append(cur.fetchall())
    conn.commit()
    assert answers[0] == answers[1], f"WHERE {where}: tique {answers[0]}, MonetDB {answers[1]}"
