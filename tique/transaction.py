"""One transaction: its snapshot, its writes (buffered in the client until a read or COMMIT needs them), its
constraint checks and its write-set. COMMIT runs the protocol in tique/commit.py."""

from __future__ import annotations

import decimal
import hashlib
import itertools
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import sqlglot

from tique import commit as commit_protocol
from tique.catalog import ROWID, SequenceDefault, TableInfo, schema_hash
from tique.commit import CommitResult
from tique.commit import step_hooks as step_hooks  # tests and tools hook the protocol's steps here
from tique.database import Database
from tique.engine.base import RawConnection, Result
from tique.errors import (
    DatabaseError,
    DataError,
    IntegrityError,
    InterfaceError,
    OperationalError,
    ProgrammingError,
    SerializationFailure,
    StorageFull,
    connection_lost,
)
from tique.names import quote
from tique.outcomes import settle_if_decided, waiting
from tique.params import literal
from tique.prepared import PreparingConnection
from tique.rewrite.dialect import MonetDB
from tique.rewrite.exact import decode, read_value, text_sql
from tique.rewrite.reads import PointKeys
from tique.rewrite.snapshot import snapshot_sql
from tique.rewrite.template import STS, TXID, Template
from tique.rewrite.values import coerce, key_value
from tique.rewrite.writes import DEFAULT, DeletePlan, InsertPlan, UpdatePlan
from tique.sequencer import CSequencer
from tique.settings import COMMIT_LEASE_MS, Settings

if TYPE_CHECKING:
    from tique.catalog import ForeignKey
    from tique.statements import CopyPlan

Key = tuple[Any, ...]
INSERT_BATCH = 500  # rows per INSERT statement when flushing
CHECK_BATCH = 1000  # values per query checking UNIQUE and FOREIGN KEY constraints


def _hash64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big", signed=True)


def unique_hash(table: TableInfo, columns: tuple[str, ...], values: tuple[Any, ...]) -> int:
    """The write-set entry of a UNIQUE value: namespaced by table and constraint (a prefix no key hash has), so two
    transactions claiming one value conflict at certification as two writers of one key do."""
    return _hash64(f"\x02unique\x00{table.identity}\x00{columns!r}\x00{values!r}")


def ref_hash(parent: str, key: Key) -> int:
    """Recorded by a transaction that wrote a row referencing parent key ``key`` (``parent`` a table identity)."""
    return _hash64(f"\x03ref\x00{parent}\x00{key!r}")


def gone_hash(parent: str, key: Key) -> int:
    """Recorded by a transaction that deleted (or re-keyed) key ``key`` of a table foreign keys reference."""
    return _hash64(f"\x04gone\x00{parent}\x00{key!r}")


@dataclass(frozen=True)
class RowMarks:
    """What a written row claims besides its key: its UNIQUE values' hashes and the parent keys it references
    (as (parent table identity, key))."""

    claims: tuple[int, ...] = ()
    refs: tuple[tuple[str, Key], ...] = ()


def key_hash(table: TableInfo, key: Key) -> int:
    """The write-set entry of a key: 64 bits of a hash of (table, key), as a signed BIGINT. The table counts by
    its (schema, name), which every process agrees on, not by its id, which a stale catalog may hold an old one
    of (a DROP and CREATE elsewhere is caught by the schema-hash check at commit, see catalog.py)."""
    digest = hashlib.blake2b(f"{table.identity}\x00{key!r}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


@dataclass
class TableWrites:
    table: TableInfo
    pending: dict[Key, tuple[tuple[Any, ...] | None, int]] = field(default_factory=dict)  # key -> (row|None, seq)
    live: dict[Key, bool] = field(default_factory=dict)  # every key written: does it exist for this txn now?
    flushed: bool = False  # some rows already reached the Cache
    unchecked: set[Key] = field(default_factory=set)  # inserted keys not yet checked against the snapshot
    marks: dict[Key, RowMarks] = field(default_factory=dict)  # live rows' UNIQUE claims and references


class Transaction:
    """Created lazily by the connection at its first statement; ended by commit() or rollback()."""

    _rowids = itertools.count(1)

    def __init__(
        self, db: Database, conn: RawConnection, settings: Settings, min_sts: int = 0, prev_txid: int = 0
    ) -> None:
        self.db = db
        self.conn = conn
        self.settings = settings
        self.last_generated: int | None = None  # the first key the last INSERT generated
        self.seq = 0
        self.writes: dict[str, TableWrites] = {}
        self.failed: str | None = None  # set when the transaction can only be rolled back
        self.committed_cts: int | None = None  # set at the commit point: the committed outcome is recorded
        self.priority = False  # a retry holding reservations (see reserve)
        self.privileges: dict[tuple[str, str], int] = {}  # an ordinary user's privilege bits per table written
        self.renewed_at = time.monotonic()
        self.read_names: set[str] = set()  # tables read (schema.name, as plans list them): checked for DDL at commit
        self.ddl_conflict = False  # certification failed on DDL (DROP/ALTER) of a table it used
        self.own_ddl: set[int] = set()  # DROPs this session ran meanwhile: not conflicts (see forget_table)
        self._refs: set[int] = set()  # foreign-key entries of the commit record (record_set)
        self._probes: set[int] = set()
        self.sts, self.txid = self._begin(min_sts, prev_txid)

    # ---- begin ---------------------------------------------------------------------------------------------

    def _begin(self, min_sts: int, prev_txid: int) -> tuple[int, int]:
        if isinstance(self.db.sequencer, CSequencer):
            # One call ends the session's previous transaction and registers this one's snapshot with a lease, so
            # the checkpointer keeps every version it may read (see renew).
            # The catalog version is read after begin_txn took the snapshot (it takes x.t as input), so a snapshot
            # that includes a DDL comes with that DDL's version (see catalog.py).
            txid, sts, stuck, version = self.conn.execute(
                "SELECT x.t, tique.snapshot_of(x.t), tique.stuck(), tique.catalog_version(x.t) FROM "
                f"(SELECT {self.db.sequencer.call('begin_txn', int(prev_txid), self.settings.snapshot_lease_ms)} AS t) "
                "AS x"
            ).rows[0]
            sts, txid = int(sts), int(txid)
            if stuck and settle_if_decided(self.conn, int(stuck), self.db.sequencer.restricted):
                sts = self.db.sequencer.sts(self.conn)  # a dead client's commit held the snapshot back
        else:
            sts, txid = self.db.sequencer.sts(self.conn), self.db.sequencer.next_txid(self.conn)
            version = self.db.sequencer.catalog_version(self.conn)
        self.db.catalog.sync(self.conn, int(version))
        if sts < min_sts:  # this session's last commit is not visible yet: wait, so it reads its own commits
            try:
                sts = self._await_own_commit(min_sts)
            except BaseException:
                self._end_pin(txid)
                raise
        return sts, txid

    def _await_own_commit(self, cts: int) -> int:
        """Wait until this session's last commit ``cts`` is visible. It is committed (its outcome is recorded),
        and only earlier commits can hold it back: each finishes, or is abandoned once stuck for the lease, so
        the wait lasts up to the lease plus the advance time-out instead of failing after the time-out alone.
        With the C module the wait is an advance of ``cts``, which settles it (if its COMMIT could not) and
        abandons stale predecessors as any committer's wait does."""
        lease = self.db.lease_ms or COMMIT_LEASE_MS
        timeout = lease + self.settings.advance_timeout_ms
        if not isinstance(self.db.sequencer, CSequencer):
            return self._await_sts(cts, "this session's last commit", timeout)
        try:
            advance = self.db.sequencer.advance_fn
            waiting(
                self.conn,
                lambda: self.conn.execute(f"SELECT {advance}({int(cts)}, {timeout})"),
                self.db.sequencer.restricted,
            )
        except OperationalError as exc:
            if exc.sqlstate != "HYT00":
                raise
            raise OperationalError(
                f"this session's last commit ({cts}) is committed but still not visible after {timeout} ms: an "
                f"earlier commit is stuck; the new transaction did not start, try again ({exc})",
                "HYT00",
            ) from exc
        return self.db.sequencer.sts(self.conn)

    def _end_pin(self, txid: int) -> None:
        """Release a snapshot pin of a transaction that will not run (best effort: the lease ends it too)."""
        if isinstance(self.db.sequencer, CSequencer):
            try:
                self.conn.execute(f"SELECT {self.db.sequencer.call('end_txn', int(txid))}")
            except DatabaseError:
                pass

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
        self.sts = self._await_sts(last, "a commit under way")
        self.priority = True

    def _await_sts(self, target: int, what: str, timeout_ms: int | None = None) -> int:
        """Poll until the snapshot includes commit ``target``; an error after the time-out (by default the
        advance time-out)."""
        timeout_ms = self.settings.advance_timeout_ms if timeout_ms is None else timeout_ms
        deadline = time.monotonic() + timeout_ms / 1000
        while (sts := self.db.sequencer.sts(self.conn)) < target:
            if time.monotonic() > deadline:
                raise OperationalError(
                    f"{what} ({target}) is not visible yet after {timeout_ms} ms: an earlier commit is stuck",
                    "HYT00",
                )
            time.sleep(0.001)
        return sts

    def renew(self) -> None:
        """Keep the snapshot's lease: renewed before any statement once half of it has passed. A transaction whose
        lease ran out (its client stalled) may find versions it needs checkpointed away, so it must abort."""
        if not isinstance(self.db.sequencer, CSequencer):
            return
        if time.monotonic() - self.renewed_at < self.settings.snapshot_lease_ms / 2000:
            return
        sent = time.monotonic()
        renew = self.db.sequencer.call("renew", self.txid, self.settings.snapshot_lease_ms)
        if not self.conn.execute(f"SELECT {renew}").scalar():
            self.failed = "its snapshot lease ran out"
            raise SerializationFailure(
                f"transaction {self.txid} was idle past its snapshot lease ({self.settings.snapshot_lease_ms} ms), "
                "so the checkpointer may have moved versions it reads; it was rolled back and is safe to retry "
                "(a longer snapshot_lease_ms keeps it longer)"
            )
        self.renewed_at = sent

    @property
    def read_only(self) -> bool:
        """No key written (a write statement that matched no row writes nothing)."""
        return not any(entry.live for entry in self.writes.values())

    def check_usable(self) -> None:
        if self.failed:
            raise InterfaceError(f"the transaction was aborted ({self.failed}); call rollback() to start a new one")
        self.renew()

    # ---- running statements --------------------------------------------------------------------------------

    def slots(self) -> dict[str, str]:
        sts = self.sts
        if self.settings.unsafe_read_latest:
            sts = self.db.sequencer.sts(self.conn)
        return {STS: str(sts), TXID: str(self.txid)}

    def run(
        self, template: Template, params: dict[str, str], reads: Iterable[str] = (), point_keys: PointKeys = ()
    ) -> Result:
        """Run a rewritten read; the transaction's pending writes to the tables it reads reach the engine first,
        unless the read asks for exact keys none of them has (one round trip saved per such table)."""
        self.check_usable()
        self.read_names.update(reads)
        self.flush(self.to_flush(reads, point_keys, params))
        values = {**self.slots(), **params}
        if isinstance(self.conn, PreparingConnection):
            return self.conn.run(template, values)
        return self.conn.execute(template.render(values))

    def to_flush(self, reads: Iterable[str], point_keys: PointKeys, params: dict[str, str]) -> list[str]:
        """The tables whose pending writes must reach the Cache before this read (or a write's read)."""
        pinned = dict(point_keys)
        return [
            t
            for t in reads
            if t in self.writes
            and self.writes[t].pending
            and (t not in pinned or self._pending_match(t, pinned[t], params))
        ]

    def in_cache(self) -> frozenset[str]:
        """Tables some of whose versions written by this transaction are in the Cache already."""
        return frozenset(n for n, e in self.writes.items() if e.flushed)

    def _pending_match(self, table: str, slots: tuple[str, ...], params: dict[str, str]) -> bool:
        """Could a pending write of ``table`` have the key values the read pins?"""
        # the key as the SQL literals the statement will compare, None where it pins no value
        wanted = tuple(params[s] if s else None for s in slots)
        pending = self.writes[table].pending
        return any(all(w is None or _may_equal(v, w) for v, w in zip(key, wanted)) for key in pending)

    def forget_table(self, name: str, ddl_txids: Sequence[int]) -> None:
        """This session dropped table ``name`` while the transaction ran: its writes there went with the table
        (DDL takes effect at once), so they do not commit, and that DROP (``ddl_txids``) does not fail the commit
        as a DROP by another session would; writes to a table of that name created afterwards commit."""
        self.writes.pop(name, None)
        self.read_names.discard(name)
        self.own_ddl.update(ddl_txids)

    def write_entry(self, table: TableInfo) -> TableWrites:
        entry = self.writes.get(table.qualified)
        if entry is None:
            entry = self.writes[table.qualified] = TableWrites(table)
        return entry

    def _next_seq(self) -> int:
        self.seq += 1
        return self.seq

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
        rows: list[tuple[Key, tuple[Any, ...]]] = []
        positions = {c: i for i, c in enumerate(plan.columns)}
        ids = self._generated_ids(info, positions, source)
        numbers = self._sequence_values(info, positions, source)
        for raw in source:
            full = []
            for col in info.columns:
                value = raw[positions[col.name]] if col.name in positions else col.default
                if value is DEFAULT:
                    value = col.default
                if value is None and col.name in info.generated:
                    value = next(ids)
                if isinstance(value, SequenceDefault):
                    value = next(numbers[col.name])
                value = coerce(value, col.sql_type, col.name, info.name)
                if value is None and col.not_null:
                    raise IntegrityError(f"NULL in column {col.name!r} of {info.name!r}, which is NOT NULL", "23502")
                full.append(value)
            if info.has_rowid:
                full.append((self.txid << 24) | next(self._rowids) & 0xFFFFFF)
            row = _stored_key(info, tuple(full))
            rows.append((self._key(info, row), row))
        marks = self._constrain(info, rows, [k for k, _ in rows], [])
        with self._statement(info, [k for k, _ in rows]) as entry:
            self._check_new_keys(info, [k for k, _ in rows])
            seq = self._next_seq()
            for key, row in rows:
                entry.pending[key] = (row, seq)
                entry.live[key] = True
            _mark(entry, marks)
        return len(rows)

    def _sequence_values(
        self, info: TableInfo, positions: dict[str, int], source: Sequence[tuple[Any, ...]]
    ) -> dict[str, Iterator[int]]:
        """Per column with DEFAULT NEXT VALUE FOR s: the sequence's next values, one per row taking the default,
        fetched in one statement per 1000 (the engine evaluates NEXT VALUE FOR once per row)."""
        numbers: dict[str, Iterator[int]] = {}
        for col in info.columns:
            if not isinstance(col.default, SequenceDefault):
                continue
            at = positions.get(col.name)
            wanted = sum(1 for raw in source if at is None or raw[at] is DEFAULT)
            values: list[int] = []
            for start in range(0, wanted, 1000):
                rows = ", ".join("(0)" for _ in range(min(1000, wanted - start)))
                values += [
                    int(r[0]) for r in self.conn.execute(f"SELECT {col.default} FROM (VALUES {rows}) AS tq_n(x)").rows
                ]
            numbers[col.name] = iter(values)
        return numbers

    def _generated_ids(self, info: TableInfo, positions: dict[str, int], source: Sequence[tuple[Any, ...]]) -> Any:
        """Values for the rows that leave the table's generated column out or NULL, from one counter call;
        ``last_generated`` keeps the first of them (``cursor.lastrowid``, as MySQL drivers report it)."""
        self.last_generated = None
        if not info.generated:
            return iter(())
        from tique.generated import allocate, raise_past

        column = info.generated[0]
        at = positions.get(column)
        explicit = [raw[at] for raw in source if at is not None and isinstance(raw[at], int)]
        if explicit:
            raise_past(self.conn, self.db.sequencer.kind, info, max(explicit))
        wanted = sum(1 for raw in source if at is None or raw[at] is None or raw[at] is DEFAULT)
        if not wanted:
            return iter(())
        ids = allocate(self.conn, self.db.sequencer.kind, info, column, wanted)
        self.last_generated = ids[0]
        return iter(ids)

    def copy(self, plan: CopyPlan) -> int:
        """COPY INTO a transactional table (statements.CopyPlan): the engine loads a staging table of this
        session, whose rows are then inserted as this transaction's, all or none."""
        self.check_usable()
        self.conn.execute(plan.create)
        try:
            self.conn.execute(plan.copy)
            return self.insert(plan.insert, {}, {})
        finally:
            self.conn.execute(f"DROP TABLE {plan.staging}")

    def update(self, plan: UpdatePlan, rendered: dict[str, str]) -> int:
        self.check_usable()
        info = plan.table
        with _naming(info, "UPDATE of", plan.assigned):
            result = decode(self.run(plan.select, rendered, plan.reads, plan.point_keys), plan.decode)
        nkey = len(info.key)
        matched = [typed_key(info, raw[:nkey]) for raw in result.rows]
        if len(set(matched)) != len(matched):  # UPDATE ... FROM joined a target row to several rows
            twice = next(k for k in matched if matched.count(k) > 1)
            raise ProgrammingError(
                f"UPDATE ... FROM: row {_show(info, twice)} of {info.name!r} matches several rows of the FROM tables, "
                "so its new value is ambiguous (MonetDB refuses such an UPDATE too); make the join match one row",
                "21000",
            )
        # every new row is built and checked before any is buffered: a statement is all or nothing
        in_place: list[tuple[Key, tuple[Any, ...]]] = []
        moved: list[tuple[Key, Key, tuple[Any, ...]]] = []
        for raw in result.rows:
            old_key = typed_key(info, raw[:nkey])
            new = list(raw[nkey:])
            for i, col in enumerate(info.columns):
                new[i] = coerce(new[i], col.sql_type, col.name, info.name)
                if new[i] is None and col.not_null:
                    raise IntegrityError(f"NULL in column {col.name!r} of {info.name!r}, which is NOT NULL", "23502")
            row = _stored_key(info, tuple(new))
            new_key = self._key(info, row)
            if new_key != old_key:
                moved.append((old_key, new_key, row))
            else:
                in_place.append((old_key, row))
        leaving = {old for old, _, _ in moved}
        arriving = [new for _, new, _ in moved]
        if len(set(arriving)) != len(arriving):
            raise IntegrityError(f"UPDATE would give several rows of {info.name!r} the same primary key", "23505")
        touched = [k for k, _ in in_place] + list(leaving) + arriving
        written = in_place + [(new_key, row) for _, new_key, row in moved]
        marks = self._constrain(info, written, touched, sorted(leaving - set(arriving), key=repr), plan.assigned)
        with self._statement(info, touched) as entry:
            self._check_new_keys(info, [k for k in arriving if k not in leaving])
            seq = self._next_seq()
            for key, row in in_place:
                entry.pending[key] = (row, seq)
                entry.live[key] = True
            for old, _, _ in moved:
                entry.pending[old] = (None, seq)
                entry.live[old] = False
                entry.marks.pop(old, None)
            for _, new_key, row in moved:
                entry.pending[new_key] = (row, seq)
                entry.live[new_key] = True
            _mark(entry, marks)
        return len(result.rows)

    def delete(self, plan: DeletePlan, rendered: dict[str, str]) -> int:
        self.check_usable()
        info = plan.table
        result = decode(self.run(plan.select, rendered, plan.reads, plan.point_keys), plan.decode)
        keys = [typed_key(info, raw) for raw in result.rows]
        self._constrain(info, [], keys, keys)
        with self._statement(info, keys) as entry:
            seq = self._next_seq()
            for key in keys:
                entry.pending[key] = (None, seq)
                entry.live[key] = False
                entry.marks.pop(key, None)
        return len(result.rows)

    @contextmanager
    def _statement(self, info: TableInfo, keys: Sequence[Key]) -> Iterator[TableWrites]:
        """Buffer one write statement's rows all or none. The block changes ``info``'s entry only at ``keys``;
        if it raises (a duplicate key, a row the engine refuses in direct mode, an interrupt), those keys get
        their state from before the statement back and the transaction goes on. Only when some of the
        statement's rows may already be in the engine (flush sets ``failed``) is there nothing to undo: the
        transaction can then only roll back."""
        existed = info.qualified in self.writes
        entry = self.write_entry(info)
        before = {k: (entry.pending.get(k), entry.live.get(k), entry.marks.get(k)) for k in keys}
        fresh = {k for k in keys if k not in entry.unchecked}
        try:
            yield entry
            if self.settings.write_mode == "direct":
                self.flush([info.qualified], statement=True)
        except BaseException:
            if self.failed:
                raise
            for key, (pending, live, marks) in before.items():
                _restore(entry.pending, key, pending)
                _restore(entry.live, key, live)
                _restore(entry.marks, key, marks)
            entry.unchecked -= fresh
            if not existed and not entry.live and not entry.flushed:
                del self.writes[info.qualified]
            raise

    def _key(self, info: TableInfo, row: tuple[Any, ...]) -> Key:
        names = info.stored_names
        return typed_key(info, [row[names.index(k)] for k in info.key])

    def _check_new_keys(self, info: TableInfo, keys: Sequence[Key]) -> None:
        """An inserted key must not exist: neither in this transaction's writes nor in its snapshot."""
        if info.has_rowid or not keys:
            return
        if len(set(keys)) != len(keys):
            raise IntegrityError(f"duplicate key in the rows inserted into {info.name!r}", "23505")
        entry = self.writes.get(info.qualified)
        unknown = []
        for key in keys:
            state = entry.live.get(key) if entry else None
            if state:
                raise IntegrityError(f"duplicate key {_show(info, key)} in table {info.name!r}", "23505")
            if state is None:
                unknown.append(key)
        if not unknown:
            return
        if self.settings.insert_check == "flush":
            self.write_entry(info).unchecked.update(unknown)  # checked in one query when the rows are sent
            return
        self._check_absent(info, unknown)

    def _present(self, info: TableInfo, keys: Sequence[Key], tag: str = "", as_text: bool = False) -> str:
        """SQL for the snapshot's rows among ``keys`` (key columns only). Keys this transaction wrote are decided by
        its own records, so its own Cache versions are left out; the IN lists over-approximate."""
        preds = []
        for i, col in enumerate(info.key):
            values = ", ".join(literal(v) for v in sorted({k[i] for k in keys}, key=repr))
            preds.append(f"{{t}}{quote(col)} IN ({values})")
        # as_text: keys Python reads back, exactly (see exact.py); otherwise compared in SQL by the caller
        cols = ", ".join(text_sql(quote(k), _key_type(info, k)) if as_text else quote(k) for k in info.key)
        snapshot = snapshot_sql(info, "point", preds, own=False, columns=info.key, tag=tag)
        return f"SELECT {cols} FROM ({snapshot}) AS tq_dup{tag}"

    def _found(self, info: TableInfo, keys: Sequence[Key]) -> set[Key]:
        """Which of ``keys`` (none of which this transaction wrote) exist in the snapshot."""
        sql = self._present(info, keys, as_text=True)
        rows = self.conn.execute(Template.from_sql(sql).render(self.slots())).rows
        found = {typed_key(info, [read_value(v, _key_type(info, k)) for v, k in zip(r, info.key)]) for r in rows}
        return found & set(keys)

    def _check_absent(self, info: TableInfo, keys: Sequence[Key]) -> None:
        """None of ``keys`` exists in the snapshot (Python filters the over-approximation exactly)."""
        found = self._found(info, keys)
        clash = [k for k in keys if k in found]
        if clash:
            raise IntegrityError(f"duplicate key {_show(info, clash[0])} in table {info.name!r}", "23505")

    def _check_all_absent(self, checks: Sequence[tuple[TableInfo, Sequence[Key]]]) -> None:
        """``_check_absent`` for several tables in one query that counts exact matches per table; a table with
        one is checked again alone, to name the key."""
        if len(checks) == 1:
            self._check_absent(*checks[0])
            return
        branches = []
        for i, (info, keys) in enumerate(checks):
            exact = " OR ".join(
                "(" + " AND ".join(f"{quote(c)} = {literal(v)}" for c, v in zip(info.key, key)) + ")" for key in keys
            )
            present = self._present(info, keys, f"_{i}")  # distinct aliases per snapshot (see snapshot_sql)
            branches.append(f"SELECT {i} AS tq_t, COUNT(*) AS tq_n FROM ({present}) AS d{i} WHERE {exact}")
        counts = self.conn.execute(Template.from_sql(" UNION ALL ".join(branches)).render(self.slots())).rows
        for i, n in counts:
            if n:
                self._check_absent(*checks[int(i)])

    # ---- UNIQUE and FOREIGN KEY ----------------------------------------------------------------------------

    def _constrain(
        self,
        info: TableInfo,
        rows: Sequence[tuple[Key, tuple[Any, ...]]],
        touched: Sequence[Key],
        gone: Sequence[Key],
        assigned: Sequence[str] | None = None,
    ) -> dict[Key, RowMarks]:
        """Check one statement's effect on ``info`` against its UNIQUE and FOREIGN KEY constraints: ``rows`` are
        the versions it writes, ``touched`` every key it changes, ``gone`` the keys it deletes or re-keys,
        ``assigned`` the columns an UPDATE sets (None: an INSERT; a constraint on columns it keeps needs no
        query: those values were checked when written). Raises IntegrityError before anything is buffered;
        returns each written row's marks for the write-set."""
        children = self.db.catalog.children(info) if gone else []
        if not children and (not rows or not (info.uniques or info.foreign_keys)):
            return {}
        changed = (lambda cols: True) if assigned is None else (lambda cols: bool(set(assigned) & set(cols)))
        claims = self._check_unique(info, rows, set(touched), changed)
        refs = self._check_references(info, rows, set(touched), set(gone), changed)
        if children:
            self._check_unreferenced(info, children, set(touched), set(gone))
        return {key: RowMarks(tuple(claims.get(key, ())), tuple(refs.get(key, ()))) for key, _ in rows}

    def _values(self, info: TableInfo, columns: Sequence[str], values: Sequence[Any]) -> tuple[Any, ...]:
        """Column values as the engine compares them (see typed_key)."""
        return tuple(key_value(coerce(v, _key_type(info, c), c)) for v, c in zip(values, columns))

    def _visible_rows(
        self, info: TableInfo, wanted: Sequence[tuple[tuple[str, ...], set[tuple[Any, ...]]]]
    ) -> list[tuple[Key, dict[str, Any]]]:
        """Rows of the snapshot, this transaction's writes included, whose ``columns`` may hold one of the given
        values (per (columns, values) pair; an over-approximation, filtered exactly by the caller): their key
        and those columns' values (only the columns of the pairs one query asked about: at most
        ``CHECK_BATCH`` values go into one query)."""
        if sum(len(vals) for _, vals in wanted) > CHECK_BATCH:
            found: list[tuple[Key, dict[str, Any]]] = []
            for cols, vals in wanted:
                ordered = sorted(vals, key=repr)
                for start in range(0, len(ordered), CHECK_BATCH):
                    found += self._visible_rows(info, [(cols, set(ordered[start : start + CHECK_BATCH]))])
            return found
        columns = list(dict.fromkeys(c for cols, vals in wanted if vals for c in cols))
        alternatives = []
        for cols, vals in wanted:
            if vals:
                alternatives.append(
                    " AND ".join(
                        f"{quote(c)} IN ({', '.join(literal(v) for v in sorted({t[i] for t in vals}, key=repr))})"
                        for i, c in enumerate(cols)
                    )
                )
        if not alternatives:
            return []
        if info.qualified in self.writes and self.writes[info.qualified].pending:
            self.flush([info.qualified])  # its own earlier rows count too
        own = info.qualified in self.in_cache()
        # not a key predicate: it may filter Storage and the newest versions only, never below the ranking (an
        # older version holding the value must not win over a newer one that changed it)
        where = sqlglot.parse_one(" OR ".join(f"({a})" for a in alternatives), read=MonetDB)  # columns: per branch
        snapshot = snapshot_sql(info, "analytical", row_preds=[where], own=own, columns=columns, expose_rowid=True)
        names = list(info.key) + columns
        outputs = ", ".join(text_sql(quote(c), _key_type(info, c)) for c in names)
        sql = f"SELECT {outputs} FROM ({snapshot}) AS tq_uq"
        found = []
        for r in self.conn.execute(Template.from_sql(sql).render(self.slots())).rows:
            values = [read_value(v, _key_type(info, c)) for v, c in zip(r, names)]
            key = typed_key(info, values[: len(info.key)])
            found.append((key, dict(zip(columns, values[len(info.key) :]))))
        return found

    def _check_unique(
        self,
        info: TableInfo,
        rows: Sequence[tuple[Key, tuple[Any, ...]]],
        touched: set[Key],
        changed: Callable[[Sequence[str]], bool],
    ) -> dict[Key, list[int]]:
        """No written row's UNIQUE value (all columns non-NULL) is held by another row: one of the statement's, or
        one the snapshot and this transaction's writes show outside the keys the statement changes."""
        if not info.uniques or not rows:
            return {}
        names = info.stored_names
        claims: dict[Key, list[int]] = {}
        wanted: list[tuple[tuple[str, ...], set[tuple[Any, ...]]]] = []
        for cols in info.uniques:
            seen: dict[tuple[Any, ...], Key] = {}
            for key, row in rows:
                raw = [row[names.index(c)] for c in cols]
                if any(v is None for v in raw):
                    continue  # NULL is never equal to anything: no conflict (as MonetDB)
                value = self._values(info, cols, raw)
                if value in seen:
                    raise IntegrityError(_unique_message(info, cols, value, "the rows this statement writes"), "23505")
                seen[value] = key
                claims.setdefault(key, []).append(unique_hash(info, cols, value))
            if changed(cols):
                wanted.append((cols, set(seen)))
        for key, held in self._visible_rows(info, wanted):
            if key in touched:
                continue  # the statement replaces or deletes this row
            for cols, values in wanted:
                if any(c not in held for c in cols):
                    continue  # the row came from a query about another constraint
                value = self._values(info, cols, [held[c] for c in cols])
                if value in values:
                    raise IntegrityError(_unique_message(info, cols, value, f"row {_show(info, key)}"), "23505")
        return claims

    def _check_references(
        self,
        info: TableInfo,
        rows: Sequence[tuple[Key, tuple[Any, ...]]],
        touched: set[Key],
        gone: set[Key],
        changed: Callable[[Sequence[str]], bool],
    ) -> dict[Key, list[tuple[str, Key]]]:
        """Each written row's non-NULL foreign key names a parent row that exists for this transaction."""
        refs: dict[Key, list[tuple[str, Key]]] = {}
        if not info.foreign_keys or not rows:
            return refs
        names = info.stored_names
        for fk in info.foreign_keys:
            own = (fk.schema, fk.table) == (info.schema, info.name)
            parent = info if own else self.db.catalog.get(fk.schema, fk.table)
            if parent is None:
                raise IntegrityError(f"FOREIGN KEY of {info.name!r}: table {fk.schema}.{fk.table} is gone", "23503")
            needed: dict[Key, Key] = {}
            for key, row in rows:
                raw = [row[names.index(c)] for c in fk.columns]
                if any(v is None for v in raw):
                    continue
                pkey = typed_key(parent, raw)
                refs.setdefault(key, []).append((parent.identity, pkey))
                if changed(fk.columns) or (parent is info and pkey in gone):
                    needed.setdefault(pkey, key)
            entry = self.writes.get(parent.qualified)
            state: dict[Key, bool | None] = {k: entry.live.get(k) if entry else None for k in needed}
            if parent is info:  # a self-reference: the statement's own rows count as they will be
                state.update({k: True for k, _ in rows if k in state})
                state.update({k: False for k in gone if k in state})
            unknown = [k for k, v in state.items() if v is None]
            found = self._found(parent, unknown) if unknown else set()
            missing = [k for k, v in state.items() if v is False or (v is None and k not in found)]
            if missing:
                raise IntegrityError(
                    f"FOREIGN KEY ({', '.join(fk.columns)}) of {info.name!r}: no row {_show(parent, missing[0])} in "
                    f"{parent.name!r} (the row referencing it is {_show(info, needed[missing[0]])}); insert the "
                    "referenced row first",
                    "23503",
                )
        return refs

    def _check_unreferenced(
        self, info: TableInfo, children: Sequence[tuple[TableInfo, ForeignKey]], touched: set[Key], gone: set[Key]
    ) -> None:
        """No row (of the snapshot and this transaction's writes) references a key the statement deletes or
        re-keys: NO ACTION."""
        for child, fk in children:
            wanted = [(fk.columns, set(gone))]
            for key, held in self._visible_rows(child, wanted):
                if child is info and key in touched:
                    continue  # this very statement rewrites or deletes the referencing row (checked as a child)
                pkey = typed_key(info, [held[c] for c in fk.columns])
                if pkey in gone:
                    raise IntegrityError(
                        f"cannot delete or change the key of row {_show(info, pkey)} of {info.name!r}: row "
                        f"{_show(child, key)} of {child.name!r} references it (FOREIGN KEY ({', '.join(fk.columns)})); "
                        "delete or change the referencing rows first",
                        "23503",
                    )

    def reference_sets(self) -> tuple[set[int], set[int]]:
        """The foreign-key entries of the commit record: (references, probes). A writer of a child row records
        ref_hash(parent key) and looks for gone_hash(parent key) in concurrent records; a deleter of a referenced
        key records gone_hash and looks for ref_hash. So a child insert and a concurrent parent delete cannot
        both commit, while concurrent children of one parent never conflict (references match only probes)."""
        refs: set[int] = set()
        probes: set[int] = set()
        deleted = any(not live for e in self.writes.values() for live in e.live.values())
        referenced = {(f.schema, f.table) for t in self.db.catalog.all() for f in t.foreign_keys} if deleted else set()
        for e in self.writes.values():
            for key, marks in e.marks.items():
                if e.live.get(key):
                    refs.update(ref_hash(p, k) for p, k in marks.refs)
                    probes.update(gone_hash(p, k) for p, k in marks.refs)
            if (e.table.schema, e.table.name) in referenced:
                for key, live in e.live.items():
                    if not live:
                        refs.add(gone_hash(e.table.identity, key))
                        probes.add(ref_hash(e.table.identity, key))
        return refs, probes

    # ---- flushing ------------------------------------------------------------------------------------------

    def flush(self, tables: Iterable[str] | None = None, statement: bool = False) -> None:
        """Send pending writes of the given tables (all when None) to their Cache tables; the keys they insert are
        checked first, in one query (insert_check='flush').

        ``statement``: the pending rows are the running statement's only (direct mode). Then an error raised
        before any of them reached the engine leaves the transaction usable (the statement forgets its rows);
        otherwise rows of statements that already returned, or part of this one's, may be in the engine or
        cannot be written, and the transaction is marked failed: it can only roll back."""
        names = list(self.writes) if tables is None else [t for t in tables if t in self.writes]
        entries = [self.writes[n] for n in names if self.writes[n].pending]
        checks = [(e.table, list(e.unchecked)) for e in entries if e.unchecked]
        if checks:
            try:
                self._check_all_absent(checks)
            except IntegrityError as exc:
                if not statement:
                    self.failed = str(exc)  # the INSERT already returned: the transaction cannot go on
                raise
            for entry in entries:  # only once checked: a check that failed otherwise must run again
                entry.unchecked = set()
        if entries:
            self.db.storage.check(self.conn)  # a nearly full disk: StorageFull before any row is sent
        sent = False
        for entry in entries:
            info = entry.table
            cols = ", ".join(quote(c) for c in info.stored_names) + ", tq_txid, tq_seq, tq_deleted"
            items = list(entry.pending.items())
            try:
                for start in range(0, len(items), INSERT_BATCH):
                    values = ", ".join(
                        self._cache_row(info, key, row, seq) for key, (row, seq) in items[start : start + INSERT_BATCH]
                    )
                    self.conn.execute(f"INSERT INTO {info.cache} ({cols}) VALUES {values}")
                    sent = True
            except DatabaseError as exc:
                full = self._storage_full(exc)
                if full is not None:  # the engine could not write for want of space (tique/storage.py)
                    self.failed = f"writing buffered rows of {info.name!r} failed: {full}"
                    raise full from exc
                if self._dropped(info):
                    self.failed = f"table {info.name!r} was dropped by another session"
                    raise SerializationFailure(
                        f"could not write to table {info.name!r}: it was dropped (and maybe re-created) by a DROP "
                        f"TABLE in another session while this transaction ran; transaction {self.txid} was rolled "
                        "back: run it again (it will use the table as it is now)"
                    ) from exc
                if not statement or sent or connection_lost(exc):
                    self.failed = f"writing buffered rows of {info.name!r} failed: {exc}"
                raise
            except BaseException as exc:  # an interrupt: the INSERT may still run to its end in the engine
                self.failed = f"writing buffered rows of {info.name!r} was interrupted ({type(exc).__name__})"
                raise
            entry.pending.clear()
            entry.flushed = True

    def _dropped(self, info: TableInfo) -> bool:
        """Is ``info`` no longer the table of its name (asked after a failed write: a DROP elsewhere is likely)?"""
        try:
            self.db.catalog.refresh(self.conn)
        except DatabaseError:
            return False
        now = self.db.catalog.get(info.schema, info.name)
        return now is None or now.table_id != info.table_id

    def _cache_row(self, info: TableInfo, key: Key, row: tuple[Any, ...] | None, seq: int) -> str:
        if row is None:  # a tombstone carries its key only
            values = [None] * len(info.stored_names)
            for k, v in zip(info.key, key):
                values[info.stored_names.index(k)] = v
            deleted = "TRUE"
        else:
            values = list(row)
            deleted = "FALSE"
        return "(" + ", ".join(literal(v) for v in values) + f", {self.txid}, {seq}, {deleted})"

    def write_set(self) -> list[int]:
        """Every written key's hash and every live written row's UNIQUE claims (what a priority retry reserves)."""
        hashes = {key_hash(e.table, k) for e in self.writes.values() for k in e.live}
        hashes.update(h for e in self.writes.values() for k, m in e.marks.items() if e.live.get(k) for h in m.claims)
        return sorted(hashes)

    def record_set(self) -> list[int]:
        """The hashes the commit record holds: the write-set and the foreign-key entries (reference_sets)."""
        refs, self._probes = self.reference_sets()
        written = set(self.write_set())
        self._refs = refs - written  # recorded, but matched against others' probes only
        return sorted(written | refs)

    # ---- commit --------------------------------------------------------------------------------------------

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


def _mark(entry: TableWrites, marks: dict[Key, RowMarks]) -> None:
    for key, row_marks in marks.items():
        if row_marks.claims or row_marks.refs:
            entry.marks[key] = row_marks
        else:
            entry.marks.pop(key, None)


def _unique_message(info: TableInfo, columns: tuple[str, ...], value: tuple[Any, ...], holder: str) -> str:
    shown = ", ".join(f"{c}={v!r}" for c, v in zip(columns, value))
    return f"duplicate value ({shown}) for UNIQUE ({', '.join(columns)}) of table {info.name!r}: {holder} holds it"


def _restore(state: dict[Key, Any], key: Key, value: Any) -> None:
    """Put back one key's state in a write buffer; None means the key was not there."""
    if value is None:
        state.pop(key, None)
    else:
        state[key] = value


def _key_type(info: TableInfo, name: str) -> str:
    return "BIGINT" if name == ROWID else info.column(name).sql_type


def _stored_key(info: TableInfo, row: tuple[Any, ...]) -> tuple[Any, ...]:
    """The row with its key columns as the engine compares them (-0.0 stored as 0.0): the snapshot's anti-join
    of Storage and Cache keys must never tell two equal keys apart (the soak found -0.0 and 0.0 both visible)."""
    names = info.stored_names
    positions = [names.index(k) for k in info.key]
    if not any(isinstance(row[i], float) and row[i] == 0.0 for i in positions):
        return row
    fixed = list(row)
    for i in positions:
        fixed[i] = key_value(fixed[i])
    return tuple(fixed)


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


def typed_key(info: TableInfo, values: Sequence[Any]) -> Key:
    """A key as the engine compares it: each value brought to its column's type (a DATE given as a datetime is
    that date, a DECIMAL has its scale, -0.0 is 0.0...), so equal keys hash and compare equal in Python too."""
    return tuple(key_value(coerce(v, _key_type(info, k), k)) for v, k in zip(values, info.key))


def _may_equal(value: Any, rendered: str) -> bool:
    """Could the engine find key value ``value`` equal to the SQL literal ``rendered``? Exact for integer and
    string keys given as such; True (flush, to be safe) for anything else."""
    if isinstance(value, int) and not isinstance(value, bool):
        text = rendered.strip("'")
        if "e" in text.lower():
            return True  # a double: the engine compares in floating point, where distinct integers can be equal
        try:
            return decimal.Decimal(text) == value  # exact: a float would round big integers
        except decimal.InvalidOperation:
            return True
    if isinstance(value, str) and rendered.startswith("'"):
        return literal(value) == rendered
    return True


def _show(info: TableInfo, key: Key) -> str:
    return "(" + ", ".join(f"{k}={v!r}" for k, v in zip(info.key, key)) + ")"
