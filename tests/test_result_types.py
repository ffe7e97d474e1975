"""A query answers the same values, of the same Python types and type names, on the embedded engine as over MAPI.

monetdbe's C API passes a value by how MonetDB stores it: before tique/engine/result_types.py, the embedded adapter
answered an INTERVAL SECOND of 90 s as the integer 90000, a JSON value quoted once more, a UUID as a string, a
TIMESTAMP WITH TIME ZONE without its zone, and every CHAR or CLOB as 'varchar'. Each case here runs the same
statement through tique on both adapters and compares the answers (differential: the MAPI side is pymonetdb's).
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import pytest

import tique
from tests.conftest import ServeProcess
from tique.database import Database
from tique.engine.result_types import describe

Answer = tuple[list[tuple[Any, ...]], list[str]]

EXPRESSIONS = [
    "INTERVAL '90' SECOND",
    "INTERVAL '1.5' SECOND",
    "INTERVAL '-3' DAY",
    "INTERVAL '14' MONTH",
    "INTERVAL '2:30' HOUR TO MINUTE",
    "TIMESTAMP '2020-01-01 10:00:00.250' - TIMESTAMP '2020-01-01 09:00:00'",
    "DATE '2020-03-01' - DATE '2020-02-01'",
    "CAST('6ba7b810-9dad-11d1-80b4-00c04fd430c8' AS UUID)",
    """JSON '{"a": [1, 2], "b": "x y"}'""",
    """CAST(R'{"q": "a\\"b"}' AS JSON)""",
    """CAST(R'http://a.b/c?d="e"&f=\\g' AS URL)""",
    "INET '192.168.1.0/24'",
    "TIMESTAMP WITH TIME ZONE '2020-01-01 10:00:00.125+01:00'",
    "TIME WITH TIME ZONE '10:00:00.5+02:00'",
    "CAST('ab' AS CHAR(3))",
    "CAST('long text' AS CLOB)",
    "CAST(NULL AS JSON)",
    "CAST(NULL AS INTERVAL SECOND)",
    "CAST(NULL AS UUID)",
]


@pytest.fixture
def both(embedded_url: str, server: ServeProcess) -> Iterator[Callable[..., Answer]]:
    """Run one statement through tique on each adapter; ``(rows, type names)`` per adapter."""
    conns = {"embedded": tique.connect(embedded_url), "server": tique.connect(server.url)}

    def answer(kind: str, sql: str, params: Any = None) -> Answer:
        cur = conns[kind].cursor()
        cur.execute(sql, params)
        rows = [tuple(r) for r in cur.fetchall()] if cur.description else []
        names = [d.type_code for d in cur.description or []]
        conns[kind].commit()
        return rows, names

    yield answer
    for conn in conns.values():
        conn.close()


def _same(both: Callable[..., Answer], sql: str, params: Any = None) -> Answer:
    embedded, served = both("embedded", sql, params), both("server", sql, params)
    assert embedded == served, sql
    return embedded


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_an_expression_is_typed_alike(both: Callable[..., Answer], expression: str) -> None:
    _same(both, f"SELECT {expression}")


def test_the_values_are_pymonetdbs(both: Callable[..., Answer]) -> None:
    rows, names = _same(
        both,
        "SELECT INTERVAL '90' SECOND, INTERVAL '3' DAY, CAST('6ba7b810-9dad-11d1-80b4-00c04fd430c8' AS UUID), "
        """JSON '{"a": 1}', TIMESTAMP WITH TIME ZONE '2020-01-01 10:00:00+01:00'""",
    )
    assert names == ["sec_interval", "day_interval", "uuid", "json", "timestamptz"]
    assert rows == [
        (
            datetime.timedelta(seconds=90),
            3,
            uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8"),
            '{"a": 1}',
            datetime.datetime(2020, 1, 1, 9, 0, tzinfo=datetime.timezone.utc),
        )
    ]


def test_columns_of_a_tique_table_and_expressions_over_them(both: Callable[..., Answer], unique_name) -> None:
    name = unique_name("typed")
    for kind in ("embedded", "server"):
        both(kind, f"CREATE TABLE {name}_{kind} (k INT PRIMARY KEY, c CHAR(4), t CLOB, a TIMESTAMP, b TIMESTAMP)")
        both(
            kind,
            f"INSERT INTO {name}_{kind} VALUES (1, 'ab', 'text', TIMESTAMP '2020-01-02 00:00:00', "
            "TIMESTAMP '2020-01-01 12:00:00'), (2, NULL, NULL, NULL, NULL)",
        )
    answers = [
        both(kind, f"SELECT k, c, t, a - b, a, c || 'x' FROM {name}_{kind} ORDER BY k")
        for kind in ("embedded", "server")
    ]
    assert answers[0] == answers[1]
    rows, names = answers[0]
    assert names[:5] == ["int", "char", "clob", "sec_interval", "timestamp"]
    assert rows[0][3] == datetime.timedelta(hours=12) and rows[1][3] is None


def test_a_plain_table_of_every_other_type(both: Callable[..., Answer], unique_name) -> None:
    name = unique_name("others")
    for kind in ("embedded", "server"):
        both(
            kind,
            f"CREATE TABLE {name}_{kind} (k INT, j JSON, u URL, g UUID, i INET, z TIMESTAMP WITH TIME ZONE, "
            "s INTERVAL SECOND, d INTERVAL DAY, m INTERVAL MONTH, tz TIME WITH TIME ZONE) -- tique: plain",
        )
        both(
            kind,
            f"""INSERT INTO {name}_{kind} VALUES (1, R'{{"a": "x\\"y", "b": [1, 2]}}', R'http://a.b/c?d="e"&f=\\g',
            '6ba7b810-9dad-11d1-80b4-00c04fd430c8', '10.0.0.1', TIMESTAMP WITH TIME ZONE '2021-06-01 23:30:00-02:00',
            INTERVAL '36.125' SECOND, INTERVAL '5' DAY, INTERVAL '7' MONTH, TIME WITH TIME ZONE '23:00:00+00:00'),
            (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)""",
        )
    answers = [both(kind, f"SELECT * FROM {name}_{kind} ORDER BY k") for kind in ("embedded", "server")]
    assert answers[0] == answers[1]
    assert answers[0][0][0][1] == '{"a": "x\\"y", "b": [1, 2]}'


def test_a_statement_run_again_and_prepared_stays_typed(both: Callable[..., Answer]) -> None:
    sql = "SELECT INTERVAL '1' SECOND * %s, CAST(%s AS UUID)"
    for n in range(1, 5):  # the second run on is an EXEC of a prepared statement
        rows, names = _same(both, sql, (n, "6ba7b810-9dad-11d1-80b4-00c04fd430c8"))
        assert rows[0][0] == datetime.timedelta(seconds=n)
        assert names == ["sec_interval", "uuid"]


def test_a_table_made_again_with_other_types_is_typed_as_it_is_now(both: Callable[..., Answer], unique_name) -> None:
    name = unique_name("again")
    both("embedded", f"CREATE TABLE {name} (v INTERVAL SECOND) -- tique: plain")
    both("embedded", f"INSERT INTO {name} VALUES (INTERVAL '2' SECOND)")
    assert both("embedded", f"SELECT v FROM {name}") == ([(datetime.timedelta(seconds=2),)], ["sec_interval"])
    both("embedded", f"DROP TABLE {name}")
    both("embedded", f"CREATE TABLE {name} (v BIGINT) -- tique: plain")
    both("embedded", f"INSERT INTO {name} VALUES (2000)")
    assert both("embedded", f"SELECT v FROM {name}") == ([(2000,)], ["bigint"])


def test_statements_differing_in_literals_are_asked_once(embedded_url: str) -> None:
    """A statement's types are asked with three statements (PREPARE, its types, DEALLOCATE): once per shape, not
    once per text, or an application that writes its values into the SQL would pay them at every read."""
    conn = tique.connect(embedded_url)
    sent: list[str] = []
    conn.statement_hooks.append(lambda sql, _seconds, _error: sent.append(sql))
    cur = conn.cursor()
    for n in range(5):
        cur.execute(f"SELECT INTERVAL '{n}' SECOND * {n + 7}, 'text {n}', {n}.5")
        assert cur.fetchall() == [(datetime.timedelta(seconds=n * (n + 7)), f"text {n}", Decimal(f"{n}.5"))]
        assert [d.type_code for d in cur.description] == ["sec_interval", "char", "decimal"]
    assert len([sql for sql in sent if sql.startswith("PREPARE ")]) == 1
    conn.close()


def test_a_statement_monetdb_cannot_prepare_is_left_as_it_came(embedded_url: str) -> None:
    raw = Database.get(embedded_url).connect_raw()
    assert describe(raw.execute, "SELECT ?") is None  # MonetDB cannot type the parameter
    assert raw.execute("SELECT 1").rows == [(1,)]  # the session goes on
    raw.close()
