"""Guarantee: a value that does not fit its column is refused by the statement that writes it - a DataError naming
the table, the column and the value - and that statement has no effect: the transaction goes on, its earlier
writes are kept, later statements and COMMIT work. Values given as literals or parameters and values the engine
computes (UPDATE ... SET c = expression, INSERT ... SELECT) alike, and the accepted/refused boundary is MonetDB's
own: each statement also runs on a plain twin table (``-- tique: plain``, left to MonetDB) in the same database.

Found by the reliability probe (issue 16): 70000 into a SMALLINT was accepted (rowcount 1) and the next read or
COMMIT failed with ``calc.sht:operation failed``, losing the transaction; a 16-character parameter in an UPDATE
of a VARCHAR(10) was silently truncated; ``SET d = d * 1000`` of a DECIMAL(5,2) stored a wrong value over MAPI.
"""

from __future__ import annotations

import decimal
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import tique

COLUMNS = {
    "ti": "TINYINT",
    "si": "SMALLINT",
    "i": "INT",
    "bi": "BIGINT",
    "hi": "HUGEINT",
    "d": "DECIMAL(5,2)",
    "v": "VARCHAR(10)",
    "c": "CHAR(4)",
    "r": "REAL",
    "f": "DOUBLE",
    "dt": "DATE",
    "tm": "TIME",
    "ts": "TIMESTAMP",
}
# wide sources, so that the engine computes the value written: SET si = w_int
WIDE = {"w_int": "HUGEINT", "w_dec": "DECIMAL(38,6)", "w_text": "CLOB", "w_dbl": "DOUBLE"}
SCHEMA = ", ".join(f"{n} {t}" for n, t in {**COLUMNS, **WIDE}.items())
GOOD_ROW = "1, 1, 1, 1, 1, 1.5, 'a', 'b', 1.5, 1.5, DATE '2020-01-01', TIME '12:00:00', TIMESTAMP '2020-01-01 00:00:00'"

Connect = Callable[..., tique.Connection]


_made: dict[str, tuple[str, str]] = {}


@pytest.fixture
def tables(connect: Connect, url: str, unique_name: Callable[[str], str]) -> tuple[tique.Connection, str, str]:
    """A connection, a tique table and its plain twin (made once per database), each holding row 1 alone. The
    connection lets a transaction go on after a failed statement (on_statement_error="continue"): that no value
    of a refused statement was buffered shows in what the transaction commits after it."""
    conn = connect(on_statement_error="continue")
    cur = conn.cursor()
    if url not in _made:
        name = unique_name("vchk")
        cur.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, {SCHEMA})")
        cur.execute(f"CREATE TABLE {name}_twin (id INT PRIMARY KEY, {SCHEMA}) -- tique: plain")
        conn.commit()
        _made[url] = (name, f"{name}_twin")
    for table in _made[url]:
        cur.execute(f"DELETE FROM {table}")
        cur.execute(f"INSERT INTO {table} (id, {', '.join(COLUMNS)}) VALUES (1, {GOOD_ROW})")
        conn.commit()
    return (conn, *_made[url])


@dataclass(frozen=True)
class Case:
    label: str
    sql: str  # {t} is the table
    params: tuple[Any, ...] | None
    column: str
    value: str | None  # what the message must show of the value (None: the engine computed it and refused)
    twin_refuses: bool = True  # False where tique refuses what MonetDB stores (a year tique cannot keep...)


CASES = [
    Case("insert literal smallint", "INSERT INTO {t} (id, si) VALUES (5, 70000)", None, "si", "70000"),
    Case("insert literal tinyint", "INSERT INTO {t} (id, ti) VALUES (5, 128)", None, "ti", "128"),
    Case("insert smallint min (NULL)", "INSERT INTO {t} (id, si) VALUES (5, -32768)", None, "si", "-32768"),
    Case("insert hugeint", f"INSERT INTO {{t}} (id, hi) VALUES (5, {2**127})", None, "hi", str(2**127)),
    Case("insert parameter int", "INSERT INTO {t} (id, i) VALUES (%s, %s)", (5, 2**31), "i", str(2**31)),
    Case("insert parameter bigint", "INSERT INTO {t} (id, bi) VALUES (%s, %s)", (5, 2**63), "bi", str(2**63)),
    Case("insert parameter varchar", "INSERT INTO {t} (id, v) VALUES (%s, %s)", (5, "x" * 16), "v", "x" * 16),
    Case("insert parameter real", "INSERT INTO {t} (id, r) VALUES (%s, %s)", (5, 1e300), "r", "1e+300"),
    Case("insert literal date", "INSERT INTO {t} (id, dt) VALUES (5, '2020-02-30')", None, "dt", "2020-02-30"),
    Case("insert literal time", "INSERT INTO {t} (id, tm) VALUES (5, '24:00:00')", None, "tm", "24:00:00"),
    Case("update parameter smallint", "UPDATE {t} SET si = %s WHERE id = 1", (70000,), "si", "70000"),
    Case("update parameter int", "UPDATE {t} SET i = %s WHERE id = 1", (2**31,), "i", str(2**31)),
    Case("update parameter bigint", "UPDATE {t} SET bi = %s WHERE id = 1", (2**63,), "bi", str(2**63)),
    Case("update parameter varchar", "UPDATE {t} SET v = %s WHERE id = 1", ("y" * 16,), "v", "y" * 16),
    Case("update literal varchar", "UPDATE {t} SET v = 'abcdefghijklmnop' WHERE id = 1", None, "v", "abcdefghijklmnop"),
    # MonetDB 11.41 stores a literal of the column's scale unchecked (1000.00, even 999999.99, in a DECIMAL(5,2))
    # while its CAST and its conversions refuse it: tique refuses it as SQL says and as the engine's CAST does
    Case(
        "update parameter decimal",
        "UPDATE {t} SET d = %s",
        (decimal.Decimal("1000.00"),),
        "d",
        "1000.00",
        twin_refuses=False,
    ),
    Case("update parameter decimal rescaled", "UPDATE {t} SET d = %s", (decimal.Decimal("1000.0"),), "d", "1000.0"),
    Case("update computed smallint", "UPDATE {t} SET si = si + 40000", None, "si", "40001"),
    Case("update computed decimal", "UPDATE {t} SET d = d * 1000", None, "d", "1500"),
    Case("update computed varchar", "UPDATE {t} SET v = v || 'abcdefghijklmnop'", None, "v", "aabcdefghijklmnop"),
    Case("update computed real", "UPDATE {t} SET r = f * 1e300", None, "r", "1.5e+300"),
    Case("update computed char", "UPDATE {t} SET c = c || 'éééé'", None, "c", "béééé"),
    Case(
        "update computed timestamp",
        "UPDATE {t} SET ts = ts + INTERVAL '10000' YEAR",
        None,
        "ts",
        "12020-01-01",
        twin_refuses=False,
    ),
    Case(
        "update computed date",
        "UPDATE {t} SET dt = dt + INTERVAL '10000' YEAR",
        None,
        "dt",
        "12020-01-01",
        twin_refuses=False,
    ),
    Case("update overflow in the engine", "UPDATE {t} SET f = f * 1e308 * 10", None, "f", None),
    Case("insert select smallint", "INSERT INTO {t} (id, si) SELECT id + 4, i + 70000 FROM {t}", None, "si", "70001"),
    Case(
        "insert select varchar", "INSERT INTO {t} (id, v) SELECT id + 4, v || 'ÄÖÜäöüß1234' FROM {t}", None, "v", None
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.label for c in CASES])
def test_refused_at_the_statement_and_the_transaction_goes_on(
    connect: Connect, tables: tuple[tique.Connection, str, str], case: Case
) -> None:
    conn, table, twin = tables
    cur = conn.cursor()
    if case.twin_refuses:  # MonetDB itself refuses the value: it is an overflow, not tique's choice
        with pytest.raises(tique.DatabaseError):
            cur.execute(case.sql.format(t=twin), case.params)
            conn.commit()
        conn.rollback()

    cur.execute(f"INSERT INTO {table} (id, si) VALUES (2, 2)")  # an earlier write of the transaction
    with pytest.raises(tique.DataError) as refused:
        cur.execute(case.sql.format(t=table), case.params)
    message = str(refused.value)
    assert table in message and repr(case.column) in message, message
    if case.value is not None:
        assert case.value in message, message
    assert "tq_" not in message, f"tique's internal names leak into the message: {message}"

    cur.execute(f"UPDATE {table} SET i = i + 10 WHERE id = 1")  # the transaction goes on
    cur.execute(f"SELECT id, si, i FROM {table} ORDER BY id")
    assert cur.fetchall() == [(1, 1, 11), (2, 2, None)]
    conn.commit()
    reader = connect()
    rcur = reader.cursor()
    rcur.execute(f"SELECT id, si, i, {case.column} FROM {table} ORDER BY id")
    rows = rcur.fetchall()
    assert [r[:3] for r in rows] == [(1, 1, 11), (2, 2, None)], "earlier writes lost or the refused one applied"
    reader.commit()


# ---- the boundary is MonetDB's: generated values near each type's limits -------------------------------------


def _near(limit: int) -> st.SearchStrategy[int]:
    return st.integers(-3, 3).map(lambda d: limit + d) | st.integers(-3, 3).map(lambda d: -limit + d)


def _date_text(ymd: tuple[int, int, int]) -> str:
    year, month, day = ymd
    return f"{year:04d}-{month:02d}-{day:02d}"


def _time_text(hms: tuple[int, int, int]) -> str:
    hours, minutes, seconds = hms
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}"


def _timestamp_text(parts: tuple[int, int, int, int, int]) -> str:
    year, month, day, hours, seconds = parts
    return f"{_date_text((year, month, day))} {hours:02d}:59:{seconds:02d}"


_YEARS, _HOURS, _SECONDS = st.integers(1, 9999), st.integers(22, 24), st.integers(58, 61)
_FLT_MAX = struct.unpack("f", bytes.fromhex("ffff7f7f"))[0]
_CHARS = st.sampled_from(["a", "Z", "é", "e\u0301", "ß", "€", "😀", "漢", " "])

WRITES: list[tuple[str, str, st.SearchStrategy[Any]]] = [
    ("ti", "w_int", _near(2**7)),
    ("si", "w_int", _near(2**15)),
    ("i", "w_int", _near(2**31)),
    ("bi", "w_int", _near(2**63)),
    ("d", "w_dec", st.decimals("-1000.01", "1000.01", places=4)),
    ("d", "w_dec", st.sampled_from(["999.99", "999.994", "999.995", "-999.995", "1000", "0.005"]).map(decimal.Decimal)),
    ("v", "w_text", st.lists(_CHARS, min_size=8, max_size=12).map("".join)),
    ("c", "w_text", st.lists(_CHARS, min_size=2, max_size=6).map("".join)),
    ("r", "w_dbl", st.floats(_FLT_MAX * 0.999999, _FLT_MAX * 1.000001) | st.floats(-1e39, 1e39)),
    ("dt", "w_text", st.tuples(st.integers(1, 9999), st.integers(0, 13), st.integers(0, 32)).map(_date_text)),
    ("tm", "w_text", st.tuples(st.integers(0, 25), st.integers(0, 61), st.integers(0, 61)).map(_time_text)),
    ("ts", "w_text", st.tuples(_YEARS, st.integers(1, 12), st.integers(1, 31), _HOURS, _SECONDS).map(_timestamp_text)),
]


def _outcome(conn: tique.Connection, table: str, column: str, sql: str, params: tuple[Any, ...] | None) -> str:
    """What a write of row 1 or 2 does: the value stored in ``column`` (as the engine prints it), or 'refused'."""
    cur = conn.cursor()
    try:
        cur.execute(sql, params)
        cur.execute(f"SELECT CAST({column} AS VARCHAR(100)) FROM {table} WHERE id = 1 OR id = 2 ORDER BY id DESC")
        stored = cur.fetchone()[0]
        cur.execute(f"DELETE FROM {table} WHERE id = 2")
        conn.commit()
        return str(stored)
    except tique.DatabaseError:
        conn.rollback()
        return "refused"


def _same_as_twin(conn: tique.Connection, table: str, twin: str, column: str, wide: str, value: Any) -> None:
    """Write ``value`` to ``column`` four ways on both tables: same outcome, same stored value."""
    results: dict[str, list[str]] = {}
    for name in (table, twin):
        cur = conn.cursor()
        cur.execute(f"UPDATE {name} SET {wide} = %s, {column} = NULL WHERE id = 1", (value,))
        conn.commit()
        writes = [
            (f"UPDATE {name} SET {column} = {wide} WHERE id = 1", None),  # the engine computes the value
            (f"UPDATE {name} SET {column} = %s WHERE id = 1", (value,)),  # a parameter
            (f"INSERT INTO {name} (id, {column}) SELECT 2, {wide} FROM {name} WHERE id = 1", None),
            (f"INSERT INTO {name} (id, {column}) VALUES (2, %s)", (value,)),  # literal rows: checked in Python
        ]
        results[name] = [_outcome(conn, name, column, sql, params) for sql, params in writes]
    assert results[table] == results[twin], f"{column} := {value!r}: tique {results[table]}, MonetDB {results[twin]}"


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.generate])
@given(data=st.data())
def test_boundary_is_monetdbs(tables: tuple[tique.Connection, str, str], data: st.DataObject) -> None:
    column, wide, values = data.draw(st.sampled_from(WRITES))
    _same_as_twin(*tables, column, wide, data.draw(values))


EDGES: list[tuple[str, Any]] = [
    ("si", -32767),
    ("si", -32768),  # MonetDB's NULL
    ("hi", -(2**127) + 1),
    ("r", _FLT_MAX),
    ("r", 3.4028235092542863e38),  # above the largest REAL, rounds to it in Python's struct
    ("v", "e\u0301" * 5),  # 10 code points, 5 letters: MonetDB counts code points
    ("v", "😀" * 10),
    ("c", "abcde"),
    ("d", decimal.Decimal("999.995")),
    ("d", decimal.Decimal("-999.994")),
    ("dt", "2020-02-29"),
    ("dt", "2021-02-29"),
    ("tm", "12:53:60"),  # second 60 is the next minute's first (but MonetDB 11.41 converts the text '23:59:60'
    # in a column to 24:00:00, which no client can read back, and a literal to 00:00:00: tique refuses the former)
    ("tm", "24:00:00"),
    ("ts", "2020-12-31 23:59:60"),
    ("ts", "2020-12-31 12:00:60.25"),
]
_WIDE_OF = {"hi": "w_int", "r": "w_dbl", "v": "w_text", "c": "w_text", "d": "w_dec", "si": "w_int"}


def test_edges_as_monetdb(tables: tuple[tique.Connection, str, str]) -> None:
    for column, value in EDGES:
        _same_as_twin(*tables, column, _WIDE_OF.get(column, "w_text"), value)


# ---- bulk loads ---------------------------------------------------------------------------------------------


def test_bulk_load_refuses_naming_table_column_and_value(
    connect: Connect, unique_name: Callable[[str], str], tmp_path: Any
) -> None:
    conn = connect()
    table = unique_name("vload")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, s SMALLINT, v VARCHAR(3))")
    conn.commit()
    with pytest.raises(tique.DataError) as refused:
        conn.bulk_load(table, [(1, 1, "a"), (2, 70000, "b")])
    message = str(refused.value)
    assert repr(table) in message and "'s'" in message and "70000" in message, message

    csv = tmp_path / "rows.csv"
    csv.write_text("3,7,abcdef\n")
    with pytest.raises(tique.DataError) as refused:
        conn.bulk_load_csv(table, csv)
    message = str(refused.value)
    assert repr(table) in message and "abcdef" in message and "__storage" not in message, message

    cur.execute(f"SELECT COUNT(*) FROM {table}")
    assert cur.fetchone() == (0,), "a refused load left rows behind"
    conn.bulk_load(table, [(4, 4, "ok")])  # the connection goes on
    cur.execute(f"SELECT id, s, v FROM {table}")
    assert cur.fetchall() == [(4, 4, "ok")]
    conn.commit()


def test_unreadable_result_value_keeps_the_transaction(tables: tuple[tique.Connection, str, str]) -> None:
    """A value the engine computes in a SELECT that Python cannot hold (a year past 9999) fails that SELECT with a
    DataError; the connection and its transaction go on (over MAPI the session used to be dropped)."""
    conn, table, _ = tables
    cur = conn.cursor()
    cur.execute(f"UPDATE {table} SET i = 7 WHERE id = 1")
    with pytest.raises(tique.DataError):
        cur.execute(f"SELECT dt + INTERVAL '10000' YEAR FROM {table}")
    cur.execute(f"SELECT i FROM {table} WHERE id = 1")
    assert cur.fetchall() == [(7,)]
    conn.commit()
