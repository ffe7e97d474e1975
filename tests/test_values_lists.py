"""VALUES lists used as tables (rewrite/values_lists.py): MonetDB 11.41 reads ``(VALUES (1, 2), (2, 1)) AS v(a, b)``
as (1, 1), (2, 2); through tique every such statement answers with the rows written, as a Python model says:
queries, joins with tique tables, INSERT ... SELECT and UPDATE ... FROM, with literals, parameters, strings,
NULLs and mixed types."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import pytest
import sqlglot

import tique
from tique.rewrite.dialect import MonetDB
from tique.rewrite.values_lists import MAX_ROWS, values_as_unions

Connect = Callable[..., tique.Connection]


@pytest.mark.parametrize(
    "sql, params, expected",
    [
        ("SELECT a, b FROM (VALUES (1, 2), (2, 1)) AS v(a, b) ORDER BY a", None, [(1, 2), (2, 1)]),
        ("SELECT * FROM (VALUES (1, 2), (2, 1), (3, 3)) AS v(a, b) ORDER BY a", None, [(1, 2), (2, 1), (3, 3)]),
        ("SELECT * FROM (VALUES ('a', 'b'), ('b', 'a')) AS v(x, y) ORDER BY x", None, [("a", "b"), ("b", "a")]),
        ("SELECT * FROM (VALUES (%s, %s), (%s, %s)) AS v(a, b) ORDER BY a", (1, 2, 2, 1), [(1, 2), (2, 1)]),
        ("SELECT * FROM (VALUES (1, NULL), (NULL, 1)) AS v(a, b) ORDER BY a", None, [(None, 1), (1, None)]),
        (
            "SELECT * FROM (VALUES (1, 2.5), (2, 1)) AS v(a, b) ORDER BY a",
            None,
            [(1, Decimal("2.5")), (2, Decimal("1.0"))],
        ),
        ('SELECT v."B" FROM (VALUES (1, 2), (2, 1)) AS v(a, "B") ORDER BY v.a', None, [(2,), (1,)]),
        ("SELECT SUM(a * 10 + b) FROM (VALUES (1, 2), (2, 1)) AS v(a, b)", None, [(33,)]),
        ("SELECT a FROM (VALUES (1, 2), (2, 1)) AS v(a, b) WHERE a < b", None, [(1,)]),
        ("SELECT COUNT(*) FROM (VALUES (1, 2)) AS v(a, b)", None, [(1,)]),  # one row: left as written
    ],
)
def test_values_tables_read_as_written(
    connect: Connect, sql: str, params: tuple[object, ...] | None, expected: list[tuple[object, ...]]
) -> None:
    conn = connect()
    cur = conn.cursor()
    try:
        cur.execute(sql, params)
        assert cur.fetchall() == expected
        conn.rollback()
    finally:
        conn.close()


def test_writes_through_values_tables(connect: Connect, unique_name: Callable[[str], str]) -> None:
    name = unique_name("vl")
    conn = connect()
    cur = conn.cursor()
    try:
        cur.execute(f"CREATE TABLE {name} (a INT PRIMARY KEY, b INT)")
        cur.execute(f"INSERT INTO {name} SELECT * FROM (VALUES (3, 4), (4, 3)) AS v(a, b)")
        cur.execute(f"INSERT INTO {name} VALUES (1, 2), (2, 1)")  # not a table: planned from its rows
        conn.commit()
        cur.execute(f"SELECT a, b FROM {name} ORDER BY a")
        assert cur.fetchall() == [(1, 2), (2, 1), (3, 4), (4, 3)]
        cur.execute(
            f"SELECT t.a FROM {name} t JOIN (VALUES (1, 2), (2, 1)) AS v(x, y) ON t.a = v.x AND t.b = v.y ORDER BY 1"
        )
        assert cur.fetchall() == [(1,), (2,)]
        cur.execute(f"UPDATE {name} SET b = v.y FROM (VALUES (3, 30), (30, 3)) AS v(x, y) WHERE {name}.a = v.x")
        assert cur.rowcount == 1
        conn.commit()
        cur.execute(f"SELECT a, b FROM {name} ORDER BY a")
        assert cur.fetchall() == [(1, 2), (2, 1), (3, 30), (4, 3)]
        conn.rollback()
    finally:
        conn.close()


def test_the_pass_keeps_insert_values_and_long_lists_as_written() -> None:
    def passed(sql: str) -> str:
        return values_as_unions(sqlglot.parse_one(sql, read=MonetDB)).sql(dialect=MonetDB)

    assert "VALUES" in passed("INSERT INTO t VALUES (1, 2), (2, 1)")
    assert "UNION ALL" in passed("INSERT INTO t SELECT * FROM (VALUES (1, 2), (2, 1)) AS v(a, b)")
    long = ", ".join(f"({i}, {i})" for i in range(MAX_ROWS + 1))
    assert "UNION" not in passed(f"SELECT * FROM (VALUES {long}) AS v(a, b)")
    assert "UNION" not in passed("SELECT * FROM (VALUES (1), (2)) AS v(a)")
