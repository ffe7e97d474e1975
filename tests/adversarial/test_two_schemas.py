"""Tables of the same name in two schemas are two tables, also inside one transaction (its writes, its reads of
its own writes, and its write-set are per schema-qualified table)."""

from __future__ import annotations

from collections.abc import Callable

import tique

Connect = Callable[..., tique.Connection]


def test_one_transaction_writes_same_named_tables_in_two_schemas(
    connect: Connect, unique_name: Callable[[str], str]
) -> None:
    a, b, name = unique_name("sa"), unique_name("sb"), unique_name("t")
    conn = connect()
    cur = conn.cursor()
    for schema in (a, b):
        cur.execute(f"CREATE SCHEMA {schema}")
        cur.execute(f"CREATE TABLE {schema}.{name} (k INT PRIMARY KEY, v INT)")
    cur.execute(f"INSERT INTO {a}.{name} VALUES (1, 10)")
    cur.execute(f"INSERT INTO {b}.{name} VALUES (1, 20)")  # the same key, another table
    cur.execute(f"SELECT v FROM {a}.{name}")
    assert cur.fetchall() == [(10,)]  # its own write, of this table only
    cur.execute(f"UPDATE {b}.{name} SET v = v + 1 WHERE k = 1")
    conn.commit()
    other = connect()
    check = other.cursor()
    for schema, expected in ((a, 10), (b, 21)):
        check.execute(f"SELECT k, v FROM {schema}.{name}")
        assert check.fetchall() == [(1, expected)], schema
