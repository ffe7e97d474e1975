"""Values as the engine's own text and back: how the checkpointer copies a version to Storage bit for bit."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

from tique.catalog import FLOAT_TYPES, TableInfo, base_type
from tique.params import literal

TEXT_TYPES = frozenset({"VARCHAR", "CHAR", "CHARACTER", "CHARACTER VARYING", "CLOB", "TEXT", "STRING"})
INT_TYPES = frozenset({"TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT"})
BOOL_TYPES = frozenset({"BOOLEAN", "BOOL"})
_INTEGER = re.compile(r"-?[0-9]+")


def zero_keys(row: Sequence[Any], key_pos: Sequence[int]) -> Sequence[Any]:
    """A row read as engine text with a key column's -0 as 0 (a Cache row written before keys were stored so):
    MonetDB 11.41 hashes a DOUBLE by its bits, so a -0 key in Storage would escape a hashed lookup of 0."""
    if not any(row[i] == "-0" for i in key_pos):
        return row
    return [("0" if i in key_pos and v == "-0" else v) for i, v in enumerate(row)]


def column_types(info: TableInfo) -> dict[str, str]:
    """Each stored column's SQL type in Storage and Cache (the hidden row id is a BIGINT, a BLOB's hex text a
    CLOB): what the checkpointer copies and compares."""
    return {c: info.physical_type(c) for c in info.stored_names}


def from_text(text: Any, sql_type: str) -> str:
    """SQL for the value whose engine text (``CAST(v AS CLOB)``) is ``text``, as the engine casts it back: exact
    for every type (DOUBLE prints the shortest text that reads back the same bits, -0 included). An interval
    prints as its count of months or seconds, which only the single-field interval reads back."""
    return text_to_sql(sql_type)(text)


@functools.lru_cache(maxsize=512)
def text_to_sql(sql_type: str) -> Callable[[Any], str]:
    """``from_text`` for one column type, its type parsed once (the checkpointer converts every value it moves)."""
    upper = sql_type.upper()
    base = base_type(sql_type)
    if base in TEXT_TYPES:  # the cheap cases (a CAST per value doubles the cost of a Storage write)
        return lambda text: "NULL" if text is None else literal(str(text))
    if upper.startswith("INTERVAL"):
        unit = "SECOND" if any(f in upper for f in ("DAY", "HOUR", "MINUTE", "SECOND")) else "MONTH"
        return lambda text: "NULL" if text is None else f"CAST(INTERVAL {literal(str(text))} {unit} AS {sql_type})"

    def cast(text: Any) -> str:
        if text is None:
            return "NULL"
        if base in INT_TYPES and _INTEGER.fullmatch(str(text)):  # digits are the integer
            return str(text)
        if base in BOOL_TYPES and text in ("true", "false"):
            return str(text)
        if base in FLOAT_TYPES and text == "-0":  # MonetDB parses '-0' as REAL +0 (as DOUBLE, -0)
            return f"CAST(CAST('-0' AS DOUBLE) AS {sql_type})"
        return f"CAST({literal(str(text))} AS {sql_type})"

    return cast
