"""The DB-API 2.0 cursor. Cursors of one connection share its transaction and see its writes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tique.ddl import dropped_table, run_ddl
from tique.engine.base import Result
from tique.errors import InterfaceError, ProgrammingError, restated
from tique.params import Params, check, inline, literal, normalize, resolve, value
from tique.privileges import Access
from tique.rewrite.exact import decode
from tique.rewrite.writes import DeletePlan, InsertPlan, UpdatePlan
from tique.statements import DDL, Control, CopyPlan, PassThrough, ReadPlan

if TYPE_CHECKING:
    from tique.connection import Connection


class Cursor:
    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.arraysize = 1
        self.rowcount = -1
        self.description: list[tuple[Any, ...]] | None = None
        self.lastrowid = None
        self._rows: list[tuple[Any, ...]] = []
        self._pos = 0
        self._closed = False

    # ---- executing -----------------------------------------------------------------------------------------

    def execute(self, operation: str, parameters: Params = None) -> Cursor:
        self._check()
        conn = self.connection
        operation, parameters = bind(operation, parameters)
        catalog_version = conn.db.catalog.version
        try:
            plan = conn.plan(operation, parameters)
        except ProgrammingError:
            # planned against a catalog another process may have changed since: the begin syncs it (see catalog.py)
            if conn.in_transaction:
                raise
            conn.transaction()
            try:
                if conn.db.catalog.version == catalog_version:
                    raise
                plan = conn.plan(operation, parameters)
            except ProgrammingError:
                if conn.autocommit:
                    conn.rollback()
                raise
        if isinstance(plan, DDL) and parameters is not None:
            # DDL is sent as written (not from a tree with slots): format its literals in, as pymonetdb does
            operation, parameters = inline(operation, parameters), None
            plan = conn.plan(operation, parameters)
        self._set(Result())
        self.lastrowid = None
        if isinstance(plan, Control):
            if plan.action == "commit":
                conn.commit()
            elif plan.action == "rollback":
                conn.rollback()
            if plan.action == "begin" or plan.chain:
                conn.transaction()  # AND CHAIN: the next transaction begins now, with a snapshot taken now
            return self
        if isinstance(plan, DDL):
            schema = conn.read_options.schema or conn.db.default_schema
            result = run_ddl(conn.db, conn._raw, plan.tree, plan.sql, conn, schema)
            self._set(result)
            dropped = dropped_table(plan.tree, schema)
            if dropped and conn._txn is not None:
                conn._txn.forget_table(dropped, result.ddl_txids)
            elif conn._txn is not None:  # this session's own ALTER does not fail its transaction (alter.py)
                conn._txn.own_ddl.update(result.ddl_txids)
            return self
        if isinstance(plan, Access):
            conn.run_access(plan)
            return self
        txn = conn.transaction()
        if conn.db.catalog.version != catalog_version:  # the begin found DDL by another process: plan again
            plan = conn.plan(operation, parameters)
        try:
            if isinstance(plan, (InsertPlan, UpdatePlan, DeletePlan)) and not conn.db.owner:
                conn.may_write(txn, plan)
            if isinstance(plan, PassThrough):
                rendered = plan.template.render(self._rendered(plan.template.param_slots, parameters))
                self._set(decode(conn._raw.execute(rendered), plan.decode))
                if plan.sets_schema:  # unqualified names now resolve in the schema MonetDB says is current
                    schema = str(conn._raw.execute("SELECT CURRENT_SCHEMA").scalar())
                    conn.read_options = replace(conn.read_options, schema=schema)
            elif isinstance(plan, ReadPlan):
                params = self._rendered(plan.template.param_slots, parameters, probe=True)
                conn.use_pipeline(plan.analytical)
                with conn.db.analytical_gate(conn.settings.analytical_slots if plan.analytical else None):
                    try:
                        result = txn.run(plan.template, params, plan.reads, plan.point_keys)
                    except ProgrammingError as exc:  # the engine names tique's internal tables: name the user's
                        raise conn.read_denied(txn, plan.reads, exc) from None
                    self._set(decode(result, plan.decode))
            elif isinstance(plan, InsertPlan):
                slots = _insert_slots(plan)
                values = _values(slots, parameters)
                self.rowcount = txn.insert(plan, values, self._rendered(slots, parameters))
                self.lastrowid = txn.last_generated
            elif isinstance(plan, UpdatePlan):
                self.rowcount = txn.update(
                    plan, self._rendered(plan.select.param_slots, parameters, probe=True, keep=plan.stored_slots)
                )
            elif isinstance(plan, CopyPlan):
                self.rowcount = txn.copy(plan)
            elif isinstance(plan, DeletePlan):
                self.rowcount = txn.delete(plan, self._rendered(plan.select.param_slots, parameters, probe=True))
            else:  # pragma: no cover
                raise ProgrammingError(f"cannot run {type(plan).__name__}")
        except ProgrammingError as exc:
            if conn.autocommit:
                conn.rollback()
            better = restated(operation, exc)
            if better is exc:
                raise
            raise better from None
        except BaseException:
            if conn.autocommit:
                conn.rollback()
            raise
        if conn.autocommit:
            conn.commit()
        return self

    def executemany(self, operation: str, seq_of_parameters: Sequence[Params]) -> Cursor:
        total = 0
        for params in seq_of_parameters:
            self.execute(operation, params)
            total += max(self.rowcount, 0)
        self.rowcount = total
        return self

    def _rendered(
        self, slots: Sequence[str], parameters: Params, probe: bool = False, keep: frozenset[str] = frozenset()
    ) -> dict[str, str]:
        return resolve(slots, parameters, probe, keep)

    def _set(self, result: Result) -> None:
        self._rows = result.rows
        self._pos = 0
        self.rowcount = result.rowcount
        self.description = (
            [(c.name, c.type_code, None, None, c.precision, c.scale, None) for c in result.columns]
            if result.columns
            else None
        )

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

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while (row := self.fetchone()) is not None:
            yield row

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


def _insert_slots(plan: InsertPlan) -> tuple[str, ...]:
    if plan.rows is not None:
        return tuple(dict.fromkeys(item[1] for row in plan.rows for item in row if item[0] == "s"))
    assert plan.select is not None
    return plan.select.param_slots


def _values(slots: Sequence[str], parameters: Params) -> dict[str, Any]:
    """Parameter slots as Python values (literal INSERTs keep them unquoted, to coerce and hash)."""
    resolve(slots, parameters)  # every value can be quoted
    return {s: value(s, parameters) for s in slots}


def bind(operation: str, parameters: Any) -> tuple[str, Params]:
    """The statement and parameters as pymonetdb would read them, checked. A placeholder inside a string or a
    comment is formatted into the text (pymonetdb's ``%`` does not know SQL's quotes), and the text is planned
    without parameters."""
    if not isinstance(operation, str):
        raise ProgrammingError(f"the statement must be a str, not {type(operation).__name__}")
    params = normalize(parameters)
    if params is None:
        return operation, None
    if check(operation, params).embedded:
        return inline(operation, params), None
    return operation, params


__all__ = ["Cursor", "literal"]
