"""An embedded result's values as MonetDB types them, equal to what pymonetdb hands over from a server.

monetdbe's C API (11.41) passes a result column by how it is stored, not by its SQL type, so without this the
embedded adapter answered differently from the MAPI one (measured on 11.41):

- an INTERVAL SECOND as an integer of milliseconds (``TIMESTAMP b - TIMESTAMP a`` gave 3600000, not 1 hour),
  an INTERVAL DAY as milliseconds too (pymonetdb: the number of days);
- a TIMESTAMP WITH TIME ZONE (``CURRENT_TIMESTAMP``) or TIME WITH TIME ZONE as the UTC value without its zone;
- a JSON value as its text quoted and escaped once more, a URL quoted; a UUID as a string;
- the type names ``char``, ``clob``, ``uuid``, ``json``, ``inet``, ``url`` and the intervals' as ``varchar``,
  ``int`` or ``bigint`` in ``cursor.description``.

The SQL types are in MonetDB's catalog of prepared statements: PREPARE the statement and read
``sys.prepared_statements_args`` (its results are the rows with ``inout = 0``), then DEALLOCATE it. That costs
three statements, once per statement shape and catalog (``ResultTypes`` keeps them for the process's connections).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from tique.engine.base import Result
from tique.errors import DataError, Error, connection_lost
from tique.gc_paused import paused
from tique.rewrite.template import Template

# The C API's type names (monetdbe_values.py) a value of another SQL type arrives as
_CARRIERS = frozenset({"varchar", "int", "bigint", "hugeint", "time", "timestamp"})
_INTEGERS = frozenset({"int", "bigint", "hugeint"})  # an interval's aggregate may arrive wider (SUM OVER: hugeint)
_STRING, _TIME, _TIMESTAMP = frozenset({"varchar"}), frozenset({"time"}), frozenset({"timestamp"})

_UTC = datetime.timezone.utc


def _milliseconds(v: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=v)


def _days(v: int) -> int:
    return datetime.timedelta(milliseconds=v).days


def _aware(v: Any) -> Any:
    return v.replace(tzinfo=_UTC)


def _unquoted(v: str) -> str:
    return v[1:-1] if len(v) >= 2 and v[0] == v[-1] == '"' else v  # a URL arrives quoted, its inside as it is


# SQL type -> the C API's type its value arrives as, and how it is made pymonetdb's (None: the value is right, only
# its type name was not). A column that did not arrive as that type is not the one described (a table made again
# by a session outside tique, say): it is left as it came.
_CONVERT: dict[str, tuple[frozenset[str], Callable[[Any], Any] | None]] = {
    "char": (_STRING, None),
    "clob": (_STRING, None),
    "inet": (_STRING, None),
    "uuid": (_STRING, uuid.UUID),
    "json": (_STRING, json.loads),  # the text of the value, quoted and escaped as a JSON string
    "url": (_STRING, _unquoted),
    "month_interval": (_INTEGERS, None),
    "sec_interval": (_INTEGERS, _milliseconds),
    "day_interval": (_INTEGERS, _days),
    "timestamptz": (_TIMESTAMP, _aware),
    "timetz": (_TIME, _aware),
}


def newest_prepared(inout: int) -> str:
    """The query of the session's newest prepared statement: its id, with the type of each of its parameters
    (``inout`` 1) or results (0) in order; one row with a NULL type when it has none."""
    return (
        "SELECT s.id, a.type FROM (SELECT MAX(statementid) AS id FROM sys.prepared_statements) AS s "
        f"LEFT JOIN sys.prepared_statements_args AS a ON a.statementid = s.id AND a.inout = {inout} ORDER BY a.number"
    )


DESCRIBE = newest_prepared(0)


def newest_read(rows: Sequence[tuple[Any, ...]]) -> tuple[int, tuple[str, ...]] | None:
    """The id and the types newest_prepared's query answered; None when no statement is prepared."""
    if not rows or rows[0][0] is None:
        return None
    return int(rows[0][0]), tuple(str(kind) for _, kind in rows if kind is not None)


_UNKNOWN = object()


def needs_types(result: Result, skip: Sequence[int] = ()) -> bool:
    """Could a column of ``result`` hold a value of another SQL type than the C API's type says?"""
    return any(c.type_code in _CARRIERS and i not in skip for i, c in enumerate(result.columns))


def describe(execute: Callable[[str], Result], sql: str) -> tuple[str, ...] | None:
    """The SQL type names of the results of the query ``sql`` (a SELECT with every value in its text), asked of
    MonetDB on a session through ``execute``; None when MonetDB cannot prepare it (the result stays as it came)."""
    try:
        execute("PREPARE " + sql)
    except Error as exc:
        if connection_lost(exc):
            raise
        return None
    newest = newest_read(execute(DESCRIBE).rows)
    if newest is None:
        return None
    execute(f"DEALLOCATE {newest[0]}")
    return newest[1]


def retype(result: Result, types: Sequence[str], skip: Sequence[int] = ()) -> Result:
    """``result`` with the values and type names of the columns MonetDB typed as ``types`` made as pymonetdb makes
    them; columns at ``skip`` (already decoded by tique) stay as they are, and so does a column whose values do not
    read as its described type (the description was of another table: one made again outside tique)."""
    if len(types) != len(result.columns):
        return result  # not the statement that was described: leave it
    changed = [
        i
        for i, t in enumerate(types)
        if t in _CONVERT and i not in skip and result.columns[i].type_code in _CONVERT[t][0]
    ]
    if not changed:
        return result
    columns = list(result.columns)
    rows = result.rows
    # the rows are taken apart only when values change: most columns (CHAR, CLOB) change only their type name, and
    # a 77k-row result took 100 ms to take apart and put together again
    converted = [i for i in changed if _CONVERT[types[i]][1] is not None] if rows else []
    with paused(len(rows) if converted else 0):
        by_column = list(zip(*rows)) if converted else []
        for i in changed:
            convert = _CONVERT[types[i]][1]
            if convert is not None and by_column:
                try:
                    by_column[i] = tuple(None if v is None else convert(v) for v in by_column[i])
                except OverflowError as exc:  # pymonetdb's OverflowError over MAPI: a value Python cannot hold
                    raise DataError(f"a value of the result cannot be read in Python: {exc}", "22008") from None
                except (ValueError, TypeError):
                    continue
            columns[i] = replace(columns[i], type_code=types[i])
        if by_column:
            rows = list(zip(*by_column))
    return replace(result, columns=columns, rows=rows)


def run_typed(execute: Callable[[str], Result], sql: str) -> Result:
    """Run the query ``sql`` through ``execute`` and retype its result, asking its types each time (for a plain
    engine connection; tique's own connections keep what they learned in ``ResultTypes``)."""
    result = execute(sql)
    if not needs_types(result):
        return result
    types = describe(execute, sql)
    return result if types is None else retype(result, types)


# A statement's comments, literals (strings, numbers), quoted names and words: a result's types do not depend on the
# values of its literals, only on their kinds, so statements differing only in them share what was learned of one.
# A name's letters are any Unicode letters, its digits part of it (t1 and t2 stay apart); a quote in a comment opens
# no string; a blob literal (X'...') is a kind of its own.
_TOKEN = re.compile(
    r"""--[^\n]*|/\*.*?\*/|[Rr]'(?:[^']|'')*'?|[EeXx]?'(?:[^'\\]|\\.|'')*'?|"(?:[^"]|"")*"?|[^\W\d]\w*"""
    r"""|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?""",
    re.S,
)


def _blank(token: re.Match[str]) -> str:
    text = token.group(0)
    if text[0].isdigit() or text[0] == ".":
        return "0"
    if text[0] in "-/" or text[0] == '"' or "'" not in text[:2]:
        return text  # a comment, a quoted name, a word
    return "X''" if text[0] in "Xx" else "''"


def literals_blanked(sql: str) -> str:
    """``sql`` with each string literal written ``''`` (a blob's ``X''``) and each number ``0``."""
    return _TOKEN.sub(_blank, sql)


def literal_kind(literal: str) -> str:
    """A parameter's literal as a result's type may depend on it: its kind (literals_blanked), an integer at once."""
    return "0" if literal.isdigit() else literals_blanked(literal)


class DdlClock:
    """When this process runs DDL: ticks once as a DDL starts and once as it ends. A result read while the ticks
    stayed the same and no DDL was running was read in the catalog its description was made in (or will be)."""

    def __init__(self) -> None:
        self._idle = threading.Condition()
        self._ticks = 0
        self._running: list[int] = []  # the threads running DDL (a DDL may read: CREATE TABLE AS)

    @contextlib.contextmanager
    def changing(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._idle:
            self._ticks += 1
            self._running.append(me)
        try:
            yield
        finally:
            with self._idle:
                self._ticks += 1
                self._running.remove(me)
                self._idle.notify_all()

    def stamp(self) -> int | None:
        """The ticks; None while a DDL runs."""
        return None if self._running else self._ticks

    def wait_idle(self, timeout: float) -> None:
        """Until no DDL runs, for at most ``timeout`` seconds; at once on a thread that runs one itself."""
        me = threading.get_ident()
        with self._idle:
            self._idle.wait_for(lambda: not self._running or me in self._running, timeout)


class ResultTypes:
    """The SQL types of statements' results, as learned by ``describe``: per statement (a Template) in a context
    (its parameters' kinds, the session's schema, and the session itself when it has temporary tables), and per its
    text with the literals blanked in that context, so a statement sent with other literals is not asked again.
    Forgotten when the catalog's version changes (Database.types_version: any DDL through tique, in any process).
    A result DDL overlapped is typed only by a description known from before its read, asked again afterwards and
    found the same (_confirmed); else it is left as it came (no description is known to be its)."""

    LIMIT = 10_000  # statements made up by ad hoc queries could grow it for good
    CONFIRMATIONS = 5  # descriptions asked again after DDL overlapped a read, when more DDL overlaps each

    def __init__(self, clock: DdlClock | None = None) -> None:
        self._clock = clock or DdlClock()
        self._types: dict[tuple[Template, Hashable], object] = {}
        self._shapes: dict[tuple[str, Hashable], object] = {}
        self._version: object = None
        self._lock = threading.Lock()

    def typed(
        self,
        result: Result,
        statement: Template,
        context: Hashable,
        version: tuple[object, Callable[[], object]],
        ask: Callable[[], tuple[str, ...] | None],
        skip: Sequence[int] = (),
    ) -> Result:
        """``result`` retyped; ``ask`` describes the statement the first time its shape is seen in ``context``.
        ``version``: the catalog's version before the statement ran (None: DDL was running), and a way to read it
        now. Nothing waits before the read: a plan made before a DDL must not run after it."""
        if not needs_types(result, skip):
            return result
        before, now = version
        key = (statement, context)
        if before is None:  # DDL ran as the statement began: the description known from before it, if it holds
            with self._lock:
                known = self._types.get(key, _UNKNOWN)
            confirmed = self._confirmed(known, ask, now)
            return result if confirmed is None else retype(result, confirmed, skip)
        with self._lock:
            if before != self._version or len(self._types) >= self.LIMIT or len(self._shapes) >= self.LIMIT:
                self._types.clear()
                self._shapes.clear()
                self._version = before
            known = self._types.get(key, _UNKNOWN)
        shape = None
        if known is _UNKNOWN:
            shape = (literals_blanked("?".join(statement.parts)), context)
            with self._lock:
                known = self._shapes.get(shape, _UNKNOWN)
            if known is _UNKNOWN:
                known = ask()
                if now() != before:  # asked after the read, maybe after DDL the read came before: not its types
                    return result
        if now() != before:  # DDL since the statement began: the read may be of other tables than described
            confirmed = self._confirmed(known, ask, now)
            return result if confirmed is None else retype(result, confirmed, skip)
        if shape is not None:
            with self._lock:
                if self._version == before:
                    self._shapes[shape] = self._types[key] = known
        return result if known is None else retype(result, known, skip)  # type: ignore[arg-type]

    def _confirmed(
        self, known: object, ask: Callable[[], tuple[str, ...] | None], now: Callable[[], object]
    ) -> tuple[str, ...] | None:
        """After DDL overlapped a read (of any table: the clock is the process's), the description known from
        before it when asking again once the DDL ended answers the same: the read had those types whichever
        catalog it saw (unless a name changed and changed back within the read). None when it differs or DDL keeps
        overlapping: the result stays as the C API passed it."""
        if not isinstance(known, tuple):
            return None
        deadline = time.monotonic() + 2.0
        asked = 0
        while asked < self.CONFIRMATIONS and time.monotonic() < deadline:
            stamp = now()
            if stamp is None:  # (at once on the thread that runs the DDL: CREATE TABLE AS reads)
                self._clock.wait_idle(max(0.0, deadline - time.monotonic()))
                if self._clock.stamp() is None:
                    return None
                continue
            fresh = ask()
            asked += 1
            if now() == stamp:
                return known if fresh == known else None
        return None
