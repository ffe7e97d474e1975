"""An INSERT into a table with a default the engine evaluates (CURRENT_TIMESTAMP, CURRENT_DATE) takes the SQL path
(rewrite/writes.py): its VALUES become a subquery, where MonetDB types a bare NULL as SMALLINT. A NULL (written, or
a None parameter) for a DATE, TIME, TIMESTAMP or BLOB column then failed with "types smallint and timestamp are not
equal" - the first INSERT of a SQLAlchemy model with ``server_default=func.now()`` and any nullable DateTime
(found by a drop-in review). Each value type, written and as a parameter, one row and several, beside values."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable

import pytest

import tique

Connect = Callable[..., tique.Connection]

TYPES = {
    "BOOLEAN": True,
    "TINYINT": -7,
    "INT": 7,
    "HUGEINT": 2**100,
    "DECIMAL(10,2)": decimal.Decimal("12.34"),
    "REAL": 1.5,
    "DOUBLE": 2.25,
    "VARCHAR(5)": "abc",
    "CHAR(3)": "xyz",
    "CLOB": "long text",
    "BLOB": b"\x00\x01",
    "DATE": datetime.date(2024, 2, 29),
    "TIME": datetime.time(12, 30, 1),
    "TIME(3)": datetime.time(12, 30, 1, 123000),
    "TIMESTAMP": datetime.datetime(2024, 2, 29, 12, 30, 1, 123456),
    "TIMESTAMP(3)": datetime.datetime(2024, 2, 29, 12, 30, 1, 123000),
}


@pytest.mark.parametrize("sql_type", list(TYPES))
def test_nulls_and_values_beside_an_engine_default(
    connect: Connect, unique_name: Callable[[str], str], sql_type: str
) -> None:
    conn = connect()
    cur = conn.cursor()
    t = unique_name("dflt")
    cur.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, created TIMESTAMP DEFAULT CURRENT_TIMESTAMP, b {sql_type})")
    value = TYPES[sql_type]
    cur.execute(f"INSERT INTO {t} (id, b) VALUES (1, NULL)")
    cur.execute(f"INSERT INTO {t} (id, b) VALUES (%s, %s)", (2, None))
    cur.execute(f"INSERT INTO {t} (id, b) VALUES (%s, %s), (%s, %s), (5, NULL)", (3, None, 4, value))
    cur.execute(f"INSERT INTO {t} (id, created, b) VALUES (6, NULL, NULL), (7, DEFAULT, %s)", (value,))
    conn.commit()
    cur.execute(f"SELECT id, b, created IS NULL FROM {t} ORDER BY id")
    got = cur.fetchall()
    assert [r[0] for r in got] == [1, 2, 3, 4, 5, 6, 7]
    assert [r[1] for r in got] == [None, None, None, value, None, None, value]
    assert [r[2] for r in got] == [False] * 5 + [True, False]


@pytest.mark.parametrize("sql_type", ["VARCHAR(5)", "DATE", "TIMESTAMP(3)", "BLOB", "DECIMAL(10,2)"])
def test_values_the_engine_computes_beside_none_parameters(
    connect: Connect, unique_name: Callable[[str], str], sql_type: str
) -> None:
    """VALUES with an expression goes to the engine too (no default needed): a None parameter in the first row."""
    conn = connect()
    cur = conn.cursor()
    t = unique_name("expr")
    cur.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, b {sql_type})")
    value = TYPES[sql_type]
    cur.execute(f"INSERT INTO {t} VALUES (1 + 0, %s), (%s, %s)", (None, 2, value))
    conn.commit()
    cur.execute(f"SELECT id, b FROM {t} ORDER BY id")
    assert cur.fetchall() == [(1, None), (2, value)]
