"""Literal SQL values as Python values, and Python values brought to a column's type exactly as MonetDB brings
them: tique keeps written rows in the client, hashes and compares their keys there, so each value must already
be what the engine would store (measured on MonetDB 11.41; tests/adversarial/test_typed_keys.py compares this
module with the engine's own CAST for generated values)."""

from __future__ import annotations

import datetime
import decimal
import functools
import math
import re
import struct
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from tique.errors import DataError, NotSupportedError, ProgrammingError

# Enough digits for DECIMAL(38,x) and HUGEINT (Python's default context has 28); MonetDB rounds half away from
# zero when it drops digits (CAST(1.005 AS DECIMAL(10,2)) = 1.01, -1.005 -> -1.01).
DECIMALS = decimal.Context(prec=100, rounding=decimal.ROUND_HALF_UP, Emax=999999, Emin=-999999)


def python_value(node: exp.Expression) -> Any:
    """The Python value of a literal expression; NotSupportedError if it is not a plain literal."""
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return monetdb_string(node.this)
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
    # printed as PostgreSQL does (MonetDB's dialect derives from it): the default dialect fails on X''
    raise NotSupportedError(f"not a literal: {node.sql(dialect='postgres')}")


_ESCAPED = re.compile(r"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|([uU])|(.))", re.S)
_CONTROL = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "b": "\b", "a": "\a"}


def monetdb_string(text: str) -> str:
    """The string MonetDB 11.41 reads from a string literal's text (between its quotes, '' already one quote): it
    reads backslash escapes in every string literal, unlike the SQL standard - \\n, \\t, \\r, \\f, \\b, \\a,
    \\ooo (octal), \\xhh, \\uhhhh, \\Uhhhhhhhh; any other \\c is c - and a NUL ends the string (measured).

    \\ooo and \\xhh are one *byte* each, not a code point: the literal is a sequence of bytes that MonetDB keeps
    as UTF-8 text, so '\\xc3\\xa9' is 'é' (one character) and '\\xe9' alone is not text at all. \\u and \\U
    are code points, written into the bytes as UTF-8. When the bytes are not valid UTF-8 (a lone \\xe9, an octal
    past \\377, a \\u surrogate, a \\U past U+10FFFF, a byte escape followed by a \\u that does not continue
    it) MonetDB stores them anyway and then reads them back inconsistently (length, octet_length and the value
    itself vary between statements; measured; \\u0000 as well): tique refuses such a literal with a DataError
    rather than store something else."""
    if "\\" not in text:
        return text
    out = bytearray()
    pos = 0
    for m in _ESCAPED.finditer(text):
        out += text[pos : m.start()].encode("utf-8", "surrogatepass")
        pos = m.end()
        octal, hexa, u4, u8, bad_u, other = m.groups()
        if octal or hexa:
            byte = int(octal, 8) if octal else int(hexa, 16)
            if byte > 0xFF:
                raise _not_utf8(text, f"\\{octal} is past \\377, not a byte")
            out.append(byte)
        elif u4 or u8:
            point = int(u4 or u8, 16)
            # MonetDB reads \\u0000 inconsistently too (not as the NUL that \\0 and \\x00 are; measured)
            if point == 0 or point > 0x10FFFF or 0xD800 <= point <= 0xDFFF:
                raise _not_utf8(text, f"\\{'u' if u4 else 'U'}{u4 or u8} is not a character MonetDB stores")
            out += chr(point).encode("utf-8")
        elif bad_u:
            raise ProgrammingError(
                f"invalid \\{bad_u} escape in the string literal {text!r}: MonetDB reads \\u and 4 hex digits, "
                "\\U and 8",
                "42000",
            )
        else:
            out += _CONTROL.get(other, other).encode("utf-8", "surrogatepass")
    out += text[pos:].encode("utf-8", "surrogatepass")
    # a NUL (written \\0 or \\x00) ends the string; the bytes after it are never read, valid or not
    out = out.split(b"\0", 1)[0]
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _not_utf8(text, f"its bytes are not UTF-8 ({e.reason} at byte {e.start})") from None


def _not_utf8(text: str, why: str) -> DataError:
    return DataError(
        f"the string literal {text!r} is not UTF-8 text: {why}. MonetDB reads \\xhh and \\ooo escapes as bytes "
        "of UTF-8 text ('\\xc3\\xa9' is 'é') and stores invalid bytes as a value it cannot read back "
        "consistently, so tique refuses it; write the character itself, or \\u/\\U with its code point",
        "22021",
    )


# ---- column types ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SqlType:
    """A column type as tique needs it: its family, and its precision and scale where they matter."""

    base: str  # INT family members keep their own name; see TYPES
    precision: int | None = None
    scale: int = 0
    length: int | None = None  # VARCHAR(n) / CHAR(n)


_INT_LIMITS = {"TINYINT": 7, "SMALLINT": 15, "INT": 31, "BIGINT": 63, "HUGEINT": 127}  # nil is the minimum
_INT_NAMES = {"INTEGER": "INT", "INT128": "HUGEINT"}
_STRINGS = {"VARCHAR", "CHAR", "CHARACTER", "CHARACTER VARYING", "TEXT", "CLOB", "STRING"}
_FLOATS = {"DOUBLE": "DOUBLE", "DOUBLE PRECISION": "DOUBLE", "FLOAT": "DOUBLE", "REAL": "REAL"}
_TYPE_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9 ]*?)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*$")

SUPPORTED = (
    "BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, HUGEINT, DECIMAL(p,s), REAL, DOUBLE, FLOAT, VARCHAR(n), CHAR(n), "
    "TEXT/CLOB/STRING, BLOB, DATE, TIME(p), TIMESTAMP(p)"
)


@functools.lru_cache(maxsize=1024)
def sql_type(text: str) -> SqlType:
    """Parse a column type as tique's catalog spells it; NotSupportedError for a type tique cannot keep exact."""
    found = _TYPE_RE.match(text)
    if not found:
        raise NotSupportedError(f"column type {text} is not supported by tique (supported: {SUPPORTED})")
    name = " ".join(found.group(1).upper().split())
    first = int(found.group(2)) if found.group(2) else None
    second = int(found.group(3)) if found.group(3) else None
    name = _INT_NAMES.get(name, name)
    if name in _INT_LIMITS and first is None:
        return SqlType(name)
    if name in ("BOOLEAN", "BOOL") and first is None:
        return SqlType("BOOLEAN")
    if name in ("DECIMAL", "NUMERIC", "DEC"):
        precision = 18 if first is None else first  # MonetDB's DECIMAL is DECIMAL(18,3)
        scale = 3 if first is None else (second or 0)
        return SqlType("DECIMAL", precision, scale)
    if name in _FLOATS and (first is None or name == "FLOAT"):
        if name == "FLOAT" and first is not None:
            return SqlType("REAL" if first <= 24 else "DOUBLE")
        return SqlType(_FLOATS[name])
    if name in _STRINGS and second is None:
        bounded = name in ("VARCHAR", "CHAR", "CHARACTER", "CHARACTER VARYING")
        if name in ("CHAR", "CHARACTER") and first is None:
            first = 1  # SQL's CHAR is CHAR(1)
        return SqlType("VARCHAR", length=first if bounded else None)
    if name == "BLOB" and first is None:
        return SqlType("BLOB")
    if name == "DATE" and first is None:
        return SqlType("DATE")
    if name in ("TIME", "TIMESTAMP") and second is None:
        default = 0 if name == "TIME" else 6  # MonetDB's defaults
        precision = default if first is None else first
        if precision > 6:
            raise NotSupportedError(f"column type {text}: MonetDB keeps at most 6 fractional digits")
        return SqlType(name, precision)
    raise NotSupportedError(f"column type {text} is not supported by tique (supported: {SUPPORTED})")


def is_temporal(text: str) -> bool:
    """TIME and TIMESTAMP: the embedded engine's C API reads them in milliseconds only (see exact.py)."""
    try:
        return sql_type(text).base in ("TIME", "TIMESTAMP")
    except NotSupportedError:
        return False


# ---- coercion ----------------------------------------------------------------------------------------------


def coerce(value: Any, sql_type_text: str, column: str, table: str | None = None) -> Any:
    """Bring a value to what its column stores and reads back as, converted the way MonetDB converts it, so keys
    hash and compare as the engine compares them however they were written. A value MonetDB would refuse for
    the column (out of range, too long, not a date...) is refused here, naming the column (and ``table``), so
    the statement that writes it fails and not a later flush or COMMIT."""
    if value is None:
        return None
    kind = sql_type(sql_type_text)
    try:
        return _CONVERT[kind.base](value, kind)
    except (DataError, ValueError, ArithmeticError, KeyError, TypeError, OverflowError, struct.error) as exc:
        where = f"column {column!r} of table {table!r}" if table else f"column {column!r}"
        reason = str(exc) or type(exc).__name__
        sqlstate = exc.sqlstate if isinstance(exc, DataError) and exc.sqlstate else "22018"
        raise DataError(f"value {value!r} does not fit {where} ({sql_type_text}): {reason}", sqlstate) from None


@functools.lru_cache(maxsize=1024)
def int_bound(sql_type_text: str) -> int:
    """``2**bits`` for an integer column type, whose values v are those with ``-bound < v < bound`` (the
    minimum is the engine's NULL); 0 for any other type. Lets an int be checked without ``coerce``."""
    try:
        bits = _INT_LIMITS.get(sql_type(sql_type_text).base)
    except NotSupportedError:
        return 0
    return 2**bits if bits else 0


def check_type(sql_type_text: str) -> str:
    """The type a value the engine computes for a column (UPDATE ... SET c = expression, INSERT ... SELECT) is
    cast to before tique reads it: the column's own family, wide enough that a value out of the column's range or
    length comes back as it is and ``coerce`` refuses it naming the column (a CAST to the column's own type would
    fail with an error naming no column, or silently truncate a string), and of a clean result type (MonetDB
    11.41 reports DECIMAL * INTEGER with a broken scale, and its MAPI text then reads 10 times too small)."""
    kind = sql_type(sql_type_text)
    if kind.base in _INT_LIMITS:
        return "HUGEINT"
    if kind.base == "DECIMAL":
        return f"DECIMAL(38,{kind.scale})"
    if kind.base in ("REAL", "DOUBLE"):
        return "DOUBLE"
    if kind.base == "VARCHAR":
        return "CLOB"
    return sql_type_text


# the string types as MonetDB names them in its catalog (sys.columns, sys.storage, sys.prepared_statements_args)
ENGINE_STRING_TYPES = frozenset({"varchar", "char", "clob"})
# MonetDB's text of an integer: digits, and an exponent of digits ('1e2' is 100; '1e-1', '1.5e1' are refused)
_INTEGER_TEXT = re.compile(r"([+-]?[0-9]+)(?:[eE]([0-9]+))?")
_SPACES = " \t\n\v\f\r"  # what MonetDB skips around a number or BOOLEAN it reads from text (C isspace)


def _plain(text: str) -> str:
    """``text`` without the spaces MonetDB skips around a value. Python's strip, int, float and Decimal also take
    other Unicode spaces (a no-break space, U+001C) and digits, and underscores between digits ('1_0'), which
    MonetDB refuses: refused here too."""
    stripped = text.strip(_SPACES)
    if not stripped.isascii() or "_" in stripped:
        raise ValueError("a character MonetDB does not read in a number or BOOLEAN")
    return stripped


def _decimal(value: Any) -> decimal.Decimal:
    if isinstance(value, bool):
        return decimal.Decimal(int(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("not a finite number")
        return decimal.Decimal(value)  # its exact binary value, which the engine rounds (CAST(1.005e0 ...) = 1.00)
    if isinstance(value, str):
        return decimal.Decimal(_plain(value))
    return decimal.Decimal(value)


def _to_int(value: Any, kind: SqlType) -> int:
    if isinstance(value, int):
        number = int(value)
    elif isinstance(value, str):  # as MonetDB reads it: '2.5' and '1e-1' fail, '1e2' is 100 (measured)
        found = _INTEGER_TEXT.fullmatch(_plain(value))
        if not found:
            raise ValueError("not an integer")
        number = int(found.group(1))
        if found.group(2) and number:  # an exponent past any column's range is refused below, never computed
            number *= 10 ** min(int(found.group(2)), 40)
    else:
        number = int(_decimal(value).quantize(decimal.Decimal(1), context=DECIMALS))
    bits = _INT_LIMITS[kind.base]
    if not -(2**bits) < number < 2**bits:
        raise DataError(f"value {value!r} is out of range for {kind.base}", "22003")
    return number


def _to_decimal(value: Any, kind: SqlType) -> decimal.Decimal:
    assert kind.precision is not None
    _not_boolean(value, kind)
    if isinstance(value, float):
        exact = _double_to_decimal(value, kind.scale)
    elif isinstance(value, str) and ("e" in value or "E" in value):
        raise ValueError("MonetDB reads a DECIMAL's text without an exponent")
    else:
        number = _decimal(value)
        if not number.is_finite():
            raise ValueError("not a finite number")
        exact = number.quantize(decimal.Decimal(1).scaleb(-kind.scale), context=DECIMALS)
    if len(exact.as_tuple().digits) > kind.precision and exact != 0:
        raise DataError(f"value {value!r} is out of range for DECIMAL({kind.precision},{kind.scale})", "22003")
    return exact.copy_abs() if exact.is_zero() else exact  # the engine has no -0.00 (and keys hash by repr)


def _double_to_decimal(value: float, scale: int) -> decimal.Decimal:
    """A double as MonetDB casts it to DECIMAL(p, scale): ``value * 10**scale`` in double arithmetic, rounded half
    away from zero (C's round). So 2.675 is 2.68 at scale 2 (the product is 267.5), as an UPDATE's engine-side
    cast gives, though its exact binary value is below 2.675 (checked against the engine on 20,000 values)."""
    if not math.isfinite(value):
        raise ValueError("not a finite number")
    product = abs(value * 10**scale)
    whole = math.floor(product)
    units = whole + (1 if product - whole >= 0.5 else 0)
    return decimal.Decimal(-units if value < 0 else units).scaleb(-scale, context=DECIMALS)


def _to_float(value: Any, kind: SqlType) -> float:
    _not_boolean(value, kind)
    number = float(_plain(value)) if isinstance(value, str) else float(value)
    if not math.isfinite(number):
        raise DataError(f"{number} cannot be stored: MonetDB has no NaN or infinity (NaN is its NULL)", "22003")
    if kind.base == "REAL":
        if abs(number) > _FLT_MAX:  # the engine refuses it before rounding (a value just above rounds to the max)
            raise DataError(f"value {value!r} is out of range for REAL", "22003")
        number = float(struct.unpack("f", struct.pack("f", number))[0])  # the engine keeps 32 bits
        if not math.isfinite(number):
            raise DataError(f"value {value!r} is out of range for REAL", "22003")
    if number == 0.0 and (isinstance(value, decimal.Decimal) or (kind.base == "REAL" and isinstance(value, str))):
        return 0.0  # the engine's DECIMAL has no -0, and it reads a string as a REAL zero without a sign
    return number


_FLT_MAX = struct.unpack("<f", bytes.fromhex("ffff7f7f"))[0]


def _not_boolean(value: Any, kind: SqlType) -> None:
    """MonetDB 11.41 refuses a BOOLEAN for a DOUBLE, REAL or DECIMAL column ("types boolean(1,0) and double(53,0)
    are not equal"; measured), though it converts one to an integer."""
    if isinstance(value, bool):
        raise TypeError(f"MonetDB does not convert a BOOLEAN to {kind.base} (its types are not equal): pass 1 or 0")


def _to_bool(value: Any, kind: SqlType) -> bool:
    # MonetDB refuses a DOUBLE or a DECIMAL with a fraction (0.0, 1e0) for a BOOLEAN column ("types decimal(2,1)
    # and boolean(1,0) are not equal"; measured), but converts an integer; a Decimal is sent as an integer when
    # it has no fraction digits (params.literal), as pymonetdb sends Decimal('1')
    if isinstance(value, float) or (isinstance(value, decimal.Decimal) and "." in format(value, "f")):
        raise TypeError(
            "MonetDB does not convert a DOUBLE or DECIMAL to BOOLEAN (its types are not equal): pass True/False or 1/0"
        )
    if isinstance(value, str):
        return {"true": True, "false": False, "1": True, "0": False}[_plain(value).lower()]
    return bool(value)


def check_utf8(text: str, what: str) -> None:
    """MonetDB stores UTF-8: a str that has no UTF-8 form (a lone surrogate, as os.fsdecode gives for bytes that
    are not UTF-8) is refused before any of it is buffered or sent (it failed later as a bare UnicodeEncodeError,
    at a flush or COMMIT that lost the transaction's earlier writes)."""
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise DataError(
            f"{what} holds {text[exc.start : exc.end]!r} at position {exc.start}, which has no UTF-8 form (a lone "
            "surrogate: text decoded with errors='surrogateescape'); MonetDB stores UTF-8: decode the bytes with "
            "errors='replace', or store them in a BLOB",
            "22021",
        ) from None


class ParameterFloat(float):
    """A float given as a statement parameter (statements.bind_plan). pymonetdb sends a float as its repr, which
    MonetDB reads as a DECIMAL literal unless it has an exponent, so into a string column it is stored as those
    digits ('123.0', not the '123' of a DOUBLE; -0.0 as '0.0': a DECIMAL has no sign on zero). A float of the
    statement's text (123e0) or read from the engine is a DOUBLE, printed as _as_text prints one."""

    __slots__ = ()


def parameter_text(value: float) -> str:
    """The text MonetDB stores in a string column for pymonetdb's literal of the float parameter ``value``."""
    return _as_text(ParameterFloat(value))


def _as_text(value: Any) -> str:
    """A value that is not a string, as MonetDB converts it to one: TRUE is 'true', a DOUBLE the fewest digits
    that read back as it with at least 4 (C's %g: 100.0 is '100', 1e4 '1e+04'; checked against the engine on
    1229 doubles), a decimal in positional form."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, ParameterFloat):
        text = repr(float(value))
        if "e" not in text and math.isfinite(value):  # checked against the engine on 923 floats
            return "0.0" if value == 0 else text
    if isinstance(value, float):
        digits = len(decimal.Decimal(repr(value)).normalize().as_tuple().digits)
        return format(value, f".{max(4, digits)}g")
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    # pymonetdb sends these as BLOB, TIMESTAMP, TIME and INTERVAL SECOND literals, which MonetDB prints as upper-case
    # hex digits, with six fractional digits, and as whole seconds with three (pymonetdb drops the fraction)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex().upper()
    if isinstance(value, datetime.datetime) and value.tzinfo is None:
        return value.isoformat(" ", timespec="microseconds")
    if isinstance(value, datetime.time) and value.tzinfo is None:
        return value.isoformat(timespec="microseconds")
    if isinstance(value, datetime.timedelta):
        return f"{int(value.total_seconds())}.000"
    return str(value)


def _to_text(value: Any, kind: SqlType) -> str:
    text = value if isinstance(value, str) else _as_text(value)
    if "\x00" in text:
        raise DataError("a string with a NUL character cannot be stored in MonetDB", "22021")
    check_utf8(text, "the value")
    if kind.length is not None and len(text) > kind.length:
        raise DataError(f"value too long for type (var)char({kind.length}): {len(text)} characters", "22001")
    return text


def _to_blob(value: Any, kind: SqlType) -> bytes:
    if isinstance(value, str):
        return bytes.fromhex(value)  # MonetDB reads a string as hexadecimal
    return bytes(value)


_DATE_RE = re.compile(r"^\s*(-?\d+)-(\d{1,2})-(\d{1,2})\s*$")
_TIME_RE = re.compile(r"(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d+))?)?")
_TIMESTAMP_RE = re.compile(r"^\s*(-?\d+)-(\d{1,2})-(\d{1,2})(?:[ T]" + _TIME_RE.pattern + r")?\s*$")
# a TIMESTAMP as MonetDB prints one, which datetime.fromisoformat reads exactly (6 digits: no rounding to do)
_PLAIN_TIMESTAMP_RE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{6})?", re.ASCII)
_ONE_SECOND = datetime.timedelta(seconds=1)


def _to_date(value: Any, kind: SqlType) -> datetime.date:
    if isinstance(value, datetime.datetime):
        _naive(value)
        return value.date()  # CAST(TIMESTAMP AS DATE) drops the time of day
    if isinstance(value, datetime.date):
        return value
    if isinstance(value, str):
        found = _DATE_RE.match(value)
        if not found:
            raise ValueError(f"date {value!r} is not in the format YYYY-MM-DD")
        return datetime.date(_year(found.group(1)), int(found.group(2)), int(found.group(3)))
    raise TypeError(f"a {type(value).__name__} is not a date")


def _year(text: str) -> int:
    year = int(text)
    if not datetime.MINYEAR <= year <= datetime.MAXYEAR:
        raise DataError(f"year {year} cannot be kept by tique (it keeps the years 1 to 9999, as Python's datetime)")
    return year


def _seconds(text: str | None) -> tuple[int, int]:
    """Whole seconds, and microseconds to add: MonetDB reads second 60 as the first second of the next minute."""
    seconds = int(text or 0)
    return (59, 1_000_000) if seconds == 60 else (seconds, 0)


def _fraction(digits: str | None) -> int:
    """Microseconds of a fraction of a second, rounded half up at the 6th digit as MonetDB parses it."""
    if not digits:
        return 0
    return int(decimal.Decimal("0." + digits).scaleb(6).quantize(decimal.Decimal(1), context=DECIMALS))


def _round_micros(micros: int, precision: int) -> int:
    unit = 10 ** (6 - precision)
    return (micros + unit // 2) // unit * unit


def _naive(value: datetime.datetime | datetime.time) -> None:
    if value.tzinfo is not None:
        raise DataError(
            f"{value!r} has a time zone: tique stores TIME and TIMESTAMP without one (MonetDB would convert it to the "
            "session's time zone, which differs between clients); pass it in the zone you store, e.g. UTC: "
            "value.astimezone(datetime.timezone.utc).replace(tzinfo=None)",
            "22007",
        )


def _to_time(value: Any, kind: SqlType) -> datetime.time:
    assert kind.precision is not None
    leap = 0
    if isinstance(value, datetime.datetime):
        _naive(value)
        hms, micros = value.time().replace(microsecond=0), value.microsecond
    elif isinstance(value, datetime.time):
        _naive(value)
        hms, micros = value.replace(microsecond=0), value.microsecond
    elif isinstance(value, str):
        found = _TIME_RE.fullmatch(value.strip())
        if not found:
            raise ValueError(f"time {value!r} is not in the format HH:MM:SS[.ffffff]")
        hours, minutes, seconds, digits = found.groups()
        whole, leap = _seconds(seconds)
        hms, micros = datetime.time(int(hours), int(minutes), whole), _fraction(digits) + leap
    else:
        raise TypeError(f"a {type(value).__name__} is not a time")
    micros = _round_micros(micros, kind.precision)
    start = datetime.datetime.combine(datetime.date(2000, 1, 1), hms)
    moved = start + datetime.timedelta(microseconds=micros)
    if moved.date() != start.date() and not leap:  # second 60 of 23:59 is 00:00:00, as the engine wraps it
        raise DataError(
            f"time {value!r} rounds to 24:00:00 at TIME({kind.precision}), which MonetDB cannot read back", "22008"
        )
    return moved.time()


def _to_timestamp(value: Any, kind: SqlType) -> datetime.datetime:
    assert kind.precision is not None
    leap = 0
    if isinstance(value, datetime.datetime):
        _naive(value)
        base, micros = value.replace(microsecond=0), value.microsecond
    elif isinstance(value, datetime.date):
        base, micros = datetime.datetime(value.year, value.month, value.day), 0
    elif isinstance(value, str):
        found = _TIMESTAMP_RE.match(value)
        if not found:
            raise ValueError(f"timestamp {value!r} is not in the format YYYY-MM-DD HH:MM:SS[.ffffff]")
        year, month, day, hours, minutes, seconds, digits = found.groups()
        whole, leap = _seconds(seconds)
        base = datetime.datetime(_year(year), int(month), int(day), int(hours or 0), int(minutes or 0), whole)
        micros = _fraction(digits) + leap
    else:
        raise TypeError(f"a {type(value).__name__} is not a timestamp")
    micros = _round_micros(micros, kind.precision)
    if micros == 1_000_000 and base.time() == datetime.time(23, 59, 59) and not leap:
        raise DataError(
            f"timestamp {value!r} rounds to 24:00:00 at TIMESTAMP({kind.precision}), which MonetDB cannot read back",
            "22008",
        )
    return base + datetime.timedelta(microseconds=micros)


_CONVERT: dict[str, Any] = {
    **{name: _to_int for name in _INT_LIMITS},
    "DECIMAL": _to_decimal,
    "DOUBLE": _to_float,
    "REAL": _to_float,
    "BOOLEAN": _to_bool,
    "VARCHAR": _to_text,
    "BLOB": _to_blob,
    "DATE": _to_date,
    "TIME": _to_time,
    "TIMESTAMP": _to_timestamp,
}


def key_value(value: Any) -> Any:
    """A coerced key value as the engine compares it: -0.0 equals 0.0 (and groups with it)."""
    if isinstance(value, float) and value == 0.0:
        return 0.0
    return value


# ---- the engine's text of temporal values ------------------------------------------------------------------


def parse_temporal(text: str | None, base: str) -> datetime.time | datetime.datetime | None:
    """A TIME or TIMESTAMP as MonetDB prints it (CAST(... AS VARCHAR)), exact to the microsecond."""
    if text is None:
        return None
    if base == "TIME":
        found = _TIME_RE.fullmatch(text)
        if not found:
            raise DataError(f"cannot read the time {text!r} the engine returned")
        hours, minutes, seconds, digits = found.groups()
        if int(hours) > 23:  # MonetDB makes 24:00:00 of '23:59:60' and '23:59:59.9' at TIME(0) read from text
            raise DataError(f"time {text!r} cannot be kept by tique: it is past the end of the day", "22008")
        return datetime.time(int(hours), int(minutes), int(seconds or 0), _fraction(digits))
    if _PLAIN_TIMESTAMP_RE.fullmatch(text):  # the engine's usual text: parsed in C, ten times faster
        try:
            return datetime.datetime.fromisoformat(text)
        except ValueError:
            pass  # a year 0, an hour 24, a second 60: read below, as MonetDB means them
    return parse_timestamp_text(text)


def parse_timestamp_text(text: str) -> datetime.datetime:
    """A TIMESTAMP from any text MonetDB prints for one (parse_temporal's general path)."""
    found = _TIMESTAMP_RE.match(text)
    if not found:
        raise DataError(f"cannot read the timestamp {text!r} the engine returned")
    year, month, day, hours, minutes, seconds, digits = found.groups()
    if int(hours or 0) > 23:  # as for TIME: '23:59:59.5' at TIMESTAMP(0) reads back at the hour 24
        raise DataError(f"timestamp {text!r} cannot be kept by tique: it is past the end of the day", "22008")
    try:
        return datetime.datetime(
            _year(year), int(month), int(day), int(hours or 0), int(minutes or 0), int(seconds or 0), _fraction(digits)
        )
    except DataError as exc:
        raise DataError(f"timestamp {text!r}: {exc}", "22008") from None
