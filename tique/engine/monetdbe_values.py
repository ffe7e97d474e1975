"""Decoding a monetdbe result: the C API's typed columns into Python values (HUGEINT and DECIMAL included)."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable
from typing import Any

from tique.engine.base import Column, Result
from tique.engine.udf import held_fetch
from tique.errors import OperationalError, from_monetdb
from tique.gc_paused import paused

# monetdbe_types in the C API; 5 (int128, HUGEINT) is missing from the wheel's cffi enum.
_C_TYPES: dict[int, tuple[str, str | None]] = {
    0: ("boolean", "bool"),
    1: ("tinyint", "int8_t"),
    2: ("smallint", "int16_t"),
    3: ("int", "int32_t"),
    4: ("bigint", "int64_t"),
    5: ("hugeint", None),
    6: ("bigint", "size_t"),
    7: ("real", "float"),
    8: ("double", "double"),
    9: ("varchar", "str"),
    10: ("blob", "blob"),
    11: ("date", "date"),
    12: ("time", "time"),
    13: ("timestamp", "timestamp"),
}
_HUGE_NIL = -(2**127)
# results of at most this many rows are fetched (and cleaned up) with the GIL held: the fetch copies every string,
# so a 1000-row result of 200 kB strings held it 179 ms (a review); 64 such rows, 6 ms, as when it is let go
HELD_FETCH_ROWS = 64
_WIDE = decimal.Context(prec=100)  # 38-digit decimals: the default context keeps 28


def read_result(ffi: Any, lib: Any, res: Any) -> Result:
    nrows = int(res.nrows)
    columns: list[Column] = []
    values: list[list[Any]] = []
    col_p = ffi.new("monetdbe_column **")
    string, pointers = ffi.string, _pointer_types(ffi)
    if nrows <= HELD_FETCH_ROWS:  # held: see udf.held_fetch
        held, at, into = held_fetch(), int(ffi.cast("uintptr_t", res)), int(ffi.cast("uintptr_t", col_p))

        def fetch(c: int) -> Any:
            message = held(at, into, c)
            return ffi.cast("char *", message) if message else None
    else:  # a large column may take a while to hand over: other threads run meanwhile

        def fetch(c: int) -> Any:
            return fetch_column(lib, res, col_p, c)

    for c in range(res.ncols):
        err = fetch(c)
        if err:
            raise from_monetdb(string(err).decode(), "reading a result column")
        col = col_p[0]
        ctype, cname = col.type, col.name
        name = string(cname).decode() if cname else f"%{c}"
        if ctype == 5:
            scale = _hugeint_scale(ffi, col)
            columns.append(_column(name, "decimal" if scale else "hugeint", scale if scale else None))
            with paused(nrows):
                values.append(_read_hugeint(ffi, col, nrows, scale))
            continue
        pointer = pointers.get(ctype)
        if pointer is None:
            raise OperationalError(f"result column {name!r} has a type the embedded driver cannot read ({ctype})")
        typed = ffi.cast(pointer, col)
        type_name, scale = _C_TYPES[ctype][0], 0
        if 1 <= ctype <= 4:
            factor = typed.scale
            if factor and factor > 1:
                type_name, scale = "decimal", len(str(int(factor))) - 1
        columns.append(_column(name, type_name, scale if type_name == "decimal" else None))
        with paused(nrows):  # the values and rows built; not the hand-over above (see gc_paused)
            values.append(_read_column(ffi, ctype, typed, nrows, scale))
    with paused(nrows):
        rows = list(zip(*values)) if values else []
    return Result(columns=columns, rows=rows, rowcount=nrows)


def fetch_column(lib: Any, res: Any, col_p: Any, c: int) -> Any:
    """A column of a large result handed over by the kernel, the GIL let go: other threads run meanwhile."""
    return lib.monetdbe_result_fetch(res, col_p, c)


_COLUMNS: dict[tuple[str, str, int | None], Column] = {}


def _column(name: str, type_name: str, scale: int | None) -> Column:
    """The result column, made once per name and type (a frozen dataclass costs microseconds to build, and a
    statement's result has its columns again each time it runs)."""
    key = (name, type_name, scale)
    found = _COLUMNS.get(key)
    if found is None:
        if len(_COLUMNS) > 10_000:  # names made up by queries (aliases, expressions) could grow it for good
            _COLUMNS.clear()
        found = _COLUMNS[key] = Column(name, type_name, scale=scale)
    return found


def _read_column(ffi: Any, ctype: int, col: Any, n: int, scale: int) -> list[Any]:
    if n == 0:
        return []
    if ctype in (1, 2, 3, 4, 6, 7, 8, 0):
        nil = col.null_value
        raw = ffi.unpack(col.data, n)
        if ctype in (7, 8):  # floating point nil is NaN in MonetDB's C API
            return [None if v != v or v == nil else v for v in raw]
        if ctype == 0:
            return [None if v == nil else bool(v) for v in raw]
        if scale:
            return [None if v == nil else decimal.Decimal(v).scaleb(-scale, _WIDE) for v in raw]
        return [None if v == nil else v for v in raw]
    if ctype == 9:  # the C API gives a NULL pointer for the engine's nil string
        string = ffi.string
        return [string(p).decode() if p else None for p in ffi.unpack(col.data, n)]
    convert = _CONVERTERS[ctype]
    is_null: Callable[[Any], int] = col.is_null
    return [None if is_null(col.data + i) else convert(ffi, col.data[i]) for i in range(n)]


_POINTER_TYPES: dict[int, dict[int, Any]] = {}


def _pointer_types(ffi: Any) -> dict[int, Any]:
    """``monetdbe_column_<c type> *`` per monetdbe type code, looked up once per ffi (a cast by the type's name
    parses it each time)."""
    found = _POINTER_TYPES.get(id(ffi))
    if found is None:
        found = _POINTER_TYPES[id(ffi)] = {
            code: ffi.typeof(f"monetdbe_column_{c_name} *") for code, (_, c_name) in _C_TYPES.items() if c_name
        }
    return found


# struct monetdbe_column_int128_t {type; data; count; name; __int128 null_value; double scale; is_null}: the
# wheel's cffi module does not declare it; the 128-bit null_value is 16-byte aligned, so scale sits at byte 48.
_HUGE_SCALE_OFFSET = 48


def _hugeint_scale(ffi: Any, col: Any) -> int:
    """Decimal digits of a HUGEINT-backed column (a DECIMAL with precision above 18); 0 for a plain HUGEINT."""
    factor = ffi.cast("double *", ffi.cast("char *", col) + _HUGE_SCALE_OFFSET)[0]
    return len(str(int(factor))) - 1 if factor > 1 else 0


def _read_hugeint(ffi: Any, col: Any, n: int, scale: int) -> list[Any]:
    if n == 0:
        return []
    raw = ffi.buffer(ffi.cast("char *", col.data), 16 * n)[:]
    out: list[Any] = []
    for i in range(n):
        v = int.from_bytes(raw[16 * i : 16 * i + 16], "little", signed=True)
        out.append(None if v == _HUGE_NIL else decimal.Decimal(v).scaleb(-scale, _WIDE) if scale else v)
    return out


def _blob(ffi: Any, v: Any) -> bytes:
    return bytes(ffi.buffer(v.data, v.size))


def _date(ffi: Any, v: Any) -> datetime.date:
    return datetime.date(v.year, v.month, v.day)


def _time(ffi: Any, v: Any) -> datetime.time:
    return datetime.time(v.hours, v.minutes, v.seconds, v.ms * 1000)


def _timestamp(ffi: Any, v: Any) -> datetime.datetime:
    d, t = v.date, v.time
    return datetime.datetime(d.year, d.month, d.day, t.hours, t.minutes, t.seconds, t.ms * 1000)


_CONVERTERS: dict[int, Callable[[Any, Any], Any]] = {10: _blob, 11: _date, 12: _time, 13: _timestamp}
