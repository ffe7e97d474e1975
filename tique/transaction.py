"""One transaction: a coordinator of its snapshot lease (tique/snapshot_lease.py), its write buffer
(tique/write_buffer.py), the rows its statements build (tique/rows.py) and their constraint checks
(tique/constraints.py). COMMIT runs the protocol in tique/commit.py."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from tique import commit as commit_protocol
from tique import privileges, shared_rows
from tique.append_guard import cache_of, storage_of
from tique.cache_keys import CacheKeys, eligible
from tique.catalog import TableInfo, schema_hash
from tique.commit import CommitResult as CommitResult
from tique.commit import step_hooks as step_hooks  # tests and tools hook the protocol's steps here
from tique.constraints import Constraints
from tique.database import Database
from tique.engine.base import RawConnection, Result
from tique.errors import (
    DatabaseError,
    DataError,
    Error,
    IntegrityError,
    InterfaceError,
    LeaseExpired,
    OperationalError,
    ProgrammingError,
    SerializationFailure,
    StorageFull,
    TransactionFailed,
    UniqueViolation,
    connection_lost,
)
from tique.known_rows import MISSING, KnownRows, Row
from tique.prepared import PreparingConnection
from tique.record_keys import SnapshotKeys
from tique.rewrite.exact import decode
from tique.rewrite.point import KeyRead, computable, natural, new_values, newest_by_key, newest_versions
from tique.rewrite.reads import PointKeys
from tique.rewrite.template import Template
from tique.rewrite.values import coerce
from tique.rewrite.writes import DeletePlan, InsertPlan, UpdatePlan
from tique.rows import inserted_rows, updated_rows
from tique.settings import Settings
from tique.snapshot_lease import SnapshotLease
from tique.statements import ReadPlan
from tique.write_buffer import Key, TableWrites, WriteBuffer, row_key, show, typed_key
from tique.zero_signs import (
    ZERO_BATCH,
    ZeroRow,
    narrowed,
    zero_checks,
    zero_signs_kept,
    zeros_in_place,
    zeros_wrong,
    zeros_wrong_by_row,
)

if TYPE_CHECKING:
    from tique.statements import Bound, CopyPlan, WritePlan


# Several flush statements go as one engine transaction (Transaction.flush). benchmarks/stmts.py turns it off to
# measure the old path, each statement on its own.
ATOMIC_FLUSH = True
# sends of a flush's versions whose REAL or DOUBLE zero came out with the other sign, before the last resort of
# writing them in place (zero_signs_checked): under a stress of flipping zeros, a version kept landing with the
# wrong sign in 20 sends running in 2 of 3 runs of 15 s (about 2,500 transactions each)
ZERO_SIGN_TRIES = 20
# a flush's versions holding a REAL or DOUBLE zero, still to check (Transaction.zero_signs_checked): their table,
# first statement, each one's key and zeros, and the versions as sent
ZerosDue = tuple[TableInfo, int, list[tuple[Key, ZeroRow]], dict[Key, tuple[Any, int]]]


class Transaction:
    """Created lazily by the connection at its first statement; ended by commit() or rollback(). A coordinator:
    its snapshot and lease (SnapshotLease), its buffered writes (WriteBuffer), their checks (Constraints) and
    COMMIT (tique/commit.py); it decides when buffered rows go to the engine and when a failure ends it."""

    def __init__(
        self, db: Database, conn: RawConnection, settings: Settings, min_sts: int = 0, prev_txid: int = 0
    ) -> None:
        self.db = db
        self.conn = conn
        self.reader: Any = None  # the session this transaction's reads run on, when not ``conn`` (Connection._read)
        self.settings = settings
        self.last_generated: int | None = None  # the first key the last INSERT generated
        self.failed: str | None = None  # set when the transaction can only be rolled back
        self.committed_cts: int | None = None  # set at the commit point: the committed outcome is recorded
        self.priority = False  # a retry holding reservations (see reserve)
        self.privileges: dict[tuple[str, str], int] = {}  # an ordinary user's privilege bits per table written
        self.parts_read: set[int] = set()  # tables this transaction read a part of whole (_read_every): one each
        self.read_names: set[str] = set()  # tables read (schema.name, as plans list them): checked for DDL at commit
        self.reads_run = 0  # statements that read tables (a read-only transaction of several is checked at commit)
        self.ddl_conflict = False  # certification failed on DDL (DROP/ALTER) of a table it used
        self.own_ddl: set[int] = set()  # DROPs this session ran meanwhile: not conflicts (see forget_table)
        # tables this session's DDL named meanwhile, with the catalog version after it: their changes up to it are
        # the transaction's own
        self.own_changed: dict[str, int] = {}
        self.lease = SnapshotLease(db, conn, settings, min_sts, prev_txid)
        # DDL takes effect at once: once the process ran one (or learned of one) since this begin, rows shared
        # under the begin's catalog version may not be the engine's any more (see shares)
        self.catalog_at_begin = db.catalog.version
        self.buffer = WriteBuffer(self.lease.txid)
        self.known = KnownRows()  # rows of the snapshot held whole (known_rows.py)
        # which keys may have Cache rows (cache_keys.py embedded, record_keys.py over MAPI); either reads the Cache
        # tables, which only the owner may
        self.cache_keys: CacheKeys | SnapshotKeys | None = None
        if db.owner:
            self.cache_keys = db.cache_keys or (db.record_keys.at(self.lease) if db.record_keys else None)
        self.constraints = Constraints(
            db.catalog,
            conn,
            self.buffer,
            self.slots,
            self.flush,
            settings.insert_check,
            self.cache_keys,
            db.append_guard,
        )

    @property
    def sts(self) -> int:
        return self.lease.sts

    @property
    def txid(self) -> int:
        return self.lease.txid

    @property
    def writes(self) -> dict[str, TableWrites]:
        return self.buffer.writes

    @property
    def read_only(self) -> bool:
        return self.buffer.read_only

    def reserve(self, hashes: Sequence[int], lease_ms: int) -> None:
        """Priority mode (section 2.3.4): reserve the keys a failed attempt wrote, then take a fresh snapshot
        that includes every commit under way. Transactions that certify from now on and touch these keys lose;
        this one certifies only against decided transactions, so it is not starved by short ones."""
        if not hashes:
            return
        until = int(time.time() * 1000) + lease_ms
        self.conn.execute(
            "INSERT INTO tique.reservations VALUES " + ", ".join(f"({self.txid}, {h}, {until})" for h in hashes)
        )
        last = self.db.sequencer.counters(self.conn)[1]
        self.lease.sts = self.lease.await_sts(last, "a commit under way")
        self.known.clear()  # rows of the old snapshot
        self.priority = True

    def check_usable(self) -> None:
        """Before every statement: refuse one in a failed transaction, and keep the snapshot's lease."""
        if self.failed:
            raise TransactionFailed(f"the transaction was aborted ({self.failed}); call rollback() to start a new one")
        try:
            self.lease.renew()
        except LeaseExpired:
            self.failed = "its snapshot lease ran out"
            raise

    def slots(self) -> dict[str, str]:
        return self.lease.slots()

    # ---- running statements --------------------------------------------------------------------------------

    def execute(self, plan: ReadPlan | WritePlan, bound: Bound) -> Result:
        """Run one statement of this transaction: a read of its snapshot (the rows), or a write buffered in it
        (the rows it wrote as ``rowcount``)."""
        if isinstance(plan, ReadPlan):
            if plan.key_read is not None:
                return self.key_read(plan, plan.key_read, bound)
            # an analytical read runs as text: see run's ``prepare``
            args = (plan.template, bound.rendered, plan.reads, plan.point_keys, plan.names)
            return decode(self.run(*args, prepare=not plan.analytical), plan.decode)
        if isinstance(plan, InsertPlan):
            return Result(rowcount=self.insert(plan, bound.values, bound.rendered))
        if isinstance(plan, UpdatePlan):
            return Result(rowcount=self.update(plan, bound))
        if isinstance(plan, DeletePlan):
            return Result(rowcount=self.delete(plan, bound))
        return Result(rowcount=self.copy(plan))

    def run(
        self,
        template: Template,
        params: dict[str, str],
        reads: Iterable[str] = (),
        point_keys: PointKeys = (),
        names: frozenset[str] | None = None,
        stored: frozenset[str] = frozenset(),
        cached: frozenset[str] = frozenset(),
        prepare: bool = True,
    ) -> Result:
        """Run a rewritten read; the transaction's pending writes to the tables it reads reach the engine first,
        unless the read asks for exact keys none of them has, or reads none of the columns they update
        (WriteBuffer.to_flush): one round trip saved per such table. ``stored``: tables it reads from Storage
        alone (kept from appends to their Storage only: append_guard.py); ``cached``: tables it reads from the Cache
        alone. ``prepare=False`` sends the text every time: MonetDB 11.41 runs the plan it prepared for a join
        slower than the one it makes for the text, on the default pipeline (CH-benCHmark at scale 1.0, 22 queries
        alternating: 1.89 s as EXECs against 1.57 s as text, Q21 145 against 90 ms), while parsing and optimizing
        cost a millisecond or two; so analytical reads run as text."""
        self.check_usable()
        self.read_names.update(reads)
        self.reads_run += 1
        self.flush(self.to_flush(reads, point_keys, params, names))
        values = {**self.slots(), **params}
        conn = self.reader or self.conn
        if isinstance(conn, PreparingConnection):
            prepared = conn

            def run() -> Result:
                return prepared.run(template, values) if prepare else prepared.as_text(template, values)
        else:

            def run() -> Result:
                return conn.execute(template.render(values))

        guard = self.db.append_guard
        if guard is None:
            return run()
        found = (self.db.catalog.named(name) for name in reads)
        strings = [info.qualified for info in found if info is not None and _reads_strings(template, info)]
        parts = [storage_of(t) for t in strings if t not in cached] + [cache_of(t) for t in strings if t not in stored]
        return guard.reading(parts, run)

    # ---- rows the transaction holds whole (known_rows.py, rewrite/point.py) --------------------------------

    def held_keys(self, info: TableInfo, slots: Sequence[Sequence[str]], values: dict[str, Any]) -> list[Key] | None:
        """The keys a statement names with parameters (per key column, the parameters it is compared with: every
        combination), as the engine compares them; None when held rows cannot answer it: a parameter of another
        type than its column's, or one the column would round (the engine converts it, by its own rules), or a
        negative control that must read the newest data."""
        if self.settings.unsafe_read_latest or not self.settings.held_rows:
            return None
        if not self.db.owner and not privileges.may_read(self.privilege_bits(info)):
            return None  # the engine's read refuses it, and says so
        columns: list[list[Any]] = []
        for params, name in zip(slots, info.key):
            given = [values[s] for s in params]
            if not _compared_as_given(info, name, given):
                return None
            columns.append(given)
        return list(dict.fromkeys(typed_key(info, combination) for combination in itertools.product(*columns)))

    def held_row(self, info: TableInfo, key: Key) -> Row | None:
        """The row of ``key`` this transaction holds (None: it holds that there is none), or MISSING. An inserted
        key not yet checked against the snapshot is not held: the read that needs it runs the check."""
        entry = self.buffer.writes.get(info.qualified)
        if entry is not None and key in entry.unchecked:
            return MISSING  # type: ignore[no-any-return]
        return self.holding.get(info, key)  # type: ignore[no-any-return]

    @property
    def holding(self) -> KnownRows:
        """The rows held, forgotten when DDL ran in the process since they were (KnownRows.at)."""
        return self.known.at(self.db.catalog.version)

    def check_due(self, reads: Iterable[str], point_keys: PointKeys, rendered: dict[str, str]) -> bool:
        """Would the engine's run of this statement first send inserted rows whose keys are not checked yet
        (insert_check='flush')? Their check fails the transaction there on a duplicate, so held rows, which send
        nothing, leave such a statement to the engine."""
        return any(self.buffer.writes[t].unchecked for t in self.to_flush(reads, point_keys, rendered))

    def key_read(self, plan: ReadPlan, read: KeyRead, bound: Bound) -> Result:
        """A read of rows by their whole keys: from the rows held, else from the engine (every column when an
        UPDATE of a row it read followed before: Learned.whole), keeping the rows or what it learns."""
        info, columns = read.table, plan.learned.columns
        keys = self.held_keys(info, read.key_slots, bound.values)
        due = keys is not None and self.check_due(plan.reads, plan.point_keys, bound.rendered)
        rows = None if keys is None or due else [self.held_row(info, k) for k in keys]
        sharing = keys is not None and self.shares(info)
        if sharing and rows is not None:
            rows = self._shared_rows(info, keys, rows)  # type: ignore[arg-type]
            if any(r is MISSING for r in rows) and self._read_every(plan, read):
                rows = self._shared_rows(info, keys, rows)  # type: ignore[arg-type]
        missing = rows is None or any(r is MISSING for r in rows)
        if keys is not None and missing and columns is not None:
            quiet = sharing and self.db.shared_rows.quiet(info, self.sts, self.lease.catalog_seen)  # type: ignore[arg-type]
            if plan.learned.whole or quiet:
                rows = self.read_whole(plan, read, bound, keys)
        if rows is None or columns is None or any(r is MISSING for r in rows):
            template, stored = plan.template, frozenset[str]()
            if plan.stored is not None and keys is not None and self._uncached(plan, read, bound, keys):
                template, stored = plan.stored, frozenset({info.qualified})
            result = decode(self.run(template, bound.rendered, plan.reads, plan.point_keys, stored=stored), plan.decode)
            if plan.learned.columns is None:
                plan.learned.columns = list(result.columns)
            for key in keys or ():
                self.holding.read_by(info, key, plan.learned)
            if keys is not None and read.whole_row:  # every column read: the rows are held as they are
                self._hold_found(info, keys, [read.stored_row(r) for r in result.rows])
            return result
        self.check_usable()
        self.read_names.update(plan.reads)
        self.reads_run += 1
        out = [tuple(row[i] for i in read.outputs) for row in rows if row is not None]
        return Result(columns=list(columns), rows=out, rowcount=len(out))

    def read_whole(
        self, plan: ReadPlan | UpdatePlan | DeletePlan, read: KeyRead, bound: Bound, keys: list[Key]
    ) -> list[Row | None]:
        """Every column of the rows of ``keys``, from the engine; held from now on (None: no such row)."""
        info = read.table
        if read.versions is not None and read.versions_decode is not None:
            found: list[Row] | None = None
            if read.stored is not None and self._uncached(plan, read, bound, keys):
                stored = frozenset({info.qualified})
                run = self.run(read.stored, bound.rendered, plan.reads, plan.point_keys, stored=stored)
                found = [tuple(r) for r in decode(run, read.versions_decode).rows]
            elif read.cached is not None and self.settings.cache_first:
                found = self._cache_first(plan, read, bound, keys)
            if found is None:
                run = self.run(read.versions, bound.rendered, plan.reads, plan.point_keys)
                found = newest_versions(info, decode(run, read.versions_decode).rows)
            return self._hold_found(info, keys, found)
        result = decode(self.run(read.full, bound.rendered, plan.reads, plan.point_keys), read.full_decode)
        return self._hold_found(info, keys, [tuple(r) for r in result.rows])

    def _cache_first(
        self, plan: ReadPlan | UpdatePlan | DeletePlan, read: KeyRead, bound: Bound, keys: list[Key]
    ) -> list[Row] | None:
        """The rows of ``keys`` from their visible Cache versions when every key has one (a tombstone counts): a
        visible Cache version outranks any Storage row, so one Cache statement answers a hot row (a TPC-C
        district) instead of the union, which costs what both its branches cost. None when a key has none: then
        the union answers all of them in one statement (a Storage statement beside the Cache one would not be
        atomic: a bulk load or another session's DDL between the two would tear the read). A read whose Cache
        statement keeps missing goes to the union straight away (CacheFirst)."""
        assert read.cached is not None and read.versions_decode is not None
        if not read.cache_first.worth_trying():
            return None
        info = read.table
        run = self.run(read.cached, bound.rendered, plan.reads, plan.point_keys, cached=frozenset({info.qualified}))
        newest = newest_by_key(info, decode(run, read.versions_decode).rows)
        hit = all(key in newest for key in keys)
        read.cache_first.count(hit)
        return [row for row in newest.values() if row is not None] if hit else None

    def _uncached(self, plan: ReadPlan | UpdatePlan | DeletePlan, read: KeyRead, bound: Bound, keys: list[Key]) -> bool:
        """Has no Cache row any of ``keys`` (tique/cache_keys.py)? Then their Storage rows are the snapshot's. The
        transaction's own pending writes these keys need reach the Cache first, as the read would send them."""
        if self.cache_keys is None or self._wrote(read.table, keys):
            return False
        self.flush(self.buffer.to_flush(plan.reads, plan.point_keys, bound.rendered))
        return self.cache_keys.lacks(read.table, keys, self.conn)

    def _wrote(self, info: TableInfo, keys: Iterable[Key]) -> bool:
        """Did this transaction write any of ``keys`` of ``info``? Its own Cache rows have no commit record yet, so
        over MAPI no process's key set has them (record_keys.py); embedded they are there from before they are sent."""
        entry = self.buffer.writes.get(info.qualified)
        return entry is not None and any(k in entry.live for k in keys)

    def storage_only(
        self,
        reads: Iterable[str],
        point_keys: PointKeys = (),
        bound: Bound | None = None,
        names: frozenset[str] | None = None,
    ) -> frozenset[str]:
        """The tables of ``reads`` whose Storage rows are the snapshot's for this statement (tique/cache_keys.py),
        so that its read needs neither the Cache branch nor the anti-join: those no Cache row has at all and this
        transaction has written nothing to, and those it reads by key values (``point_keys``, with ``bound``'s
        values) that no Cache row's key has, once the transaction's own pending writes the read needs are sent
        (``names``: as ``to_flush``; a pending write the read need not see changes none of the rows it finds,
        the order lines' SUM(ol_amount) after their UPDATE of ol_delivery_d). Asked after the begin: a commit the
        snapshot sees had its rows in the Cache before it."""
        known = self.cache_keys
        if known is None or self.settings.unsafe_read_latest:
            return frozenset()
        pinned = dict(point_keys)
        out = []
        for name in reads:
            info = self.db.catalog.named(name)
            if info is None:
                continue
            if name not in self.buffer.writes and known.lacks(info, None, self.conn):
                out.append(name)
                continue
            pins = self._pinned_values(info, pinned.get(name), bound) if eligible(info) else None
            if pins is None:  # (a table no set is kept for: nothing to send for it before the statement runs)
                continue
            positions, key = pins
            if len(positions) == len(info.key) and self._wrote(info, [key]):
                continue
            self.flush(self.buffer.to_flush([name], point_keys, bound.rendered, names))  # type: ignore[union-attr]
            if known.lacks(info, [key], self.conn, positions):
                out.append(name)
        return frozenset(out)

    def _pinned_values(
        self, info: TableInfo, slots: tuple[str, ...] | None, bound: Bound | None
    ) -> tuple[tuple[int, ...], Key] | None:
        """The key columns a read pins to one value each (their positions in the key) and those values, as the
        engine compares them; None when it pins none, or a value is not one the column holds as given."""
        if slots is None or bound is None or not any(slots):
            return None
        positions = tuple(i for i, slot in enumerate(slots) if slot)
        values = []
        for i in positions:
            if slots[i] not in bound.values:
                return None
            value = bound.values[slots[i]]
            if not _compared_as_given(info, info.key[i], [value]):
                return None
            values.append(value)
        return positions, tuple(values)

    def _hold_found(self, info: TableInfo, keys: list[Key], rows: list[Row]) -> list[Row | None]:
        """Hold what a read of ``keys`` found: its ``rows`` (whole, in stored order), and no row for the rest;
        shared with later transactions when the table allows it (shared_rows.py)."""
        found = {row_key(info, row): row for row in rows}
        for key in keys:
            self.holding.put(info, key, found.get(key))
        if self.shares(info):
            self.db.shared_rows.put(info, [(k, found.get(k)) for k in keys], self.sts, self.lease.catalog_seen)  # type: ignore[arg-type]
        return [found.get(key) for key in keys]

    def shares(self, info: TableInfo) -> bool:
        """May this transaction's reads of ``info`` use and feed the rows shared across transactions: the engine
        gave write marks at begin, and the transaction wrote nothing there (its own versions are not the
        snapshot's)? Tracks the table's writes from the next begin on."""
        if not self.settings.shared_rows or self.lease.catalog_seen is None or info.has_rowid:
            return False
        if self.db.catalog.version != self.catalog_at_begin:
            # a DDL since this begin (DROP COLUMN c, then ADD COLUMN c as it was: the same spec, every row's c
            # the DEFAULT) is in the engine at once, as for the rows held (holding), but not in the shared rows'
            # catalog version, which only a later begin reads
            return False
        self.db.shared_rows.track(info)
        return info.qualified not in self.buffer.writes

    def _read_every(self, plan: ReadPlan, read: KeyRead) -> bool:
        """Read the next part of a quiet table that keeps missing whole, for every transaction of the process
        (shared_rows.py); False when it does not want it."""
        info, shared, version = read.table, self.db.shared_rows, self.lease.catalog_seen
        if version is None or info.table_id in self.parts_read:
            return False
        offset = shared.wants_whole(info, self.sts, version)
        if offset is None:
            return False
        self.parts_read.add(info.table_id)
        try:
            if offset == 0 and self._stored_rows(info) > shared.max_rows:
                shared.refuse_whole(info)
                return False
            part = self.run(read.every_part(offset, shared_rows.WHOLE_PART), {}, plan.reads, ())
            rows = [tuple(r) for r in decode(part, read.every_decode).rows]
            found = [(row_key(info, r), r) for r in rows]
            last = len(rows) < shared_rows.WHOLE_PART
            shared.put_part(info, offset, found, last, self.sts, version)  # type: ignore[arg-type]
        finally:
            shared.end_whole(info)
        return True

    def _stored_rows(self, info: TableInfo) -> int:
        """Rows the table's snapshot holds at least: its Storage's less one per Cache row (a key the snapshot
        deleted has one at least). Storage's alone refused for good a table whose deletes the checkpoint had not
        moved yet, though its snapshot fitted; a quiet table's Cache is mostly moved, so this is Storage's count."""
        count = f"SELECT (SELECT COUNT(*) FROM {info.storage}) - (SELECT COUNT(*) FROM {info.cache})"
        return int((self.reader or self.conn).execute(count).scalar())

    def _shared_rows(self, info: TableInfo, keys: list[Key], rows: list[Row | None]) -> list[Row | None]:
        """``rows`` (per key: held, or MISSING) with each MISSING one taken, when there is one, from a row another
        transaction read whole at a snapshot no commit to the table since sets apart from this one (None: no
        row); what is taken is held from now on."""
        out = list(rows)
        for i, (key, row) in enumerate(zip(keys, rows)):
            if row is MISSING:
                out[i] = self.db.shared_rows.get(info, key, self.sts, self.lease.catalog_seen)  # type: ignore[arg-type]
                if out[i] is not MISSING:
                    self.holding.put(info, key, out[i])
        return out

    def _hold(self, info: TableInfo, rows: Iterable[tuple[Key, Row | None]]) -> None:
        """A write statement succeeded: its rows (None: a key it deleted) are what the transaction sees now."""
        if info.has_rowid:
            return
        for key, row in rows:
            self.holding.put(info, key, row)

    def to_flush(
        self, reads: Iterable[str], point_keys: PointKeys, params: dict[str, str], names: frozenset[str] | None = None
    ) -> list[str]:
        if names is not None and self.db.catalog.version != self.catalog_at_begin:
            names = None  # DDL since the begin (a column renamed): the names of the pending updates may be others'
        return self.buffer.to_flush(reads, point_keys, params, names)

    def has_pending(self, tables: Iterable[str]) -> bool:
        """Some write to one of ``tables`` is still buffered in the client only."""
        return self.buffer.has_pending(tables)

    def privilege_bits(self, info: TableInfo) -> int:
        """An ordinary user's privileges on ``info`` (privileges.held), looked up once per transaction."""
        key = (info.schema, info.name)
        bits = self.privileges.get(key)
        if bits is None:
            bits = self.privileges[key] = privileges.held(self.conn, info)
        return bits

    def ran_ddl(self, dropped: str | None, ddl_txids: Sequence[int]) -> None:
        """This session ran DDL meanwhile (DDL takes effect at once): its own DDL does not fail this transaction
        at commit as another session's would; a DROP of a table takes this transaction's writes there along."""
        self.known.clear()  # the table may have other columns now
        if dropped:
            self.forget_table(dropped, ddl_txids)
        else:
            self.own_ddl.update(ddl_txids)

    def in_cache(self) -> frozenset[str]:
        return self.buffer.in_cache()

    def forget_table(self, name: str, ddl_txids: Sequence[int]) -> None:
        """This session dropped table ``name`` while the transaction ran: its writes there went with the table
        (DDL takes effect at once), so they do not commit, and that DROP (``ddl_txids``) does not fail the commit
        as a DROP by another session would; writes to a table of that name created afterwards commit."""
        self.buffer.forget(name)
        self.read_names.discard(name)
        self.own_ddl.update(ddl_txids)

    def insert(self, plan: InsertPlan, values: dict[str, Any], rendered: dict[str, str]) -> int:
        self.check_usable()
        info = plan.table
        if plan.rows is not None:
            source = [tuple(values[i[1]] if i[0] == "s" else i[1] for i in row) for row in plan.rows]
        else:
            assert plan.select is not None
            with _naming(info, "INSERT into", plan.columns):
                selected = decode(self.run(plan.select, rendered, plan.reads), plan.decode)  # (no key shortcut)
            source = [tuple(r) for r in selected.rows]
        self.last_generated = None
        rows, self.last_generated = inserted_rows(self.db, self.conn, info, plan.columns, source, self.txid)
        keys = [k for k, _ in rows]
        marks = self.constraints.constrain(info, rows, keys, [])
        with self._statement(info, keys) as entry:
            self.constraints.check_new_keys(info, keys)
            self.buffer.stage_inserted(entry, rows, marks)
        self._hold(info, rows)
        return len(rows)

    def copy(self, plan: CopyPlan) -> int:
        """COPY INTO a transactional table (statements.CopyPlan): the engine loads a staging table of this
        session, whose rows are then inserted as this transaction's, all or none."""
        self.check_usable()
        self.conn.execute(plan.create)
        try:
            try:
                self.conn.execute(plan.copy)
            except Error as exc:  # MonetDB names the staging table ("Failed to import table 'tq_copy_1'")
                staged, name = plan.staging.split(".")[-1], plan.insert.table.name
                if staged not in str(exc):
                    raise
                raise type(exc)(str(exc).replace(plan.staging, name).replace(staged, name), exc.sqlstate) from None
            return self.insert(plan.insert, {}, {})
        finally:
            self.conn.execute(f"DROP TABLE {plan.staging}")

    def update(self, plan: UpdatePlan, bound: Bound) -> int:
        self.check_usable()
        info = plan.table
        selected = self.held_update(plan, bound)
        if selected is None and self._read_updated_row(plan, bound):
            selected = self.held_update(plan, bound)
        if selected is None:
            with _naming(info, "UPDATE of", plan.assigned):
                selected = decode(self.run(plan.select, bound.rendered, plan.reads, plan.point_keys), plan.decode).rows
        nkey = len(info.key)
        matched = [typed_key(info, raw[:nkey]) for raw in selected]
        if len(set(matched)) != len(matched):  # UPDATE ... FROM joined a target row to several rows
            twice = next(k for k in matched if matched.count(k) > 1)
            raise ProgrammingError(
                f"UPDATE ... FROM: row {show(info, twice)} of {info.name!r} matches several rows of the FROM tables, "
                "so its new value is ambiguous (MonetDB refuses such an UPDATE too); make the join match one row",
                "21000",
            )
        in_place, moved = updated_rows(info, selected)
        leaving = {old for old, _, _ in moved}
        arriving = [new for _, new, _ in moved]
        if len(set(arriving)) != len(arriving):
            raise UniqueViolation(f"UPDATE would give several rows of {info.name!r} the same primary key")
        touched = [k for k, _ in in_place] + list(leaving) + arriving
        written = in_place + [(new_key, row) for _, new_key, row in moved]
        gone = sorted(leaving - set(arriving), key=repr)
        marks = self.constraints.constrain(info, written, touched, gone, plan.assigned)
        with self._statement(info, touched) as entry:
            self.constraints.check_new_keys(info, [k for k in arriving if k not in leaving])
            self.buffer.stage_updated(entry, in_place, moved, marks, plan.assigned)
        self._hold(info, [*in_place, *((old, None) for old, _, _ in moved), *((new, row) for _, new, row in moved)])
        return len(selected)

    def held_update(self, plan: UpdatePlan, bound: Bound) -> list[tuple[Any, ...]] | None:
        """The UPDATE's read (old key, then every stored column's new value), computed on the row this transaction
        holds; None when it holds none or cannot compute the values (the engine reads them). A miss after a key
        read of the row teaches that read to fetch the whole row (Learned.whole)."""
        info, update = plan.table, plan.key_update
        if update is None:
            return None
        keys = self.held_keys(info, [(slot,) for slot in update.key_slots], bound.values)
        if keys is None or self.check_due(plan.reads, plan.point_keys, bound.rendered):
            return None
        key = keys[0]
        row = self.held_row(info, key)
        if row is MISSING:
            reader = self.holding.reader(info, key)
            if reader is not None:
                reader.whole = True
            return None
        if row is None or not computable(update, info, bound.values):
            # no row: the engine may still refuse the statement itself (a constant beyond its types), row or not
            return None
        new = new_values(update, info, row, bound.values)
        if new is None:
            return None
        self.read_names.update(plan.reads)
        self.reads_run += 1
        return [(*key, *new)]

    def _held_deletes(self, plan: DeletePlan, bound: Bound) -> list[Key] | None:
        """The keys a DELETE by whole keys deletes, from the rows held, the missing ones read whole first (as
        _read_updated_row does); None when the engine's read of the DELETE decides (held_keys)."""
        read, info = plan.row_read, plan.table
        if read is None:
            return None
        keys = self.held_keys(info, read.key_slots, bound.values)
        if keys is None or self.check_due(plan.reads, plan.point_keys, bound.rendered):
            return None
        rows = [self.held_row(info, k) for k in keys]
        if any(r is MISSING for r in rows):
            rows = self.read_whole(plan, read, bound, keys)
        self.read_names.update(plan.reads)
        self.reads_run += 1
        return [k for k, r in zip(keys, rows) if r is not None]

    def _read_updated_row(self, plan: UpdatePlan, bound: Bound) -> bool:
        """Read whole the row an UPDATE by its key changes, when held_update found it not held and could compute
        it, so that held_update can (True: read). Its versions ranked here, or its Storage row alone when no Cache
        row has its key (read_whole), cost the engine a third to a half of the UPDATE's own read, which MonetDB
        ranks; and the row is held for the transaction's later statements."""
        read, update, info = plan.row_read, plan.key_update, plan.table
        if read is None or update is None or not computable(update, info, bound.values):
            return False
        keys = self.held_keys(info, read.key_slots, bound.values)
        if keys is None or self.check_due(plan.reads, plan.point_keys, bound.rendered):
            return False
        if any(self.held_row(info, k) is not MISSING for k in keys):
            return False
        self.read_whole(plan, read, bound, keys)
        return True

    def delete(self, plan: DeletePlan, bound: Bound) -> int:
        self.check_usable()
        info = plan.table
        keys = self._held_deletes(plan, bound)
        if keys is None:
            result = decode(self.run(plan.select, bound.rendered, plan.reads, plan.point_keys), plan.decode)
            keys = [typed_key(info, raw) for raw in result.rows]
        self.constraints.constrain(info, [], keys, keys)
        with self._statement(info, keys) as entry:
            self.buffer.stage_deleted(entry, keys)
        self._hold(info, [(k, None) for k in keys])
        return len(keys)

    @contextmanager
    def _statement(self, info: TableInfo, keys: Sequence[Key]) -> Iterator[TableWrites]:
        """Buffer one write statement's rows all or none. The block changes ``info``'s entry only at ``keys``;
        if it raises (a duplicate key, a row the engine refuses in direct mode, an interrupt), those keys get
        their state from before the statement back and the transaction goes on. Only when some of the
        statement's rows may already be in the engine (flush sets ``failed``) is there nothing to undo: the
        transaction can then only roll back."""
        savepoint = self.buffer.savepoint(info, keys)
        try:
            yield savepoint.entry
            if self.settings.write_mode == "direct":
                self.flush([info.qualified], statement=True)
        except BaseException:
            if not self.failed:
                savepoint.restore()
            raise

    # ---- flushing ------------------------------------------------------------------------------------------

    def flush(
        self, tables: Iterable[str] | None = None, statement: bool = False, then: str | None = None
    ) -> list[ZerosDue]:
        """Send pending writes of the given tables (all when None) to their Cache tables; the keys they insert are
        checked first, in one query (insert_check='flush'). Several INSERTs go as one engine transaction
        (execute_atomically: one round trip over MAPI, one log commit): all of them or none.

        ``then``: one more statement for that transaction (COMMIT's record: the rows and the record are written
        together, so an engine error leaves neither). Then the zeros the rows hold are left for the caller to
        check (returned: see zero_signs_checked), inside the commit protocol, which settles the record if that
        fails; otherwise they are checked here.

        ``statement``: the pending rows are the running statement's only (direct mode). Then an error raised
        before any of them reached the engine leaves the transaction usable (the statement forgets its rows);
        otherwise rows of statements that already returned, or part of this one's, may be in the engine or
        cannot be written, and the transaction is marked failed: it can only roll back."""
        entries = self.buffer.pending(tables)
        checks = [(e.table, list(e.unchecked)) for e in entries if e.unchecked]
        if checks:
            try:
                self.constraints.check_all_absent(checks)
            except IntegrityError as exc:
                if not statement:
                    self.failed = str(exc)  # the INSERT already returned: the transaction cannot go on
                raise
            for entry in entries:  # only once checked: a check that failed otherwise must run again
                entry.unchecked = set()
        if entries:
            self.db.storage.check(self.conn)  # a nearly full disk: StorageFull before any row is sent
        sql = [(entry, text) for entry in entries for text in self.buffer.cache_inserts(entry)]
        if then is not None:
            sql.append((None, then))
        zeros = [(entry, found) for entry in entries if (found := self.buffer.zeros(entry)) is not None]
        with zero_signs_kept(self.conn, any(self.buffer.negative_zero(e) for e in entries)):
            if len(sql) > 1 and ATOMIC_FLUSH:
                self._send(entries, [text for _, text in sql], statement)
            else:
                for i, (entry, text) in enumerate(sql):
                    self._send([entry] if entry else [], [text], statement and i == 0)
        due = [(entry.table, since, rows, dict(entry.pending)) for entry, (since, rows) in zeros]
        for entry in entries:
            self.buffer.sent(entry)
        if then is not None:
            return due
        self.zero_signs_checked(due)
        return []

    def zero_signs_checked(self, due: list[ZerosDue]) -> None:
        """The REAL and DOUBLE zeros the last flush sent have their signs in the Cache, or the versions whose zero
        came out with the other sign are sent once more, as a later statement's, until none does
        (tique/zero_signs.py: MonetDB reused a slot whose old zero had the other sign). Appended, not updated: an
        UPDATE of a Cache others append to left MonetDB's readers of it an update delta they failed to merge now
        and then; it is only the last resort, after ZERO_SIGN_TRIES sends. Checked in read-only statements: one,
        unless a column holds both signs or a zero came out wrong (then 200 versions a statement, each found
        apart, so only those are sent again); the copies they outrank are never read (versions rank by statement)."""
        for info, since, rows, pending in due:
            sent = f"tq_txid = {self.txid} AND tq_seq >= {since}"
            checks = zero_checks([row for _, row in rows], by_row=False)
            counts = (self.conn.execute(zeros_wrong(info.cache, narrowed(sent, s), c)).scalar() for s, c in checks)
            if not any(int(n) for n in counts):
                continue
            for _ in range(ZERO_SIGN_TRIES):
                rows = self._zeros_still_wrong(info, sent, rows)
                if not rows:
                    break
                seq = self.buffer.next_seq()
                again = self.buffer.zeros_again(info, pending, [k for k, _ in rows], seq)
                with zero_signs_kept(self.conn, True):
                    self._send([self.buffer.entry(info)], again, False)
                sent = f"tq_txid = {self.txid} AND tq_seq = {seq}"
            else:  # the last resort: in place, the rows being this transaction's, which no other session reads
                zeros_in_place(self.conn, info.cache, [r for _, r in rows], sent)
                if self._zeros_still_wrong(info, sent, rows):
                    self.failed = f"the sign of a zero written to {info.name!r} could not be kept"
                    raise OperationalError(
                        f"MonetDB kept writing a REAL or DOUBLE zero of table {info.name!r} with the sign of the row "
                        f"whose place it reused; transaction {self.txid} was rolled back: run it again"
                    )

    def _zeros_still_wrong(
        self, info: TableInfo, sent: str, rows: list[tuple[Key, ZeroRow]]
    ) -> list[tuple[Key, ZeroRow]]:
        """Those of ``rows`` whose version ``sent`` selects holds a zero with the wrong sign: 200 a statement."""
        wrong = []
        for start in range(0, len(rows), ZERO_BATCH):
            chunk = rows[start : start + ZERO_BATCH]
            counts = self.conn.execute(zeros_wrong_by_row(info.cache, sent, [r for _, r in chunk])).rows[0]
            wrong += [row for row, count in zip(chunk, counts) if int(count or 0)]
        return wrong

    def _send(self, entries: Sequence[TableWrites], sql: Sequence[str], statement: bool) -> None:
        """Run ``sql`` (writes of ``entries``' rows, or the commit record) all or nothing; on an error mark the
        transaction failed unless ``statement`` and nothing can have reached the engine."""
        names = ", ".join(repr(e.table.name) for e in entries) or "the commit record"
        known = self.db.cache_keys
        try:
            guard = self.db.append_guard
            appended = [cache_of(e.table.qualified) for e in entries if e.table.has_strings]
            with (
                nullcontext() if known is None else known.sending((e.table, e.pending) for e in entries),
                nullcontext() if guard is None or not appended else guard.appending(appended),
            ):
                if len(sql) == 1:
                    self.conn.execute(sql[0])
                else:
                    self.conn.execute_atomically(sql)
        except DatabaseError as exc:
            full = self._storage_full(exc)
            if full is not None:  # the engine could not write for want of space (tique/storage.py)
                self.failed = f"writing buffered rows of {names} failed: {full}"
                raise full from exc
            dropped = next((e.table for e in entries if self._dropped(e.table)), None)
            if dropped is not None:
                self.failed = f"table {dropped.name!r} was dropped or altered by another session"
                raise SerializationFailure(
                    f"could not write to table {dropped.name!r}: it was dropped (and maybe re-created), renamed or "
                    f"altered (DROP TABLE / ALTER TABLE) in another session while this transaction ran; transaction "
                    f"{self.txid} was rolled back: run it again (it will use the table as it is now)"
                ) from exc
            if not statement or connection_lost(exc):
                self.failed = f"writing buffered rows of {names} failed: {exc}"
            raise
        except BaseException as exc:  # an interrupt: the INSERT may still run to its end in the engine
            self.failed = f"writing buffered rows of {names} was interrupted ({type(exc).__name__})"
            raise

    def _dropped(self, info: TableInfo) -> bool:
        """Is ``info`` no longer the table of its name, or of other columns or physical tables (asked after a
        failed write: a DROP or ALTER elsewhere is likely)?"""
        try:
            self.db.catalog.refresh(self.conn)
        except (DatabaseError, InterfaceError):  # a lost connection: the write's own error is the one to report
            return False
        now = self.db.catalog.get(info.schema, info.name)
        return now is None or (now.table_id, now.columns, now.cache) != (info.table_id, info.columns, info.cache)

    # ---- commit --------------------------------------------------------------------------------------------

    def write_set(self) -> list[int]:
        return self.buffer.write_set()

    def record_set(self) -> list[int]:
        return self.buffer.record_set(self.db.catalog)

    def written_table_ids(self) -> list[int]:
        """The ids of the tables this transaction writes (their write marks go up at its commit)."""
        return [entry.table.table_id for entry in self.buffer.writes.values()]

    def commit(self) -> CommitResult:
        """The commit protocol (tique/commit.py)."""
        return commit_protocol.commit(self)

    def _storage_full(self, exc: DatabaseError) -> StorageFull | None:
        """``exc`` was raised by a write: the StorageFull to raise instead when the engine failed it for want of
        space (tique/storage.py; this process then stops writing until space returns), else None."""
        classified = self.db.storage.classify(exc, self.conn)
        return classified if isinstance(classified, StorageFull) and classified is not exc else None

    def schema_hashes(self) -> list[int]:
        """The DDL write-set entries of every table this transaction read or wrote (catalog.schema_hash)."""
        tables = {(e.table.schema, e.table.name) for e in self.writes.values()}
        tables |= {(i.schema, i.name) for i in self.db.catalog.all() if i.qualified in self.read_names}
        return sorted({schema_hash(s, n) for s, n in tables})


@lru_cache(maxsize=8192)
def _reads_strings(template: Template, info: TableInfo) -> bool:
    """Does the statement read a string column of ``info`` (TableInfo.names_strings)? Once per template."""
    return info.names_strings("".join(template.parts))


@contextmanager
def _naming(info: TableInfo, verb: str, columns: Sequence[str]) -> Iterator[None]:
    """A write's SELECT refused by the engine (a computed value overflowed: the statement only read, so nothing
    happened) or a value it computed that tique cannot keep: say which table and columns were being written."""
    try:
        yield
    except DataError as exc:
        if repr(info.name) in str(exc):
            raise
        names = ", ".join(repr(c) for c in columns)
        raise DataError(f"{verb} table {info.name!r} (columns {names}): {exc}", exc.sqlstate) from None


def _compared_as_given(info: TableInfo, column: str, given: list[Any]) -> bool:
    """Does the engine compare key column ``column`` with each of ``given`` as the value it is in Python: a value
    of the column's own kind that the column holds unchanged (not one it would round or convert by its rules)?"""
    sql_type = info.column(column).sql_type
    if not all(v is not None and natural(v, sql_type) for v in given):
        return False
    try:
        return all(coerce(v, sql_type, column) == v for v in given)
    except DataError:  # a value the key column cannot hold: the engine finds no row, or says why
        return False
