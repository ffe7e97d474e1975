"""Value types for the round-trip tests: per MonetDB type tique accepts, a hypothesis strategy of values in the
column's canonical form (what the engine stores and reads back), and edge values."""

from __future__ import annotations

import datetime
import decimal
import struct
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st


@dataclass(frozen=True)
class ValueType:
    column: str
    sql_type: str
    values: st.SearchStrategy[Any]
    edges: tuple[Any, ...]


_WIDE = decimal.Context(prec=100)


def _decimals(precision: int, scale: int) -> st.SearchStrategy[decimal.Decimal]:
    top = 10**precision - 1
    return st.integers(-top, top).map(lambda n: decimal.Decimal(n).scaleb(-scale, _WIDE))


def _decimal_edges(precision: int, scale: int) -> tuple[decimal.Decimal, ...]:
    top = 10**precision - 1
    return tuple(decimal.Decimal(n).scaleb(-scale, _WIDE) for n in (top, -top, 0, 150, -1, 10**scale))


def _real(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20)
_TIMES = st.times()
_MAX_TS = datetime.datetime(9999, 12, 31, 23, 59, 59, 999999)
_MIN_TS = datetime.datetime(1, 1, 1)

TYPES: tuple[ValueType, ...] = (
    ValueType("b", "BOOLEAN", st.booleans(), (True, False)),
    ValueType("ti", "TINYINT", st.integers(-127, 127), (127, -127, 0)),
    ValueType("si", "SMALLINT", st.integers(-32767, 32767), (32767, -32767)),
    ValueType("i", "INT", st.integers(-(2**31) + 1, 2**31 - 1), (2**31 - 1, -(2**31) + 1)),
    ValueType("bi", "BIGINT", st.integers(-(2**63) + 1, 2**63 - 1), (2**63 - 1, -(2**63) + 1)),
    ValueType("hi", "HUGEINT", st.integers(-(2**127) + 1, 2**127 - 1), (2**127 - 1, -(2**127) + 1, 2**64)),
    ValueType("d9", "DECIMAL(9,2)", _decimals(9, 2), _decimal_edges(9, 2)),
    ValueType("d18", "DECIMAL(18,6)", _decimals(18, 6), _decimal_edges(18, 6)),
    ValueType("d20", "DECIMAL(20,2)", _decimals(20, 2), _decimal_edges(20, 2)),
    ValueType("d38", "DECIMAL(38,10)", _decimals(38, 10), _decimal_edges(38, 10)),
    ValueType("d38z", "DECIMAL(38,0)", _decimals(38, 0), _decimal_edges(38, 0)),
    ValueType(
        "r",
        "REAL",
        st.floats(width=32, allow_nan=False, allow_infinity=False),
        (-0.0, _real(3.4028234663852886e38), _real(-3.4028234663852886e38), _real(1e-45), _real(0.1)),
    ),
    ValueType(
        "f",
        "DOUBLE",
        st.floats(allow_nan=False, allow_infinity=False),
        (-0.0, 1.7976931348623157e308, -1.7976931348623157e308, 5e-324, 0.1, 0.30000000000000004, 1e16),
    ),
    ValueType("v", "VARCHAR(20)", _TEXT, ("", "é漢字🙂", "x" * 20, "'quote' \\ back")),
    ValueType("ch", "CHAR(4)", st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=4), ("", "ab")),
    ValueType("c", "CLOB", _TEXT, ("\U0010fffd", "a\nb\tc")),
    ValueType("tx", "TEXT", _TEXT, ("ünïcödé",)),
    ValueType("bl", "BLOB", st.binary(max_size=16).map(lambda b: b.replace(b"\x00", b"\x01")), (b"", b"\xff\x01")),
    ValueType(
        "dt",
        "DATE",
        st.dates(datetime.date(1, 1, 1), datetime.date(9999, 12, 31)),
        (datetime.date(1, 1, 1), datetime.date(9999, 12, 31), datetime.date(2000, 2, 29)),
    ),
    ValueType(
        "tm",
        "TIME",
        _TIMES.map(lambda t: t.replace(microsecond=0)),
        (datetime.time(0, 0), datetime.time(23, 59, 59)),
    ),
    ValueType(
        "tm6",
        "TIME(6)",
        _TIMES,
        (datetime.time(23, 59, 59, 999999), datetime.time(0, 0, 0, 1), datetime.time(12, 0, 0, 123456)),
    ),
    ValueType(
        "ts",
        "TIMESTAMP",
        st.datetimes(_MIN_TS, _MAX_TS),
        (_MAX_TS, _MIN_TS, datetime.datetime(2020, 1, 1, 0, 0, 0, 500000)),
    ),
    ValueType(
        "ts6",
        "TIMESTAMP(6)",
        st.datetimes(_MIN_TS, _MAX_TS),
        (datetime.datetime(2020, 1, 1, 12, 0, 0, 123456), datetime.datetime(1970, 1, 1, 0, 0, 0, 1)),
    ),
    ValueType(
        "ts0",
        "TIMESTAMP(0)",
        st.datetimes(_MIN_TS, datetime.datetime(9999, 12, 31, 23, 59, 59)).map(lambda t: t.replace(microsecond=0)),
        (datetime.datetime(2020, 1, 1, 12, 0, 1),),
    ),
)


def row_strategy() -> st.SearchStrategy[tuple[Any, ...]]:
    """One row: a value (or NULL) per type."""
    return st.tuples(*[st.one_of(st.none(), t.values, st.sampled_from(t.edges)) for t in TYPES])


def edge_rows() -> list[tuple[Any, ...]]:
    """Rows that together hold every edge value of every type (shorter lists padded with their first)."""
    width = max(len(t.edges) for t in TYPES)
    return [tuple(t.edges[i] if i < len(t.edges) else t.edges[0] for t in TYPES) for i in range(width)]


def same(expected: Any, got: Any) -> bool:
    """Equal in value and Python type (and sign, for a negative zero)."""
    if type(expected) is not type(got):
        return False
    if isinstance(expected, float):
        return struct.pack("d", expected) == struct.pack("d", got)
    if isinstance(expected, decimal.Decimal):
        return expected == got and expected.as_tuple().exponent == got.as_tuple().exponent
    return bool(expected == got)
