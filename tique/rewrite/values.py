"""Literal SQL values as Python values, so simple INSERTs need no engine round trip to know their rows."""

from __future__ import annotations

import datetime
import decimal
from typing import Any

from sqlglot import exp

from tique.errors import DataError, NotSupportedError


def python_value(node: exp.Expression) -> Any:
    """The Python value of a literal expression; NotSupportedError if it is not a plain literal."""
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        text = node.this
        if any(ch in text for ch in ".eE"):
            return decimal.Decimal(text) if "e" not in text.lower() else float(text)
        return int(text)
    if isinstance(node, exp.Neg):
        inner = python_value(node.this)
        if isinstance(inner, (int, float, decimal.Decimal)) and not isinstance(inner, bool):
            return -inner
    if isinstance(node, exp.Paren):
        return python_value(node.this)
    raise NotSupportedError(f"not a literal: {node.sql()}")


_INT_TYPES = ("TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT", "HUGEINT")


def coerce(value: Any, sql_type: str, column: str) -> Any:
    """Bring a value to the Python type its column reads back as, so keys hash the same however written."""
    if value is None:
        return None
    base = sql_type.upper().split("(")[0].strip()
    try:
        if base in _INT_TYPES:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError("not an integer")
            return int(value)
        if base in ("DECIMAL", "NUMERIC"):
            scale = int(sql_type.split(",")[1].rstrip(")").strip()) if "," in sql_type else 0
            return decimal.Decimal(str(value)).quantize(decimal.Decimal(1).scaleb(-scale))
        if base in ("REAL", "FLOAT", "DOUBLE", "DOUBLE PRECISION"):
            return float(value)
        if base in ("BOOLEAN", "BOOL"):
            if isinstance(value, str):
                return {"true": True, "false": False}[value.lower()]
            return bool(value)
        if base == "DATE" and isinstance(value, str):
            return datetime.date.fromisoformat(value)
        if base == "TIMESTAMP" and isinstance(value, str):
            return datetime.datetime.fromisoformat(value)
        if base in ("VARCHAR", "CHAR", "TEXT", "CLOB", "STRING", "CHARACTER VARYING", "CHARACTER"):
            text = value if isinstance(value, str) else str(value)
            if "(" in sql_type and base in ("VARCHAR", "CHAR", "CHARACTER VARYING", "CHARACTER"):
                limit = int(sql_type.split("(")[1].rstrip(")"))
                if len(text) > limit:
                    raise DataError(
                        f"value too long for column {column!r} of type {sql_type}: {len(text)} characters",
                        "22001",
                    )
            return text
    except DataError:
        raise
    except (ValueError, ArithmeticError, KeyError, TypeError) as exc:
        raise DataError(f"value {value!r} does not fit column {column!r} of type {sql_type}: {exc}", "22018") from None
    return value
