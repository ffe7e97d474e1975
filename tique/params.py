"""Parameters (pyformat, as pymonetdb 1.9): which placeholders a statement has, and their SQL literals.

pymonetdb formats the whole statement text with Python's ``%`` operator when parameters are given (a non-empty
tuple, list, dict or string) and sends the text untouched otherwise. tique keeps those semantics:

- ``%s`` takes the next value of a sequence, ``%(name)s`` a value of a mapping (keys it does not use are fine);
- ``%%`` is a literal percent sign, and with parameters any other ``%`` is an error (as in pymonetdb/psycopg);
- without parameters (None or empty) the text is sent as written, ``%%`` and all;
- a single string is one positional parameter;
- values are quoted by pymonetdb's own conversion (``pymonetdb.sql.monetize.convert``).

Unlike pymonetdb, a wrong count, a missing name or an odd placeholder is a ``ProgrammingError`` (pymonetdb
raises Python's TypeError/KeyError/ValueError from the ``%`` operator).
"""

from __future__ import annotations

import datetime
import decimal
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pymonetdb.sql.monetize import convert

from tique.errors import DataError, ParameterRefused, ProgrammingError

Params = Sequence[Any] | Mapping[str, Any] | None


@dataclass(frozen=True)
class Placeholder:
    start: int
    end: int
    name: str | None  # None: positional %s
    embedded: bool  # inside a quoted string, quoted identifier or comment


@dataclass(frozen=True)
class Scan:
    """The placeholders of a statement text (for statements sent with parameters)."""

    placeholders: tuple[Placeholder, ...]
    percents: tuple[int, ...]  # positions of each ``%%``
    bad: str | None  # what is wrong with a ``%`` that is neither ``%s``, ``%(name)s`` nor ``%%``
    unclosed: int | None = None  # where a quote opens that the statement never closes

    @property
    def positional(self) -> int:
        return sum(1 for p in self.placeholders if p.name is None)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.name for p in self.placeholders if p.name is not None))

    @property
    def embedded(self) -> bool:
        """A placeholder sits where SQL has no expression (a string, a comment): pymonetdb formats it into the
        text anyway, so tique does the same and plans the formatted text."""
        return any(p.embedded for p in self.placeholders)


@lru_cache(maxsize=4096)
def scan(sql: str) -> Scan:
    found: list[Placeholder] = []
    percents: list[int] = []
    bad: str | None = None
    i, n = 0, len(sql)
    state = ""  # "" | "'" | '"' | "--" | "/*"
    opened = 0  # where the current quote opened
    raw = False  # the current string is a raw one
    while i < n:
        ch = sql[i]
        if ch == "%":
            nxt = sql[i + 1 : i + 2]
            if nxt == "%":
                percents.append(i)
                i += 2
                continue
            if nxt == "s":
                found.append(Placeholder(i, i + 2, None, bool(state)))
                i += 2
                continue
            if nxt == "(":
                close = sql.find(")", i + 2)
                if close > 0 and sql[close + 1 : close + 2] == "s":
                    found.append(Placeholder(i, close + 2, sql[i + 2 : close], bool(state)))
                    i = close + 2
                    continue
            if bad is None:
                bad = f"unsupported placeholder {sql[i : i + 12]!r} at character {i + 1}"
            i += 1
            continue
        if state in ("'", '"'):
            if ch == "\\" and state == "'" and not raw and sql[i + 1 : i + 2] != "%":
                i += 2
                continue
            if ch == state and sql[i + 1 : i + 2] == state:  # a doubled quote stands for itself
                i += 2
                continue
            if ch == state:
                state = ""
        elif state == "--":
            if ch == "\n":
                state = ""
        elif state == "/*":
            if sql.startswith("*/", i):
                state = ""
                i += 1
        elif ch in ("'", '"'):
            state, opened = ch, i
            # MonetDB's raw strings (R'...') read no backslash escapes: R'a\' ends at its second quote
            raw = (
                ch == "'"
                and i > 0
                and sql[i - 1] in "rR"
                and (i < 2 or not (sql[i - 2].isalnum() or sql[i - 2] == "_"))
            )
        elif sql.startswith("--", i):
            state = "--"
        elif sql.startswith("/*", i):
            state = "/*"
        i += 1
    return Scan(tuple(found), tuple(percents), bad, opened if state in ("'", '"') else None)


_IN_LIST = re.compile(r"\bIN\s*\(\s*%s(?:\s*,\s*%s)+\s*\)", re.I)


@lru_cache(maxsize=4096)
def _short_lists(sql: str) -> tuple[tuple[int, int, int], ...]:
    """Per ``IN (%s, ...)`` list of positional placeholders (two or more) shorter than a power of two: where its
    closing parenthesis is, the index of its last parameter, and how many to add."""
    if "%s" not in sql:
        return ()
    placeholders = scan(sql).placeholders
    if any(p.embedded for p in placeholders):
        return ()
    starts = {p.start: i for i, p in enumerate(p for p in placeholders if p.name is None)}
    out = []
    for found in _IN_LIST.finditer(sql):
        marks = [found.start() + m.start() for m in re.finditer("%s", found.group())]
        if not all(m in starts for m in marks):
            continue
        n = len(marks)
        wanted = 1 << (n - 1).bit_length()
        if wanted > n:
            out.append((found.end() - 1, starts[marks[-1]], wanted - n))
    return tuple(out)


def pad_lists(sql: str, params: tuple[Any, ...]) -> tuple[str, tuple[Any, ...]]:
    """``x IN (%s, %s, %s)`` as ``x IN (%s, %s, %s, %s)`` with the last value repeated (a list means the same
    with a value twice): statements that differ only in a list's length up to the next power of two share one
    plan (planning a key read costs tens of milliseconds; TPC-C's batched NewOrder names 5 to 15 items)."""
    lists = _short_lists(sql)
    if not lists:
        return sql, params
    text, values = [], list(params)
    at = 0
    for close, _last, extra in lists:
        text += [sql[at:close], ", %s" * extra]
        at = close
    for _close, last, extra in reversed(lists):
        values[last + 1 : last + 1] = [values[last]] * extra
    text.append(sql[at:])
    return "".join(text), tuple(values)


def normalize(parameters: Any) -> tuple[Any, ...] | Mapping[str, Any] | None:
    """Parameters as pymonetdb reads them: empty means none, a string is one value. numpy and pandas scalars
    become the Python values they hold (see ``plain``)."""
    if parameters is None:
        return None
    if isinstance(parameters, str):
        return (parameters,) if parameters else None
    if isinstance(parameters, Mapping):
        if not parameters:
            return None
        if all(type(v) in _PLAIN for v in parameters.values()):
            return parameters
        return {k: plain(v) for k, v in parameters.items()}
    if isinstance(parameters, (bytes, bytearray)) or not isinstance(parameters, Sequence):
        raise ProgrammingError(
            f"parameters must be a sequence (for %s) or a mapping (for %(name)s), not {type(parameters).__name__}"
        )
    if not parameters:
        return None
    values = tuple(parameters)
    if all(type(v) in _PLAIN for v in values):
        return values
    return tuple(plain(v) for v in values)


_PLAIN = frozenset(
    {int, str, float, bool, type(None), decimal.Decimal, datetime.datetime, datetime.date, datetime.time, bytes}
)


def plain(value: Any) -> Any:
    """A parameter value as a Python value pymonetdb's conversion knows. Values read from a DataFrame are numpy
    scalars (``np.int64`` is no int, so it was refused) and pandas marks missing values with pd.NaT and pd.NA:
    those mean NULL. A list or tuple (an ``IN (%s)`` list) has its items converted."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if isinstance(value, (list, tuple)):
        return kind(plain(v) for v in value) if kind in (list, tuple) else value
    module = kind.__module__.split(".", 1)[0]
    if module == "pandas" and kind.__name__ in ("NaTType", "NAType"):
        return None
    if module == "numpy" and hasattr(value, "dtype"):
        if value.dtype.kind in "mM":  # datetime64/timedelta64: .item() of a nanosecond one is an int
            if value != value:  # NaT
                return None
            return _numpy_time(value)
        return value.item()
    return value


# ticks of numpy's units finer than a microsecond in one microsecond
_SUB_MICRO = {"ns": 10**3, "ps": 10**6, "fs": 10**9, "as": 10**12}


def _numpy_time(value: Any) -> datetime.datetime | datetime.timedelta | datetime.date:
    """A np.datetime64 / np.timedelta64 as the Python value it stands for, to the microsecond. A finer one is
    rounded half up, as MonetDB rounds the text of the same instant ('00:00:00.9999999' is 00:00:01) and as
    pd.Timestamp rounds: astype('datetime64[us]') truncated it. A timedelta in months or years has no length
    (numpy makes a month 30 days 10:29:06, its mean), so it is refused."""
    unit, count = _datetime_data(value.dtype)
    is_delta = value.dtype.kind == "m"
    if is_delta and unit in ("Y", "M"):
        raise DataError(
            f"{value!r} is in {'years' if unit == 'Y' else 'months'}, which have no fixed length (numpy would make "
            "one month 30 days 10:29:06): pass days or a finer unit, or add the months to a date yourself",
            "22008",
        )
    if unit in _SUB_MICRO:
        per = _SUB_MICRO[unit]
        ticks = int(value.astype("int64")) * count
        micros = (ticks + per // 2) // per  # floor division: half up also before 1970 (a negative tick count)
        delta = datetime.timedelta(microseconds=micros)
        return delta if is_delta else _EPOCH + delta
    return value.astype(f"{'timedelta64' if is_delta else 'datetime64'}[us]").item()


_EPOCH = datetime.datetime(1970, 1, 1)


def _datetime_data(dtype: Any) -> tuple[str, int]:
    import numpy  # only ever called with a numpy value: numpy is there

    unit, count = numpy.datetime_data(dtype)
    return str(unit), int(count)


def check(sql: str, params: tuple[Any, ...] | Mapping[str, Any]) -> Scan:
    """Check that ``params`` fit the placeholders of ``sql``; return its scan."""
    found = scan(sql)
    if found.bad:
        raise ProgrammingError(
            f"{found.bad}: with parameters use %s or %(name)s, and write a literal percent sign as %% (pyformat, "
            "as pymonetdb)"
        )
    positional, names = found.positional, found.names
    if positional and names:
        raise ProgrammingError("the statement mixes %s and %(name)s placeholders: use one style")
    if isinstance(params, Mapping):
        if positional:
            raise ProgrammingError(f"the statement has {positional} %s placeholders: pass a sequence, not a mapping")
        missing = [name for name in names if name not in params]
        if missing:
            raise ProgrammingError(f"parameter(s) {missing} missing: the mapping has {sorted(map(str, params))}")
        return found
    if names:
        raise ProgrammingError(f"the statement has named placeholders {list(names)}: pass a mapping, not a sequence")
    if len(params) != positional:
        raise ProgrammingError(
            f"the statement has {positional} %s placeholders, but {len(params)} parameters were given"
        )
    return found


def literal(value: Any) -> str:
    """A Python value as a MonetDB SQL literal, escaped the way pymonetdb escapes it."""
    kind = type(value)
    if kind is int:  # the common cases first, as pymonetdb writes them (bool is not int here)
        return str(value)
    if kind is str:
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, datetime.time) and value.tzinfo is None:
        # MonetDB 11.41 reads TIME '01:02:03.000004' as TIME(0): without the precision the fraction is lost
        return f"TIME(6) '{value.isoformat()}'"
    if isinstance(value, decimal.Decimal) and value.is_finite():
        return format(value, "f")  # str() writes 1E-10, which MonetDB would read as a double
    if isinstance(value, float) and math.isfinite(value):
        # an approximate-number literal is read as a double, exactly (-0.0 included); "0.1" would be a DECIMAL
        text = repr(float(value))  # a float subclass (numpy's float64) has a repr of its own
        return text if "e" in text else text + "e0"
    try:
        return str(convert(value))
    except Exception as exc:
        raise ParameterRefused(f"cannot pass a {type(value).__name__} as a SQL parameter: {exc}") from None


def inline(sql: str, params: tuple[Any, ...] | Mapping[str, Any]) -> str:
    """The statement with its parameters formatted into the text, exactly as pymonetdb would send it."""
    found = check(sql, params)
    cuts = sorted([(p.start, p.end, p) for p in found.placeholders] + [(i, i + 2, None) for i in found.percents])
    out: list[str] = []
    pos, index = 0, 0
    for start, end, holder in cuts:
        out.append(sql[pos:start])
        if holder is None:
            out.append("%")
        elif holder.name is None:
            out.append(literal(params[index]))  # type: ignore[index]
            index += 1
        else:
            out.append(literal(params[holder.name]))  # type: ignore[index, call-overload]
        pos = end
    out.append(sql[pos:])
    return "".join(out)


def slot_for_name(name: str) -> str:
    """The slot of a named parameter: any characters may appear in ``%(name)s``, slots are word characters."""
    return "n_" + name.encode().hex()


def value(slot: str, params: Params) -> Any:
    """The Python value a parameter slot (``pN`` or ``n_HEX``) stands for."""
    if params is None:
        raise ProgrammingError("the statement has parameters but none were given")
    if slot.startswith("p"):
        return params[int(slot[1:])]  # type: ignore[index]
    return params[bytes.fromhex(slot[2:]).decode()]  # type: ignore[index, call-overload]


def _probe(value: Any) -> Any:
    """A parameter as the engine should compare it: -0.0 as 0.0. MonetDB 11.41 hashes a DOUBLE by its bits, so
    once a column has a hash, ``k = -0.0`` misses a stored 0.0 (the soak's blind upsert of key -0.0 deleted
    nothing and its INSERT then found a duplicate). INSERT, an UPDATE's SET values and pass-through statements
    keep -0.0."""
    if isinstance(value, float) and value == 0.0:
        return 0.0
    return value


def resolve(
    slots: Sequence[str], params: Params, probe: bool = False, keep: frozenset[str] = frozenset()
) -> dict[str, str]:
    """Map each parameter slot of a statement to its SQL literal (``check`` has validated the parameters).
    ``probe``: the statement is tique's read of a snapshot (a SELECT, or an UPDATE's or DELETE's read), whose
    parameters are compared with stored values, not stored: -0.0 goes as 0.0 (see ``_probe``), except the slots
    in ``keep`` (an UPDATE's SET values, which are stored)."""
    try:
        return {s: literal(_probe(value(s, params)) if probe and s not in keep else value(s, params)) for s in slots}
    except (KeyError, IndexError, TypeError) as exc:
        raise ProgrammingError(f"parameters do not match the statement's placeholders: {exc!r}") from None
