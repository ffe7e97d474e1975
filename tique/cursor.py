"""The DB-API 2.0 cursor. Cursors of one connection share its transaction and see its writes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from tique.compound import statements_of
from tique.engine.base import Result
from tique.errors import InterfaceError, ProgrammingError, SeveralStatements
from tique.params import Params, check, inline, literal, normalize, pad_lists
from tique.rewrite.values import check_utf8

if TYPE_CHECKING:
    from tique.connection import Connection


class Description(NamedTuple):
    """One column of ``cursor.description``: PEP 249's seven items, also by name, as pymonetdb's namedtuple
    (psycopg's Column objects have the same names): code written for them reads ``d.name``, ``d.type_code``."""

    name: str
    type_code: str
    display_size: int | None
    internal_size: int | None
    precision: int | None
    scale: int | None
    null_ok: bool | None


class Cursor:
    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.arraysize = 1  # PEP 249's default (pymonetdb's is 100, against the compliance suite)
        self.operation = ""  # the last statement executed, as pymonetdb keeps it
        self.rowcount = -1
        self.description: list[Description] | None = None
        self.lastrowid = None
        self.messages: list[tuple[type[Exception], str]] = []  # pymonetdb's; tique reports no warnings here
        self._rows: list[tuple[Any, ...]] = []
        self._result = Result()
        self._next_sets: list[Result] = []  # a script's result sets after the current one (_run_script)
        self._pos = 0
        self._closed = False

    # ---- executing -----------------------------------------------------------------------------------------

    def execute(self, operation: str, parameters: Params = None) -> int | None:
        """Run one statement on the connection (Connection._execute) and keep its result. Returns the rowcount,
        or None when it is unknown (-1), as pymonetdb does: ``if cur.execute(...)`` tests for rows there, and a
        cursor returned instead would always be true (``Connection.execute`` returns the cursor)."""
        self._check()
        self._execute_one(operation, parameters)
        return self.rowcount if self.rowcount >= 0 else None

    def _execute_one(self, operation: str, parameters: Params, bound: tuple[str, Params] | None = None) -> None:
        try:
            self._run(*(bound or bind(operation, parameters)))
        except SeveralStatements:
            params = normalize(parameters)
            self._run_script(operation if params is None else inline(operation, params))

    def _run_script(self, text: str) -> None:
        """Several statements in one text, as pymonetdb sends them: run one by one, each as it would run alone (in
        autocommit mode each commits on its own, DDL rules and all: MonetDB runs the text as one transaction); the
        first failure stops them, and rolls back a transaction the text itself began (its COMMIT never ran). The
        cursor then holds the first result set, and ``nextset()`` moves to the next, as in pymonetdb."""
        conn = self.connection
        block_before = conn._block
        results: list[Result] = []
        try:
            for statement in statements_of(text):
                self._run(statement, None)
                results.append(self._result)
        except BaseException:
            if conn._block and not block_before and not conn.closed:
                conn.rollback()
            raise
        self.operation = text
        sets = [r for r in results if r.columns]
        self._set(sets[0] if sets else results[-1] if results else Result())
        self._next_sets = sets[1:]

    def _run(self, operation: str, parameters: Params) -> Cursor:
        self.operation = operation
        self._next_sets = []
        self._set(Result())
        self.lastrowid = None
        executed = self.connection._execute(operation, parameters)
        self._set(executed.result)
        self.lastrowid = executed.lastrowid
        return self

    def executemany(self, operation: str, seq_of_parameters: Sequence[Params]) -> int:
        """Run the statement once per parameter set. A failure after earlier sets wrote rows fails the
        transaction (it can only be rolled back): pymonetdb runs the sets one by one too, and MonetDB then aborts
        the whole transaction, so a COMMIT keeps none of them. tique's rule that a failed statement leaves the
        transaction usable would otherwise commit the sets before the failing one - pandas' ``to_sql`` and
        SQLAlchemy code that commits after catching the error would keep half of a batch. A failure at the
        first set that writes leaves the transaction usable, as for one failed statement, and so does a set refused
        before anything of it is sent (a wrong number of values), as pymonetdb's formatting refuses it."""
        total = 0
        wrote = False
        for at, params in enumerate(seq_of_parameters, start=1):
            txn = self.connection._txn
            before = txn.buffer.seq if txn is not None else 0
            self._check()
            bound = bind(operation, params)  # refused here: nothing of this set reached the transaction
            try:
                self._execute_one(operation, params, bound)
            except BaseException as exc:
                now = self.connection._txn
                # a script's earlier statements may have written part of this set
                partial = now is not None and now.buffer.seq != (before if now is txn else 0)
                if wrote or partial:
                    self.connection._fail_transaction(
                        f"executemany failed at parameter set {at} after rows of it or of the sets before it were "
                        f"written: {type(exc).__name__}: {exc}"
                    )
                raise
            now = self.connection._txn
            if now is not None and now.buffer.seq != (before if now is txn else 0):
                wrote = True
            total = -1 if total < 0 or self.rowcount < 0 else total + self.rowcount  # -1: one count is unknown
        self.rowcount = total
        return total  # as pymonetdb

    def _set(self, result: Result) -> None:
        self._result = result
        self._rows = result.rows
        self._pos = 0
        self.rowcount = result.rowcount
        self.description = (
            [Description(c.name, c.type_code, None, None, c.precision, c.scale, None) for c in result.columns]
            if result.columns
            else None
        )

    @property
    def rownumber(self) -> int | None:
        """The index of the next row to fetch in the result (PEP 249's extension, as pymonetdb); None without
        one."""
        return None if self.description is None or self._closed else self._pos

    # ---- fetching ------------------------------------------------------------------------------------------

    def _check(self) -> None:
        if self._closed:
            raise InterfaceError("the cursor is closed")
        if self.connection.closed:
            raise InterfaceError("the connection is closed")

    def _check_result(self) -> None:
        self._check()
        if self.description is None:
            raise ProgrammingError("no result set: the last statement returned no rows to fetch")

    def fetchone(self) -> tuple[Any, ...] | None:
        self._check_result()
        if self._pos >= len(self._rows):
            return None
        row = self._rows[self._pos]
        self._pos += 1
        return row

    def fetchmany(self, size: int | None = None) -> list[tuple[Any, ...]]:
        self._check_result()
        n = self.arraysize if size is None else size
        rows = self._rows[self._pos : self._pos + n]
        self._pos += len(rows)
        return rows

    def fetchall(self) -> list[tuple[Any, ...]]:
        self._check_result()
        rows = self._rows[self._pos :]
        self._pos = len(self._rows)
        return rows

    def __iter__(self) -> Cursor:
        """The cursor is its own iterator (PEP 249's extension, as pymonetdb and psycopg): ``next(cur)`` works."""
        return self

    def __next__(self) -> tuple[Any, ...]:
        row = self.fetchone()
        if row is None:
            raise StopIteration
        return row

    next = __next__  # PEP 249's spelling

    def scroll(self, value: int, mode: str = "relative") -> None:
        """Move to another row of the result (PEP 249's extension, as pymonetdb): by ``value`` rows, or to row
        ``value`` with ``mode="absolute"``; IndexError outside the result, which is then not moved."""
        self._check_result()
        if mode not in ("relative", "absolute"):
            raise ProgrammingError(f"unknown scroll mode {mode!r}: use 'relative' or 'absolute'")
        target = value + self._pos if mode == "relative" else value
        if not 0 <= target <= len(self._rows):
            raise IndexError(f"scroll to row {target} leaves the result of {len(self._rows)} rows")
        self._pos = target

    def nextset(self) -> bool | None:
        """The next result set of a text of several statements (True), or None when none is left, as
        pymonetdb."""
        self._check()
        if self._next_sets:  # a script's next result set (_run_script)
            self._set(self._next_sets.pop(0))
            return True
        self._set(Result())  # as pymonetdb: no result is current after the last one
        return None

    def close(self) -> None:
        self._closed = True
        self._rows = []

    def __enter__(self) -> Cursor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def setinputsizes(self, sizes: Any) -> None:
        """PEP 249: may do nothing."""

    def setoutputsize(self, size: Any, column: Any = None) -> None:
        """PEP 249: may do nothing."""


def bind(operation: str, parameters: Any) -> tuple[str, Params]:
    """The statement and parameters as pymonetdb would read them, checked. A placeholder inside a string or a
    comment is formatted into the text (pymonetdb's ``%`` does not know SQL's quotes), and the text is planned
    without parameters."""
    if not isinstance(operation, str):
        raise ProgrammingError(f"the statement must be a str, not {type(operation).__name__}")
    check_utf8(operation, "the statement")
    params = normalize(parameters)
    if params is None:
        return operation, None
    for at, value in params.items() if isinstance(params, Mapping) else enumerate(params, start=1):
        for one in value if isinstance(value, (list, tuple, set, frozenset)) else (value,):
            if isinstance(one, str):
                check_utf8(one, f"parameter {at!r}" if isinstance(at, str) else f"parameter {at}")
    if check(operation, params).embedded:
        return inline(operation, params), None
    if isinstance(params, tuple):
        return pad_lists(operation, params)
    return operation, params


__all__ = ["Cursor", "literal"]
