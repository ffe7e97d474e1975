"""The DB-API 2.0 connection: transactions start implicitly and end with commit() or rollback()."""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from sqlglot import exp

from tique import bulk_load, errors, privileges, temporary
from tique.catalog import TableInfo
from tique.database import Database
from tique.ddl import dropped_table, renamed_table, run_ddl
from tique.engine.base import Result
from tique.engine.result_types import describe, literal_kind
from tique.engine.url import parse_url
from tique.errors import InterfaceError, NotSupportedError, ProgrammingError, SerializationFailure, restated
from tique.names import quote as quoted_name
from tique.names import table_key
from tique.params import Params, inline
from tique.prepared import PreparingConnection, StatementHook
from tique.privileges import Access
from tique.rewrite.exact import decode
from tique.rewrite.parse import parse
from tique.rewrite.reads import PointKeys, ReadOptions
from tique.rewrite.template import Template
from tique.rewrite.writes import DeletePlan, InsertPlan, UpdatePlan
from tique.sequencer import CSequencer
from tique.settings import RESERVATION_MS, Settings
from tique.statements import (
    DDL,
    Bound,
    Control,
    CopyPlan,
    PassThrough,
    Plan,
    ReadPlan,
    bind_plan,
    plan_statement,
    tables_named,
)
from tique.storage import LARGE_WRITE_SLACK
from tique.transaction import CommitResult, Transaction
from tique.versioned import versioned
from tique.zero_signs import KEEPING, SAFE

T = TypeVar("T")


_NUMBERS = itertools.count()


@dataclass(frozen=True)
class Executed:
    """What a cursor keeps of an executed statement: its result and the key an INSERT generated."""

    result: Result
    lastrowid: int | None = None


class Connection:
    # PEP 249: the exceptions as connection attributes too
    Warning = errors.Warning
    Error = errors.Error
    InterfaceError = errors.InterfaceError
    DatabaseError = errors.DatabaseError
    DataError = errors.DataError
    OperationalError = errors.OperationalError
    IntegrityError = errors.IntegrityError
    InternalError = errors.InternalError
    ProgrammingError = errors.ProgrammingError
    NotSupportedError = errors.NotSupportedError

    def __init__(self, url: str, settings: Settings, connect_timeout: float | None = None) -> None:
        self.settings = settings
        self.db = Database.get(
            parse_url(url), settings.sequencer, settings.lease_ms, connection=True, connect_timeout=connect_timeout
        )
        self._raw: Any = None
        try:
            self._raw = self._session()
            if settings.lease_ms is not None and settings.lease_ms != self.db.lease_ms:
                self.db.apply_lease(self._raw, settings.lease_ms)
            self._zero_signs_kept = False
            self.use_pipeline(False)
            if settings.worker_limit:  # asked for: an engine that refuses it fails the connect
                self._raw.execute(f"CALL sys.setworkerlimit({int(settings.worker_limit)})")
        except BaseException:
            if self._raw is not None:
                self._raw.close()
            self.db.release_connection()
            raise
        self._analytical: PreparingConnection | None = None  # the session analytical reads run on (_reader)
        self._session_set = bool(settings.worker_limit)  # state of this session another would not share
        self._temporary: dict[str, temporary.TemporaryTable] = {}  # its temporary tables, by name (temporary.py)
        self._txn: Transaction | None = None
        self._autocommit = False
        self._block = False  # START TRANSACTION in autocommit mode: statements join it until COMMIT or ROLLBACK
        self._number = next(_NUMBERS)  # this connection among the process's, for ever (id() is used again)
        self._temporaries_made = 0  # DDL of this session's temporary tables (_typed)
        self._closed = False
        self._last_cts = 0  # this session's last commit: its next snapshot must include it
        self._last_txid = 0  # this session's last transaction: the next begin ends its snapshot pin
        self.read_options = ReadOptions(
            formulation=settings.snapshot, latest=settings.unsafe_read_latest, expose_rowid=frozenset()
        )
        self.last_commit: CommitResult | None = None
        self.last_failed_write_set: list[int] = []
        # read options per set of tables with own Cache versions: a statement's plan is cached by its options
        self._options_with: dict[frozenset[str], tuple[ReadOptions, ReadOptions]] = {}

    # ---- state ---------------------------------------------------------------------------------------------

    def options_now(self, more_own: frozenset[str] = frozenset()) -> ReadOptions:
        """Read options for the next statement: snapshots include the transaction's own Cache versions only for
        the tables where it has some (statements are planned, and cached, per such set)."""
        own = (self._txn.in_cache() if self._txn else frozenset()) | more_own
        base = self.read_options
        if own == base.own:
            return base
        found = self._options_with.get(own)
        if found is None or found[0] is not base:  # made from other options (SET SCHEMA since): make it again
            if len(self._options_with) > 64:
                self._options_with.clear()
            found = self._options_with[own] = (base, replace(base, own=own))
        return found[1]

    @property
    def statement_hooks(self) -> list[StatementHook]:
        """Called after every statement this connection sends to the engine, with (SQL, seconds, the error or
        None): tique's own statements too (begin, snapshot reads, the commit protocol), for tracing, logging and
        counting round trips. Append a callable; a hook that raises breaks the statement it reports."""
        return self._raw.hooks  # type: ignore[no-any-return]

    def plan(self, operation: str, parameters: Any) -> Plan:
        """The plan of a statement in this transaction (see _planned)."""
        return self._planned(operation, parameters)[0]

    def _planned(
        self, operation: str, parameters: Params, stored: frozenset[str] = frozenset(), exact: bool = False
    ) -> tuple[Plan, Bound | None]:
        """The plan of a statement in this transaction, with its parameters when planning needed them. A read
        that will first send pending writes of a table to the Cache is planned to read them there; other reads
        skip that scan (the transaction's own versions of a table exist only in its client until a read or
        COMMIT needs them). ``stored``: tables to read as their Storage rows alone (Transaction.storage_only).
        ``exact``: its filters evaluated on the snapshots' rows alone (ReadOptions.exact_filters)."""

        def options_now(more_own: frozenset[str] = frozenset()) -> ReadOptions:
            options = self.options_now(more_own)
            if stored:
                options = replace(options, stored=stored)
            return replace(options, exact_filters=True) if exact else options

        options = options_now()
        plan = plan_statement(self.db, self._raw, operation, parameters is not None, options)
        txn = self._txn
        source = _read_part(plan)
        if txn is None or source is None or not txn.has_pending(source[0]):
            return plan, None
        reads, point_keys = source
        bound = bind_plan(plan, parameters)
        # as Transaction.execute will decide: a key read sends what its keys need whatever columns it names (its
        # whole-row form reads them all)
        names = plan.names if isinstance(plan, ReadPlan) and plan.key_read is None else None
        flushing = frozenset(txn.to_flush(reads, point_keys, bound.rendered, names))
        if flushing <= options.own:
            return plan, bound
        # the same statement and parameters, planned to read this transaction's Cache versions too: same slots
        return plan_statement(self.db, self._raw, operation, parameters is not None, options_now(flushing)), bound

    def use_pipeline(self, analytical: bool, yielding: bool = False) -> None:
        """The engine's optimizer pipeline for the next read: the short pipeline (the paper found minimal_fast
        best for short statements) or, for a scan or aggregate, the default one with its parallelism, or the
        sequential one while it yields (every operator on the calling thread: tique/workload.py). A switch
        costs one round trip, so it happens only when the kind of statement changes."""
        if yielding:
            wanted = "sequential_pipe"
        elif analytical or not self.settings.short_pipeline:
            wanted = "default_pipe"
        else:
            wanted = self.settings.short_pipeline
        if self._zero_signs_kept:
            self._keep_zero_signs()
        else:
            self._set_pipeline(wanted)

    def _keep_zero_signs(self) -> None:
        """The next statements on a pipeline that keeps the signs of float zeros (tique/zero_signs.py)."""
        if self._raw.pipeline not in KEEPING:
            self._set_pipeline(SAFE)

    def _set_pipeline(self, wanted: str, session: PreparingConnection | None = None) -> None:
        session = session or self._raw
        if wanted == session.pipeline:
            return
        try:
            session.execute(f"SET optimizer = '{wanted}'")
        except errors.DatabaseError:
            session.pipeline = wanted  # an engine without that pipeline keeps its default; do not try again

    @contextlib.contextmanager
    def zero_signs_kept(self, needed: bool = True) -> Iterator[None]:
        """Reads in the block run on a pipeline that keeps the signs of their float zeros when ``needed`` (a
        CREATE TABLE AS ... WITH DATA stores what its SELECT returns: tique/zero_signs.py)."""
        was, self._zero_signs_kept = self._zero_signs_kept, self._zero_signs_kept or needed
        try:
            yield
        finally:
            self._zero_signs_kept = was

    def _yields(self, analytical: bool) -> bool:
        """Whether this read yields to the transactions of others (tique/workload.py); never when the settings
        say how analytical reads run."""
        s = self.settings
        return (
            analytical
            and s.analytical_yield
            and s.worker_limit is None
            and s.analytical_slots is None
            and self.db.workload.should_yield(id(self))
        )

    def rest_factor(self) -> float:
        """How long the next yielding read waits, in durations of the last (the analytical_rest setting). Over
        MAPI the server's threads run the reads at their usual priority, so they rest longer: measured at TPC-C
        scale 1.0, 4 transactional beside 2 analytical clients, the transactions lost 19-21% with a rest of 1.0
        and 6-12% with 3.0 over MAPI; embedded, at nice 19, 13-17% with 1.0."""
        rest = self.settings.analytical_rest
        if rest is not None:
            return rest
        return 1.0 if self.db.low_priority is not None else 3.0

    def _read(self, txn: Transaction, plan: ReadPlan, bound: Bound) -> Any:
        """A read of the snapshot, on the pipeline and under the gate its kind asks for."""
        analytical = plan.analytical
        yielding = self._yields(analytical)
        reader = self._reader(plan, yielding)
        if reader is None:
            self.use_pipeline(analytical, yielding)
        txn.reader = reader
        try:
            if not yielding:
                slots = self.settings.analytical_slots
                with self.db.analytical_gate(slots) if analytical else contextlib.nullcontext():
                    return txn.execute(plan, bound)
            low, work = self.db.low_priority, self.db.workload
            with work.turn:
                time.sleep(max(0.0, work.rested_at - time.monotonic()))  # the last yielding read's rest
                began = time.monotonic()
                try:
                    return low.call(lambda: txn.execute(plan, bound)) if low is not None else txn.execute(plan, bound)
                finally:
                    ended = time.monotonic()
                    work.rested_at = ended + self.rest_factor() * (ended - began)
        except errors.OperationalError as exc:
            if reader is not None and errors.connection_lost(exc):
                self._drop_reader()
            raise
        finally:
            txn.reader = None

    def _session(self) -> PreparingConnection:
        """A new engine session of this connection; its prepared statements are forgotten when the process's catalog
        changes (DDL here or elsewhere: MonetDB keeps them through another session's DDL)."""
        catalog = self.db.catalog

        def version() -> tuple[int | None, int]:
            return catalog.seen, catalog.version

        return PreparingConnection(self.db.connect_raw(), enabled=self.settings.prepare, catalog_version=version)

    def _reader(self, plan: ReadPlan, yielding: bool) -> PreparingConnection | None:
        """The session an analytical read runs on: a second engine session of this connection, opened at its
        first such read, on the analytical pipeline. Switching a session's pipeline drops every statement MonetDB
        prepared on it (measured on 11.41), so this session's short statements would be compiled again after
        each analytical read: at TPC-C's mix one Stock-Level in 25 transactions cost 0.8 PREPAREs per
        transaction. A read sees the same snapshot on any session (its snapshot is in its text, and the writes it
        needs were committed first). None: this session runs it, its pipeline switched - a key read, a session
        whose state another would not share (schema, time zone, role, temporary tables, variables, a pipeline
        or worker limit set), reads kept on a pipeline that keeps float zeros' signs, or no second session to
        be had (a server at its client limit)."""
        short = self.settings.short_pipeline
        if not plan.analytical or plan.key_read is not None or self._session_set or self._zero_signs_kept or not short:
            return None
        reader = self._analytical
        if reader is None:
            try:
                reader = self._session()
            except errors.Error:
                self._session_set = True  # one session it is, from now on
                return None
            reader.hooks = self._raw.hooks  # statement hooks see every statement of the connection
            reader.pipeline = ""  # not known: a server may be configured with another default, so it is set
            self._analytical = reader
        self._set_pipeline("sequential_pipe" if yielding else "default_pipe", reader)
        return reader

    def _drop_reader(self) -> None:
        reader, self._analytical = self._analytical, None
        if reader is not None:
            with contextlib.suppress(errors.Error):
                reader.close()

    @property
    def monet_version(self) -> str:
        """The MonetDB server version (``sys.environment``'s ``monet_version``), e.g. ``11.41.14``."""
        self._check_open()
        return str(self._raw.execute("SELECT value FROM sys.environment WHERE name = 'monet_version'").scalar())

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def autocommit(self) -> bool:
        return self._autocommit

    @autocommit.setter
    def autocommit(self, value: bool) -> None:
        if value and (not self._autocommit or self._block) and self._txn is not None:
            self.commit()  # as MonetDB does when autocommit is switched on
        self._autocommit = bool(value)
        self._block = False

    @property
    def _autocommitting(self) -> bool:
        """Does each statement commit on its own: autocommit mode, outside a START TRANSACTION block (as MonetDB
        and pymonetdb keep such a transaction open until COMMIT or ROLLBACK)?"""
        return self._autocommit and not self._block

    def set_autocommit(self, value: bool) -> None:  # pymonetdb's spelling
        self.autocommit = value

    def get_autocommit(self) -> bool:
        return self.autocommit

    def set_timezone(self, seconds_east_of_utc: int) -> None:
        """The session's time zone, as pymonetdb sets it (CURRENT_TIMESTAMP, TIMESTAMP WITH TIME ZONE values)."""
        sign = "-" if seconds_east_of_utc < 0 else "+"  # -30 minutes is -00:30 (pymonetdb's own gave +00:30)
        hours, minutes = divmod(abs(int(seconds_east_of_utc)) // 60, 60)
        self.cursor().execute(f"SET TIME ZONE INTERVAL '{sign}{hours:02}:{minutes:02}' HOUR TO MINUTE")

    # pymonetdb's fetch tuning: tique reads each result whole, so these are kept and have no effect
    replysize = 100
    maxprefetch = 0
    binary = 1
    sizeheader = True

    def get_replysize(self) -> int:
        return self.replysize

    def set_replysize(self, replysize: int) -> None:
        self.replysize = replysize

    def get_maxprefetch(self) -> int:
        return self.maxprefetch

    def set_maxprefetch(self, maxprefetch: int) -> None:
        self.maxprefetch = maxprefetch

    def get_binary(self) -> int:
        return self.binary

    def set_binary(self, binary: int) -> None:
        self.binary = binary

    def set_sizeheader(self, sizeheader: bool) -> None:
        self.sizeheader = sizeheader

    def _check_open(self) -> None:
        if self._closed:
            raise InterfaceError("the connection is closed")

    def transaction(self) -> Transaction:
        """The running transaction, begun now if there is none."""
        self._check_open()
        if self._txn is None:
            self._txn = Transaction(self.db, self._raw, self.settings, self._last_cts, self._last_txid)
            self._last_txid = self._txn.txid
            self.db.workload.began(self._txn.sts)
        return self._txn

    def _fail_transaction(self, reason: str) -> None:
        """The running transaction can only be rolled back from now on (cursor.executemany)."""
        if self._txn is not None and not self._txn.failed:
            self._txn.failed = reason

    @property
    def in_transaction(self) -> bool:
        return self._txn is not None

    # ---- users and privileges (privileges.py) --------------------------------------------------------------

    def run_access(self, plan: Access) -> None:
        """CREATE USER / GRANT / REVOKE: sent as written, outside any transaction (as DDL), then completed: the
        new user's password set so it verifies, or the table's privileges carried to its Storage and Cache."""
        self._check_open()
        self._session_set = True  # SET ROLE and the like: this session's privileges (see _reader)
        self._raw.execute(plan.sql)
        if plan.user is not None and plan.password_clause is not None:
            privileges.set_password_again(self._raw, plan.user, plan.password_clause)
        if plan.table is not None:
            schema, name = plan.table
            info = self.db.catalog.lookup(self._raw, schema or self.read_options.schema or self.db.default_schema, name)
            if info is not None:
                privileges.sync_table(self._raw, info)

    def may_write(self, txn: Transaction, plan: InsertPlan | UpdatePlan | DeletePlan) -> None:
        """Refuse a write the user holds no privilege for on the table, before anything is buffered (the engine
        also refuses the append to the Cache; this names the table and keeps the transaction usable)."""
        info = plan.table
        kind = "INSERT" if isinstance(plan, InsertPlan) else "UPDATE" if isinstance(plan, UpdatePlan) else "DELETE"
        privileges.require(self.db.user, txn.privilege_bits(info), info, kind)

    def read_denied(self, txn: Transaction, reads: Iterable[str], exc: ProgrammingError) -> ProgrammingError:
        """An engine refusal of a read, restated with the table the user may not read (else ``exc``)."""
        if self.db.owner or not errors.engine_access_denied(exc):
            return exc
        for info in self.db.catalog.all():
            if info.qualified in reads:
                try:
                    privileges.require(self.db.user, txn.privilege_bits(info), info, "SELECT")
                except ProgrammingError as denied:
                    return denied
        return exc

    # ---- executing a statement: the one path of every cursor.execute ---------------------------------------

    def _execute(self, operation: str, parameters: Params) -> Executed:
        """Plan one statement (bound by cursor.bind) and run it: transaction control, DDL and user management
        outside any transaction, anything else in the running one (begun now if there is none). An error rolls
        an autocommit transaction back; success commits it."""
        catalog_version = self.db.catalog.version
        try:
            plan, bound = self._plan_for(operation, parameters, catalog_version)
        except Exception as exc:  # a syntax error, an unknown name, a refused construct: in MonetDB as at its run
            if self._txn is not None and not self._autocommitting:
                self._aborted_by(self._txn, operation, exc)
            raise
        if isinstance(plan, DDL) and parameters is not None:
            # DDL is sent as written (not from a tree with slots): format its literals in, as pymonetdb does
            operation, parameters = inline(operation, parameters), None
            plan, bound = self._planned(operation, parameters)
        if isinstance(plan, Control):
            self._control(plan)
            return Executed(Result())
        if isinstance(plan, DDL):
            return Executed(self._ddl(plan))
        if isinstance(plan, Access):
            self.run_access(plan)
            return Executed(Result())
        txn = self.transaction()
        if self.db.catalog.version != catalog_version:  # the begin found DDL by another process: plan again
            plan, bound = self._planned(operation, parameters)
        altered = self._altered_since_begin(txn, lambda: self._tables_used(plan))  # DDL since the begin (rare)?
        if altered is not None:
            if self._autocommitting:
                self.rollback()
            raise altered
        stored: frozenset[str] = frozenset()
        try:
            if _engine_reads(plan):  # it may send pending writes first: inside, as the statement's own errors
                bound = bound or bind_plan(plan, parameters)
                names = plan.names if isinstance(plan, ReadPlan) else None
                stored = txn.storage_only(plan.reads, plan.point_keys, bound, names)  # type: ignore[union-attr]
                if stored:  # planned again, to read those tables' Storage alone: a plan per such set is cached
                    plan, bound = self._planned(operation, parameters, stored)
            try:
                executed = self._run(txn, plan, bound or bind_plan(plan, parameters))
            except errors.DataError:
                if _read_part(plan) is None or txn.failed:
                    raise
                # A value error may come from a row the snapshot does not hold: the query's filters also sift
                # Storage rows a newer version overrides (ReadOptions.exact_filters). The statement changed
                # nothing yet (its rows are staged after its read); run again, its filters on the snapshot's rows
                # alone, unless it filtered nothing so: a second error is the statement's own
                exact, exact_bound = self._planned(operation, parameters, stored, exact=True)
                if _read_template(exact) == _read_template(plan):
                    raise
                plan, bound = exact, exact_bound
                executed = self._run(txn, plan, bound or bind_plan(plan, parameters))
        except (ProgrammingError, errors.OperationalError) as exc:
            moved = self._moved_under(txn, plan, catalog_version, exc)
            if moved is None and isinstance(exc, ProgrammingError):  # a table it names went since the begin
                moved = self._altered_since_begin(txn, lambda: self._tables_named(operation, parameters))
            if self._autocommitting:
                self.rollback()
            self._aborted_by(txn, operation, moved or exc)
            if moved is not None:
                raise moved from exc
            if not isinstance(exc, ProgrammingError):
                raise
            better = restated(operation, exc)
            if better is exc:
                raise
            raise better from None
        except BaseException as exc:
            if self._autocommitting:
                self.rollback()
            self._aborted_by(txn, operation, exc)
            raise
        if self._autocommitting:
            self.commit()
        return executed

    def _aborted_by(self, txn: Transaction, operation: str, exc: BaseException) -> None:
        """A statement of the application's transaction failed: with on_statement_error='abort' (the default) the
        transaction can then only be rolled back, as MonetDB aborts it under pymonetdb, so a COMMIT after the
        error keeps nothing (pandas' to_sql commits after a chunk failed; code that catches an IntegrityError and
        commits expects MonetDB to refuse). An interrupt (Ctrl-C) is not the statement's failure; a construct
        tique refuses (NotSupportedError: a savepoint, MERGE...) or a parameter it cannot carry is refused before
        anything of it runs; several statements in one text are run one by one (Cursor._run_script)."""
        if self.settings.on_statement_error != "abort" or self._txn is not txn or not isinstance(exc, Exception):
            return
        if isinstance(exc, (errors.NotSupportedError, errors.ParameterRefused, errors.SeveralStatements)):
            return
        if not txn.failed:
            operation = operation.strip()
            shown = operation if len(operation) <= 80 else operation[:77] + "..."
            txn.failed = f"the statement {shown!r} failed: {exc}"

    def _plan_for(self, operation: str, parameters: Params, catalog_version: int) -> tuple[Plan, Bound | None]:
        """_planned; a statement refused against a catalog another process may have changed since is planned
        again after a begin, which syncs the catalog (see catalog.py)."""
        try:
            return self._planned(operation, parameters)
        except ProgrammingError as exc:
            if self._txn is not None:
                altered = self._altered_since_begin(self._txn, lambda: self._tables_named(operation, parameters))
                if altered is not None:  # a column or table it names was dropped or renamed by another session
                    if self._autocommitting:
                        self.rollback()
                    raise altered from exc
                raise
            self.transaction()
            try:
                if self.db.catalog.version == catalog_version:
                    raise
                return self._planned(operation, parameters)
            except ProgrammingError:
                if self._autocommitting:
                    self.rollback()
                raise

    def _run(self, txn: Transaction, plan: Plan, bound: Bound) -> Executed:
        """A statement in transaction ``txn``: a pass-through one as it is, a read of the snapshot (on the
        pipeline and under the gate its kind asks for), or a write buffered in the transaction."""
        if isinstance(plan, PassThrough):
            before = self._types_before()
            result = self._pass_through(plan, bound)
            return Executed(self._typed(result, plan, bound, before, lambda: bound.rendered))
        if isinstance(plan, ReadPlan):
            before = self._types_before()
            try:
                result = self._read(txn, plan, bound)
            except ProgrammingError as exc:  # the engine names tique's internal tables: name the user's
                raise self.read_denied(txn, plan.reads, exc) from None
            return Executed(self._typed(result, plan, bound, before, lambda: {**txn.slots(), **bound.rendered}))
        if not isinstance(plan, (InsertPlan, UpdatePlan, DeletePlan, CopyPlan)):  # pragma: no cover
            raise ProgrammingError(f"cannot run {type(plan).__name__}")
        if isinstance(plan, (InsertPlan, UpdatePlan, DeletePlan)) and not self.db.owner:
            self.may_write(txn, plan)
        if computes_floats(plan):
            self._keep_zero_signs()
        result = txn.execute(plan, bound)
        return Executed(result, txn.last_generated if isinstance(plan, InsertPlan) else None)

    def _types_before(self) -> object:
        """The version a query's result types are kept under, read before it runs (see _typed); embedded only."""
        return self.db.types_version() if self.db.result_types is not None else None

    def _typed(
        self,
        result: Result,
        plan: ReadPlan | PassThrough,
        bound: Bound,
        before: object,
        values: Callable[[], dict[str, str]],
    ) -> Result:
        """An embedded query's result with its values and type names as MonetDB types them (as pymonetdb has them
        over MAPI): the C API passes an INTERVAL as an integer, a JSON value quoted, a UUID as a string... The
        types are asked of MonetDB once per statement shape (tique/engine/result_types.py). Its context: the
        parameters' kinds (a NULL or an INTERVAL make `SELECT %s` of other types), the schema unqualified names
        are in, and this session when it has temporary tables (another's of the same name may differ, and so may
        one it made again). Kept under the catalog's version (Database.types_version), read before the statement
        ran (``before``) and after."""
        known = self.db.result_types
        if known is None or not result.columns:
            return result
        skip = [position for position, _ in plan.decode.columns]  # outputs tique read as text and decoded itself
        options = self.read_options
        context = (
            tuple(literal_kind(v) for v in bound.rendered.values()),
            options.schema,
            (self._number, self._temporaries_made) if options.temporary else None,
        )
        template = plan.template
        return known.typed(
            result,
            template,
            context,
            (before, self.db.types_version),
            lambda: describe(self._raw.execute, template.render(values())),
            skip,
        )

    def _altered_since_begin(
        self, txn: Transaction, tables: Callable[[], Iterable[str]]
    ) -> SerializationFailure | None:
        """Another session's DDL (seen by this process: its own sessions', or another process's learned at a
        begin) changed, dropped or re-created one of ``tables`` since this transaction began: the statement would
        read or write the table as it is now, not as the snapshot has it (a table dropped and created again
        holds other rows; an added column has no value in the snapshot), so the transaction fails, retryably.
        This session's own DDL of a table does not count (another session's after it does), nor does a table
        created since the begin. ``tables``: computed only when the catalog moved since the begin."""
        catalog, begun = self.db.catalog, txn.catalog_at_begin
        if catalog.version == begun or txn.failed:
            return None
        changed = sorted(
            q
            for q in tables()
            if catalog.changed_since(q, max(begun, txn.own_changed.get(q, 0)))
            and catalog.existed_at(q, begun)  # a table created since is no table the snapshot saw otherwise
        )
        if not changed:
            return None
        return self._ddl_conflict(txn, f"{', '.join(changed)} changed since the transaction began")

    def _ddl_conflict(self, txn: Transaction, why: str) -> SerializationFailure:
        txn.failed = f"a table it used was changed by DDL in another session ({why})"
        return SerializationFailure(
            "could not serialize: a table this statement uses was renamed, altered or dropped by DDL in another "
            f"session while the transaction ran; transaction {txn.txid} was rolled back: run it again (it will use "
            "the tables as they are now)"
        )

    def _moved_under(
        self, txn: Transaction, plan: Plan, catalog_version: int, exc: Exception
    ) -> SerializationFailure | None:
        """A statement failed in the engine: if DDL of another session (RENAME, ALTER, DROP, CREATE) changed a
        table it uses since it was planned, it ran against tables as they were (the engine then names tique's
        internal ones): the transaction fails, retryably. None when none of its tables changed: the error is the
        statement's own."""
        if type(exc) not in (ProgrammingError, errors.OperationalError) or errors.connection_lost(exc):
            return None  # tique's own classes (a conflict, a full disk, a time-out) say what happened already
        try:
            self.db.catalog.refresh(self._raw)
        except errors.DatabaseError:
            return None
        if not any(self.db.catalog.changed_since(q, catalog_version) for q in self._tables_used(plan)):
            return None
        return self._ddl_conflict(txn, str(exc))

    def _pass_through(self, plan: PassThrough, bound: Bound) -> Result:
        sql = plan.template.render(bound.rendered)
        if not _QUERY.match(sql):  # SET, DECLARE, CALL...: state of this session (see _reader)
            self._session_set = True
        result = decode(self._raw.execute(sql), plan.decode)
        if plan.names and self._txn is not None:
            self._not_renamed_meanwhile(plan)
        if plan.sets_schema:  # unqualified names now resolve in the schema MonetDB says is current
            schema = str(self._raw.execute("SELECT CURRENT_SCHEMA").scalar())
            self.read_options = replace(self.read_options, schema=schema)
        return result

    def _tables_named(self, operation: str, parameters: Params) -> set[str]:
        """The tables (TableInfo.qualified) a statement's text names, for one that could not be planned."""
        schema = self.read_options.schema or self.db.default_schema
        try:
            trees = parse(operation, parameters is not None)
        except Exception:  # not even parsed: nothing it names can have changed
            return set()
        return {table_key(given or schema, name) for tree in trees for given, name in tables_named(tree)}

    def _tables_used(self, plan: Plan) -> set[str]:
        """The tables (TableInfo.qualified) a plan reads or writes; of a pass-through statement, those it names."""
        if isinstance(plan, PassThrough):
            schema = self.read_options.schema or self.db.default_schema
            temporary = self.read_options.temporary  # a name MonetDB resolves to the session's temporary table
            return {table_key(given or schema, name) for given, name in plan.names if given or name not in temporary}
        used = set(getattr(plan, "reads", ()))
        for write in (plan, getattr(plan, "insert", None)):  # a CopyPlan's INSERT
            table = getattr(write, "table", None)
            if isinstance(table, TableInfo):
                used.add(table.qualified)
        return used

    def _not_renamed_meanwhile(self, plan: PassThrough) -> None:
        """A query that named no table of tique's when planned, run in a transaction: if one of its names is a
        tique table now (renamed back or created by another session since), MonetDB may have answered from
        tique's view of the latest committed state instead of the snapshot; fail the transaction, retryably."""
        schema = self.read_options.schema or self.db.default_schema
        self.db.catalog.refresh(self._raw)
        for given, name in plan.names:
            if not given and name in self._temporary:  # MonetDB read the session's temporary table
                continue
            info = self.db.catalog.get(given or schema, name)  # names as MonetDB stores them (statements.ident)
            if info is not None and info.kind != "plain" and self._txn is not None:
                self._txn.failed = f"table {name!r} was renamed or created by another session while a query ran"
                raise SerializationFailure(
                    f"could not serialize: table {name!r} was renamed or created by DDL in another session while "
                    f"this query ran; transaction {self._txn.txid} was rolled back: run it again"
                )

    def _control(self, plan: Control) -> None:
        if plan.action == "commit":
            self.commit()
        elif plan.action == "rollback":
            self.rollback()
        if plan.action == "begin" or plan.chain:
            self.transaction()  # AND CHAIN: the next transaction begins now, with a snapshot taken now
            self._block = self._autocommit  # in autocommit mode it lasts until COMMIT or ROLLBACK

    def _ddl(self, plan: DDL) -> Result:
        """DDL takes effect at once, outside any transaction (tique/ddl.py); the running one learns of it."""
        schema = self.read_options.schema or self.db.default_schema
        renamed = renamed_table(plan.tree, schema)
        if renamed is not None and self._txn is not None and renamed in self._txn.buffer.writes:
            # its writes are kept under the old name: a read by the new one would miss them, and COMMIT would fail
            # as if another session had dropped the table
            raise NotSupportedError(
                f"ALTER TABLE {renamed} RENAME TO: this transaction wrote to the table; commit or roll back first"
            )
        self.db.storage.check(self._raw, ask=True)  # a full disk: StorageFull before the engine's log breaks
        named = [table_key(given or schema, name) for given, name in tables_named(plan.tree)]
        if self._txn is not None and isinstance(plan.tree, exp.Alter) and self._txn.has_pending(named):
            # rows still in the client have the table's old shape: sent now, the ALTER changes them with the Cache
            # (sent after it, they failed as if another session had altered the table)
            self._txn.flush(named)
        if _TEMPORARY.search(plan.sql):
            self._session_set = True  # a temporary table is this session's alone (see _reader)
        if temporary.creates_temporary(plan.sql):
            return self._create_temporary(plan.sql, schema)
        temporary_target = temporary.named_temporary(plan.tree, self._temporary)
        if temporary_target is not None:  # DROP, TRUNCATE, CREATE INDEX... of a temporary table: MonetDB's own
            temporary.refuse_renamed(plan.tree)
            result = self._raw.execute(plan.sql)
            if isinstance(plan.tree, exp.Drop):
                self._temporary.pop(temporary_target, None)
                self._temporaries_changed()
            return result
        temporary.refuse_shadowed(self._raw, plan.tree)
        try:
            with self.db.changing_catalog():
                result = run_ddl(self.db, self._raw, plan.tree, plan.sql, self, schema)
                if not self.db.sequencer.restricted:  # any DDL: other processes' results are typed anew
                    self.db.sequencer.bump_catalog(self._raw)
        except errors.DatabaseError as exc:
            # only CREATE TABLE AS writes rows, into a table nobody else knows yet: other DDL may really conflict
            self.db.storage.raise_if_large_write_failed(
                exc, self._raw, LARGE_WRITE_SLACK if _creates_rows(plan.tree) else 0
            )
            raise
        if self._txn is not None:
            self._txn.ran_ddl(dropped_table(plan.tree, schema), result.ddl_txids)
            # the tables this DDL names (a rename's both names), not whatever else the catalog learned meanwhile
            for qualified in named:
                self._txn.own_changed[qualified] = self.db.catalog.version
        return result

    def _create_temporary(self, sql: str, schema: str) -> Result:
        def is_tique_table(schema: str, name: str) -> bool:  # a plain table is MonetDB's, read by the same rule
            info = self.db.catalog.lookup(self._raw, schema, name)
            return info is not None and info.kind != "plain"

        result, made = temporary.create(self._raw, sql, self, schema, is_tique_table)
        if made is not None:
            self._temporary[made.name] = made
            self._temporaries_changed()
        if self._autocommitting:  # the statement was its own transaction, and that ended
            self._end_temporaries()
        return result

    def _end_temporaries(self) -> None:
        """The end of a transaction, for the temporary tables made ON COMMIT DELETE ROWS or DROP (temporary.py)."""
        if self._temporary and not self._closed:
            temporary.end(self._raw, self._temporary)
            self._temporaries_changed()

    def _temporaries_changed(self) -> None:
        """Statements are planned knowing the session's temporary tables (MonetDB resolves a name to one first)."""
        names = frozenset(self._temporary)
        if names != self.read_options.temporary:
            self._temporaries_made += 1  # one made again under its name may have other columns (_typed)
            self.read_options = replace(self.read_options, temporary=names)

    # ---- PEP 249 -------------------------------------------------------------------------------------------

    def cursor(self) -> Any:
        from tique.cursor import Cursor

        self._check_open()
        return Cursor(self)

    def commit(self) -> None:
        self._check_open()
        self._block = False
        txn, self._txn = self._txn, None
        if txn is None:
            self._end_temporaries()
            return
        result: CommitResult | None = None
        started = time.monotonic()
        try:
            result = txn.commit()
        except SerializationFailure as exc:
            self.last_failed_write_set = txn.write_set()
            took = time.monotonic() - started
            if isinstance(exc, errors.LeaseExpired) and took * 1000 > self.settings.snapshot_lease_ms:
                # a COMMIT of a very large transaction (a million rows) outlasted the lease: a retry would too
                raise errors.LeaseExpired(
                    f"{exc} - this COMMIT took {took:.0f} s, longer than the snapshot lease "
                    f"(snapshot_lease_ms={self.settings.snapshot_lease_ms}), so a retry would fail the same way: "
                    "connect with a longer snapshot_lease_ms for transactions this large",
                    exc.sqlstate,
                ) from exc
            raise
        finally:
            if result is None and txn.committed_cts is not None:
                # committed, though COMMIT raised after the commit point (CommitOutcomeUnknown or an interrupt)
                result = CommitResult(True, txn.committed_cts, visible=False)
            if result is not None:
                self.last_commit = result
                if result.cts:
                    self._last_cts = result.cts  # the next transaction waits until it sees this commit
                    self.db.workload.committed(id(self), result.cts)
            self._end_temporaries()  # last: a lost connection here must not hide the outcome recorded above

    def rollback(self) -> None:
        self._check_open()
        self._block = False
        txn, self._txn = self._txn, None  # nothing it wrote was committed: its provisional rows are never visible
        if txn is not None and txn.buffer.in_cache():
            # rows it sent stay in the Cache until the checkpointer drops them, which it does only once the pin
            # ends (else at this session's next begin): a bulk load refuses their keys until then
            txn.lease.end_pin(txn.txid)
        self._end_temporaries()

    def close(self) -> None:
        """Close the connection; its running transaction is rolled back. Closing twice is an error, as in
        pymonetdb (PEP 249: operations on a closed connection raise)."""
        if self._closed:
            raise InterfaceError("the connection is already closed")
        self._txn = None  # closing rolls back
        self._closed = True
        try:  # an interrupt anywhere here still closes the sessions and gives the database back
            self.db.workload.forget(id(self))
            if self._last_txid and isinstance(self.db.sequencer, CSequencer):
                try:  # release the snapshot pin now rather than at the end of its lease
                    self._raw.execute(f"SELECT {self.db.sequencer.call('end_txn', self._last_txid)}")
                except errors.Error:  # a lost connection: the lease ends the pin
                    pass
        finally:
            try:
                self._drop_reader()
                self._raw.close()
            finally:
                self.db.release_connection()  # the last one closes an embedded database: its directory is free

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        """Commit on success, roll back on an exception; the connection stays open, as with sqlite3 and psycopg2.
        pymonetdb closes it instead (which drops what was not committed): code written for that closes it itself,
        or an embedded database stays held by this process (README)."""
        if self._closed:
            return
        if exc_type is None:
            self.commit()
        else:
            self.rollback()

    def bulk_load(self, table: str, rows: Iterable[Sequence[Any]], batch: int = 1000) -> int:
        """Load rows straight into a table's Storage as stable data: no versions, no commit protocol.

        For initial loads (and benchmarks) into tables that are not being written concurrently: the rows
        become visible to every snapshot at once, all or none. Keys already present are refused by Storage's
        primary key, and so are keys written since the last checkpoint (tique/bulk_load.py); UNIQUE and FOREIGN
        KEY constraints are not checked (the loader's duty, as for any initial load). Rows give every column of
        the table, in order. Returns the number of rows loaded.
        """
        info = self._load_target(table, "bulk_load")

        def check_space() -> None:  # a full disk: StorageFull before the engine's log breaks
            self.db.storage.check(self._raw, ask=True)

        total = self._load(
            info,
            lambda publish: bulk_load.load_rows(
                self._raw, info, table, rows, batch, publish, check_space, self._fresh_id
            ),
        )
        self._after_load(info)
        return total

    def bulk_load_csv(self, table: str, path: str | os.PathLike[str], delimiter: str = ",", null: str = "") -> int:
        """Load a CSV file (every column of the table, in order; ``"`` quotes; ``null`` marks NULL) straight
        into Storage with MonetDB's COPY INTO: the fast path for initial loads. The file is read by the engine,
        so it must be on the engine's machine. Same rules as ``bulk_load``. Returns the number of rows loaded."""
        info = self._load_target(table, "bulk_load_csv")
        source = os.path.abspath(path)
        if not os.path.exists(source):
            raise errors.ProgrammingError(f"bulk_load_csv: no file {source}")
        self.db.storage.check(self._raw, ask=True)  # a full disk: StorageFull before the engine's log breaks
        total = self._load(
            info,
            lambda publish: bulk_load.load_csv(
                self._raw, info, table, source, delimiter, null, publish, self._fresh_id
            ),
        )
        self._after_load(info)
        return total

    def _fresh_id(self) -> int:
        """A new transaction id (bulk loads number a keyless table's rows with them)."""
        return self.db.sequencer.next_txid(self._raw)

    def _load(self, info: TableInfo, load: Callable[[bulk_load.Publish], int]) -> int:
        """Run a bulk load (tique/bulk_load.py), its move into Storage as a committed catalog change of its table
        (versioned.py): a transaction that read or wrote the table and overlaps the move in commit order fails its
        certification, so no writer's version can hide a loaded row (one buffered in its client, or committed
        while the load ran, did), and every one that committed before it has its Cache rows in reach of the
        load's check. Later commits wait for the move (commit order), which is one INSERT ... SELECT. Once the
        load ends (or fails half way), the engine's catalog version is bumped, which drops the rows every process
        shares across transactions (shared_rows.py), and this process's at once, with the rows its open
        transactions hold (known_rows.py). An ordinary user's session (which may not write such records) moves
        the rows without it."""
        txn = self._txn
        if txn is not None and info.qualified in txn.buffer.writes:
            raise ProgrammingError(
                f"bulk_load: this connection's open transaction wrote to {info.name!r}; a load is not part of a "
                "transaction and its rows could be hidden by that transaction's: commit or roll back first"
            )
        ids: list[int] = []

        def publish(move: Callable[[], None]) -> None:
            if self.db.sequencer.restricted:
                move()
            else:
                versioned(self.db, self._raw, [(info.schema, info.name)], move, ids)

        try:
            return load(publish)
        except errors.DatabaseError as exc:
            # a load's rows go to its session's staging table (or COPY) first, which nothing else writes; its move
            # into Storage retries real conflicts itself
            self.db.storage.raise_if_large_write_failed(exc, self._raw, LARGE_WRITE_SLACK)
            raise
        finally:
            if txn is not None:  # its own load does not fail this session's transaction (it only read the table)
                txn.own_ddl.update(ids)
            self.db.shared_rows.clear()
            self.db.catalog.touch()
            if not self.db.sequencer.restricted:
                self.db.sequencer.bump_catalog(self._raw)

    def _load_target(self, table: str, what: str) -> TableInfo:
        """The table a bulk load writes."""
        self._check_open()
        # the name as given (a quoted "MixedCase" table), else folded as an unquoted SQL name would be
        info = self.db.catalog.lookup(self._raw, self.db.default_schema, table) or self.db.catalog.lookup(
            self._raw, self.db.default_schema, table.lower()
        )
        if info is None:
            raise errors.ProgrammingError(f"{what}: {table!r} is not a table of tique's")
        return info

    def _after_load(self, info: TableInfo) -> None:
        if info.kind == "tx" and info.generated:
            from tique.generated import after_bulk_load

            after_bulk_load(self._raw, self.db.sequencer.kind, info)

    def rewrite(self, operation: str, parameters: Any = None) -> str:
        """The SQL tique would send to MonetDB for a read, in this connection's current transaction."""
        from tique.cursor import bind

        operation, parameters = bind(operation, parameters)
        plan = self.plan(operation, parameters)
        if not isinstance(plan, ReadPlan):
            raise errors.ProgrammingError("rewrite() shows reads (SELECT) only")
        txn = self.transaction()
        return plan.template.render({**txn.slots(), **bind_plan(plan, parameters).rendered})

    def execute(self, operation: str, parameters: Any = None) -> Any:
        """A shortcut: a new cursor, executed."""
        cur = self.cursor()
        cur.execute(operation, parameters)
        return cur

    # ---- whole transactions --------------------------------------------------------------------------------

    def run(
        self,
        fn: Callable[[Connection], T],
        retries: int | None = None,
        priority: bool = False,
        backoff_s: float = 0.002,
    ) -> T:
        """Run ``fn(conn)`` as one transaction and commit; after a SerializationFailure run it again.

        With ``priority`` (section 2.3.4), a transaction that lost certification retries at once, first
        reserving the keys it wrote: short transactions that touch them lose meanwhile, so a long transaction
        is not starved; it aborts at most once if its keys stay the same. Other errors roll back and propagate.
        """
        attempts = self.settings.retries if retries is None else retries
        for attempt in range(attempts + 1):
            try:
                if priority and attempt > 0:
                    self.transaction().reserve(self.last_failed_write_set, RESERVATION_MS)
                result = fn(self)
                self.commit()
                return result
            except SerializationFailure:
                self.rollback()
                if attempt == attempts:
                    raise
                if not priority:
                    time.sleep(backoff_s * (2 ** min(attempt, 6)) * random.random())
            except BaseException:
                self.rollback()
                raise
        raise AssertionError("unreachable")


_QUERY = re.compile(r"\s*(?:\(\s*)*(?:SELECT|WITH|VALUES|EXPLAIN|PLAN|TRACE)\b", re.I)
_TEMPORARY = re.compile(r"\bTEMP(?:ORARY)?\b", re.I)


def _engine_reads(plan: Plan) -> bool:
    """Does the engine read the snapshot for ``plan``: a read or a write by other than whole keys (whole keys are
    read from the rows held or by a key read, which chooses its own form)?"""
    if isinstance(plan, ReadPlan):
        return plan.key_read is None
    return isinstance(plan, (UpdatePlan, DeletePlan)) and plan.row_read is None


def _read_template(plan: Plan) -> Template | None:
    """The statement that reads the snapshots for ``plan`` (None: it reads none)."""
    if isinstance(plan, ReadPlan):
        return plan.template
    return plan.select if isinstance(plan, (InsertPlan, UpdatePlan, DeletePlan)) else None


def _read_part(plan: Plan) -> tuple[frozenset[str], PointKeys] | None:
    """What a plan reads from snapshots: the tables and the keys it pins (None: it reads none)."""
    if isinstance(plan, (ReadPlan, UpdatePlan, DeletePlan)):
        return plan.reads, plan.point_keys
    if isinstance(plan, InsertPlan) and plan.select is not None:
        return plan.reads, ()
    return None


def connect(
    url: str | None = None,
    hostname: str | None = None,
    port: int | str = 50000,
    username: str | None = None,
    password: str = "monetdb",
    *,
    database: str | None = None,
    host: str | None = None,
    user: str | None = None,
    autocommit: bool = False,
    connect_timeout: float | None = None,
    schema: str | None = None,
    timezone: int | None = None,
    unix_socket: str | None = None,
    sock: str | None = None,
    replysize: int | None = None,
    maxprefetch: int | None = None,
    binary: int | None = None,
    client_info: bool | None = None,
    client_application: str | None = None,
    client_remark: str | None = None,
    **settings: Any,
) -> Connection:
    """Open a tique connection.

    ``tique.connect("monetdbe:///path/to/db")``, ``tique.connect("monetdbe::memory:")``,
    ``tique.connect("monetdb://user:pw@host:port/db")``, or pymonetdb's keywords:
    ``tique.connect(database="db", hostname="localhost", port=50000, username=..., password=...)`` (``host=`` and
    ``user=`` are aliases, as in pymonetdb; ``database=`` may also be a URL; as in pymonetdb the database may come
    first: ``tique.connect("db", "host", 50000, "user", "password")``). ``autocommit=True``, ``connect_timeout``
    (seconds to reach a server; -1 the system's default, 0 none; for this process's later connections to that server
    too), ``schema`` (the current schema) and ``timezone`` (minutes east of UTC) as in pymonetdb; its fetch tuning
    (``replysize``, ``maxprefetch``, ``binary``) and client details are taken and have no effect (tique reads each
    result whole); a Unix socket is refused (tique connects over TCP). Other keywords are Settings (``write_mode``,
    ``snapshot``, ``sequencer``...).
    """
    if unix_socket is not None or sock is not None:
        raise InterfaceError("tique connects to a server over TCP: give hostname= and port=, not a Unix socket")
    hostname = _one_of("hostname", hostname, "host", host) or "localhost"
    username = _one_of("username", username, "user", user) or "monetdb"
    if url is not None and database is None and ":" not in url:  # pymonetdb's connect("db", hostname=...)
        if "/" in url or "\\" in url:
            from pathlib import Path

            raise InterfaceError(
                f"{url!r} is a path, not a database name: open an embedded database in that directory with "
                f"tique.connect({'monetdbe://' + Path(url).resolve().as_posix()!r}), or give a server's database "
                "name"
            )
        url, database = None, url
    if url is None:
        if not database:
            raise InterfaceError("connect() needs a URL or database=...")
        if "://" in database or database.startswith("monetdbe:"):
            url = database
        else:
            from urllib.parse import quote

            from tique.engine.url import check_database_name

            check_database_name(database)
            url = f"monetdb://{quote(username, safe='')}:{quote(password, safe='')}@{hostname}:{port}/{database}"
    try:
        parsed_settings = Settings(**settings)
    except Exception as exc:  # pydantic's ValidationError lists every bad setting
        raise InterfaceError(f"bad settings: {exc}") from None
    if connect_timeout is not None:
        try:
            connect_timeout = float(connect_timeout)
        except (TypeError, ValueError):
            connect_timeout = -2.0  # refused below
        if connect_timeout < 0 and connect_timeout != -1:
            raise InterfaceError("connect_timeout: give seconds, 0 (none) or -1 (the default)")
    conn = Connection(url, parsed_settings, connect_timeout)
    try:
        for name, value in (("replysize", replysize), ("maxprefetch", maxprefetch), ("binary", binary)):
            if value is not None:
                setattr(conn, name, int(value))
        if timezone is not None:
            if not isinstance(timezone, int) or isinstance(timezone, bool):
                raise InterfaceError(f"timezone={timezone!r}: give minutes east of UTC, as an int")
            conn.set_timezone(60 * timezone)
        if schema is not None:
            conn.cursor().execute(f"SET SCHEMA {quoted_name(schema)}")
        conn.rollback()  # the statements above began a transaction, which wrote nothing
    except BaseException:
        conn.close()
        raise
    if autocommit:
        conn.autocommit = True
    return conn


def _one_of(name: str, value: str | None, alias: str, alias_value: str | None) -> str | None:
    if value is not None and alias_value is not None and value != alias_value:
        raise InterfaceError(f"connect() got both {name}={value!r} and its alias {alias}={alias_value!r}")
    return value if value is not None else alias_value


def computes_floats(plan: Plan) -> bool:
    """Does the engine compute REAL or DOUBLE values this write stores (an INSERT ... SELECT, or an UPDATE that sets
    such a column)? Then the statement runs on a pipeline that keeps the signs of its zeros: the default one
    gives a statement's constant zeros one sign (tique/zero_signs.py). Values from parameters or literal rows
    are converted in the client and need none."""
    if not isinstance(plan, (InsertPlan, UpdatePlan)) or not plan.table.float_positions:
        return False
    if isinstance(plan, InsertPlan):
        return plan.select is not None
    stored = plan.table.stored_names
    return any(stored[i] in plan.assigned for i in plan.table.float_positions)


def _creates_rows(tree: Any) -> bool:
    """CREATE TABLE ... AS SELECT (WITH DATA): DDL that writes rows."""
    return isinstance(tree, exp.Create) and str(tree.args.get("kind", "")).upper() == "TABLE" and bool(tree.expression)
