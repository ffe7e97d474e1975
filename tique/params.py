"""Parameters (pyformat, as pymonetdb): values are quoted by pymonetdb's own SQL literal conversion."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tique.errors import ProgrammingError

Params = Sequence[Any] | Mapping[str, Any] | None


def literal(value: Any) -> str:
    """A Python value as a MonetDB SQL literal, escaped the way pymonetdb escapes it."""
    import datetime
    import decimal
    import math

    from pymonetdb.sql.monetize import convert

    if isinstance(value, datetime.time) and value.tzinfo is None:
        # MonetDB 11.41 reads TIME '01:02:03.000004' as TIME(0): without the precision the fraction is lost
        return f"TIME(6) '{value.isoformat()}'"
    if isinstance(value, decimal.Decimal) and value.is_finite():
        return format(value, "f")  # str() writes 1E-10, which MonetDB would read as a double
    if isinstance(value, float) and math.isfinite(value):
        # an approximate-number literal is read as a double, exactly (-0.0 included); "0.1" would be a DECIMAL
        text = repr(value)
        return text if "e" in text else text + "e0"
    try:
        return str(convert(value))
    except Exception as exc:
        raise ProgrammingError(f"cannot pass a {type(value).__name__} as a SQL parameter: {exc}") from None


def resolve(slots: Sequence[str], params: Params) -> dict[str, str]:
    """Map each parameter slot of a statement (``p0``, ``p1``... or ``n:name``) to its SQL literal."""
    if not slots:
        if params:
            raise ProgrammingError(f"the statement takes no parameters, {len(params)} given")
        return {}
    positional = [s for s in slots if s.startswith("p")]
    named = [s for s in slots if s.startswith("n:")]
    out: dict[str, str] = {}
    if positional:
        if not isinstance(params, Sequence) or isinstance(params, (str, bytes)):
            raise ProgrammingError(f"the statement takes {len(positional)} positional parameters (%s)")
        if len(params) != len(positional):
            raise ProgrammingError(f"the statement takes {len(positional)} parameters, {len(params)} given")
        for slot in positional:
            out[slot] = literal(params[int(slot[1:])])
    if named:
        if not isinstance(params, Mapping):
            raise ProgrammingError(f"the statement takes named parameters {[s[2:] for s in named]}")
        for slot in named:
            name = slot[2:]
            if name not in params:
                raise ProgrammingError(f"parameter {name!r} is missing")
            out[slot] = literal(params[name])
    return out
