"""The checkpointer (section 2.4.1 of the paper): stable versions move to Storage, Cache and metadata shrink.

One run, with H the *horizon* (no running or future transaction reads a snapshot older than H; the C module
computes it atomically with transaction begins) and L the *low-water id*:

    L = min(the oldest running transaction id, the smallest id that committed after H, or is still committing)

Every transaction with an id below L is finished and settled at or below H: committed at or below H, aborted,
or gone without committing (rolled back, died). Steps (each named for the crash tests' step hook):

0. ``settled``: commit records of dead clients get their outcome while the database runs: a commit stuck before
   deciding for longer than the lease is expired (abandoned) and given an aborted outcome; one whose outcome is
   recorded but never advanced is advanced. Otherwise L would stay below a dead client's id for good.
1. ``planned``: H and L. ``logged``: the counters' high-water marks go to ``tique.checkpoints`` *before*
   anything is deleted, so recovery restarts past every id and timestamp, whatever step a crash hits.
2. Tables whose Cache holds no row are skipped after one shared count (``_empty_caches``). Per table, L_t <= L:
   version order is commit order, and a transaction's id does not follow it (a priority
   retry, or a begin that waits for its session's last commit, refreshes its snapshot after taking its id). L_t
   is lowered until no key has a committed version below L_t that is newer than one at or above it, so
   deleting below L_t removes a prefix of each key's versions in commit order.
   ``read``: the newest committed version at or below H of every key with a committed version from an id below
   L_t, every column as the engine's own text (a read-only statement: a statement that writes must not read a
   table others append to). ``wrote``: those versions replace the keys' rows in Storage (a tombstone deletes
   the key), cast back from that text by the engine, so no value ever passes through a Python type. Only the
   checkpointer writes Storage, so these statements never conflict. ``checked``: Storage holds every moved
   version as the Cache does, read again in one read-only statement (else the table's Cache rows and all
   metadata stay for the next run: MonetDB can misread a scan of a table others write, and the Cache row is the
   last right copy).
   ``cleaned``: ``DELETE FROM T__cache WHERE tq_txid < L_t``. MonetDB aborts a DELETE on a table others
   appended to meanwhile; appends never lose, so the checkpointer retries with back-off and, failing that,
   leaves the rows for the next run (Storage already has their newest stable version).
3. Only when every table's stable versions reached Storage, below the smallest L_t and below every Cache row a
   deferred delete left: reservations, then ``tique.commits`` (``trimmed_commits``), then - only if those went
   through - ``tique.outcomes`` (``trimmed``): a commit record whose outcome is gone would look unfinished forever.
   So every committed Cache row has its commit record (tique/record_keys.py relies on it). ``finished``: the run's
   log row gets its figures.

Nothing here needs atomicity: between the steps, a reader of any snapshot at or above H finds the same newest
version, either still in Cache (which wins over Storage) or in Storage. Every step is idempotent, so a
checkpointer killed anywhere simply starts over.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from tique.append_guard import NO_GUARD, AppendGuard, cache_of, reading_part, storage_of
from tique.cache_keys import cache_keys_of
from tique.catalog import Catalog, TableInfo, base_type, install, still_current, still_current_sql
from tique.checkpoint.opening import check_database
from tique.checkpoint.values import INT_TYPES, column_types, from_text, text_to_sql, zero_keys
from tique.engine.base import RawConnection, one_transaction
from tique.errors import (
    CheckpointLockLost,
    DatabaseError,
    OperationalError,
    StorageFull,
    lost_to_concurrency,
)
from tique.names import quote
from tique.outcomes import record_outcome, settle_if_decided
from tique.params import literal
from tique.rewrite.snapshot import NO_LIMIT
from tique.sequencer import ABANDONED, DONE, PUBLISHED, TAKEN
from tique.settings import CHECKPOINT_LOCK_LEASE_MS
from tique.storage import guard_of
from tique.zero_signs import zero_signs_kept, zeros_in_place

WRITE_BATCH = 1000  # Storage rows per statement
COUNT_BATCH = 100  # Cache tables counted per statement (a UNION ALL of 100 counts: about 16 ms; of 200: 44)
PROBE_VALUES = 200  # at most this many values of a key column in the look-up of stored keys (_stored_keys)
STEPS = (
    "settled",
    "planned",
    "logged",
    "read",
    "wrote",
    "checked",
    "cleaned",
    "trimmed_commits",
    "trimmed",
    "finished",
)
RUNNING = -1  # the errors column of a run's log row until the run finished


class CheckpointerBusy(OperationalError):
    pass


@dataclass
class TableReport:
    moved: int = 0  # newest stable versions written to Storage
    removed: int = 0  # rows deleted from Storage (their newest stable version is a delete)
    cleaned: int = 0  # Cache rows deleted
    deferred: bool = False  # the Cache delete kept conflicting: left for the next run
    mismatched: int = 0  # moved keys whose Storage row differs from their Cache version read again
    kept: bool = False  # so its Cache rows stayed, and no metadata was trimmed: the next run writes them again


@dataclass
class CheckpointReport:
    started: float  # unix time
    duration_s: float
    horizon: int
    low_txid: int
    sts: int
    last_cts: int
    tables: dict[str, TableReport] = field(default_factory=dict)
    metadata_trimmed: int = 0
    conflicts: int = 0  # MonetDB conflict aborts retried
    errors: list[str] = field(default_factory=list)
    settled: int = 0  # dead clients' commits settled (aborted, or advanced)
    idle: bool = False  # skipped: the counters are those of a run that found nothing to do (see Checkpointer._run)
    deferred: list[str] = field(default_factory=list)  # metadata DELETEs that kept conflicting: left for the next run

    @property
    def moved(self) -> int:
        return sum(t.moved + t.removed for t in self.tables.values())

    @property
    def cleaned(self) -> int:
        return sum(t.cleaned for t in self.tables.values())

    def line(self) -> str:
        deferred = [n for n, t in self.tables.items() if t.deferred or t.kept] + self.deferred
        return (
            f"checkpoint: horizon {self.horizon} (sts {self.sts}), below txid {self.low_txid}: "
            f"{self.moved} versions to Storage, {self.cleaned} Cache rows and {self.metadata_trimmed} metadata rows "
            f"removed, {self.conflicts} conflicts retried in {self.duration_s * 1000:.0f} ms"
            + (f"; {self.settled} dead clients' commits settled" if self.settled else "")
            + (f"; deferred: {', '.join(deferred)}" if deferred else "")
            + (f"; errors: {'; '.join(self.errors)}" if self.errors else "")
        )

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["moved"], out["cleaned"] = self.moved, self.cleaned
        return out


def _newest(info: TableInfo, horizon: int, low: int) -> str:
    """Every stored column and ``tq_deleted`` of the newest committed version at or below ``horizon`` of each key
    with a committed version from an id below ``low``: what a run moves."""
    key = ", ".join(f"c.{quote(k)}" for k in info.key)
    ccols = ", ".join(f"c.{quote(c)}" for c in info.stored_names)
    return (
        f"SELECT * FROM (SELECT {ccols}, c.tq_deleted, ROW_NUMBER() OVER (PARTITION BY {key} ORDER BY o.cts DESC, "
        f"c.tq_seq DESC) AS tq_rk, MIN(c.tq_txid) OVER (PARTITION BY {key}) AS tq_lo FROM {info.cache} AS c "
        f"JOIN tique.outcomes AS o ON o.txid = c.tq_txid WHERE o.ok AND o.cts <= {horizon}) AS z "
        f"WHERE tq_rk = 1 AND tq_lo < {low}"
    )


class Checkpointer:
    """Runs checkpoints over one raw connection. ``retries``/``backoff_s`` bound how long a conflicting Cache
    DELETE is retried before it is deferred to the next run."""

    def __init__(
        self,
        conn: RawConnection,
        *,
        retries: int = 8,
        backoff_s: float = 0.002,
        owner: int | None = None,
        step_hook: Callable[[str], None] | None = None,
        lock_lease_ms: int = CHECKPOINT_LOCK_LEASE_MS,
    ) -> None:
        self.conn = conn
        self.lock_lease_ms = lock_lease_ms
        self.retries = retries
        self.backoff_s = backoff_s
        self.owner = owner or (os.getpid() << 20 | random.getrandbits(20))
        self._epoch = 0  # the lock's epoch the run began under (acquire): its writes are fenced by it (_fence)
        self.catalog = Catalog()
        self.step_hook = step_hook  # tests pause or kill the checkpointer at named steps
        self._quiet: tuple[int, ...] | None = None  # the counters of the last run that found nothing to do
        self._key_tables: dict[tuple[str, ...], str] = {}  # the session's scratch table per composite key's types
        self._storage = guard_of(conn)  # a write that fails for want of space stops every commit (storage.py)
        check_database(conn)
        self._ensure_log()

    def _ensure_log(self) -> None:
        install(self.conn)  # adds tique.checkpoints to a database created before it existed

    # ---- the lock ------------------------------------------------------------------------------------------

    def acquire(self) -> None:
        got = int(self.conn.execute(f"SELECT tique.ckpt_lock({self.owner}, {self.lock_lease_ms})").scalar())
        if got < 0:
            holder = -got
            raise CheckpointerBusy(
                f"another checkpointer (owner {holder}, pid {holder >> 20}) is running on this database; "
                "only one may run at a time (its lock expires when it has not renewed it for its lease)"
            )
        self._epoch = got

    def _fence(self) -> str:
        """A condition (true, renewing the lock) that fails the statement carrying it with CheckpointLockLost when
        the lock changed hands since this run took it. A run that stalled past its lease (a long read, a paused
        process) while another checkpointer ran must not write what it read before: a version it read would
        replace a newer one the other run moved meanwhile, a committed update lost (found by a review). Every write
        of a run carries it: Storage's in the engine transaction of the batch, the Cache's and the metadata's in
        their DELETE."""
        return f"tique.ckpt_fence({self.owner}, {self._epoch}, {self.lock_lease_ms}) = 1"

    def _renew(self) -> None:
        self.conn.execute(f"SELECT {self._fence()}")

    def release(self) -> None:
        try:
            self.conn.execute(f"SELECT tique.ckpt_release({self.owner})")
        except DatabaseError:
            pass

    # ---- one run -------------------------------------------------------------------------------------------

    def run_once(self, release: bool = True) -> CheckpointReport:
        """One checkpoint under the lock; ``release=False`` keeps the lock (a looping checkpointer holds it)."""
        self.acquire()
        try:
            return self._run()
        finally:
            if release:
                self.release()

    def _run(self) -> CheckpointReport:
        started, t0 = time.time(), time.monotonic()
        # On a nearly full disk, or after the engine failed to write, a checkpoint writes nothing: StorageFull
        # (tique/storage.py; the engine's log must keep what is acknowledged)
        self.conn.execute("SELECT tique.storage_ok()")
        settled = self._settle_dead_clients()
        self._hook("settled")
        counters = tuple(
            int(v)
            for v in self.conn.execute(
                "SELECT tique.horizon(), tique.oldest_txid(), tique.sts(), tique.last_cts(), tique.last_txid()"
            ).rows[0]
        )
        horizon, oldest, sts, last_cts, last_txid = counters
        busy = self.conn.execute(
            f"SELECT MIN(txid) FROM tique.commits WHERE cts > {horizon} "
            "OR txid NOT IN (SELECT txid FROM tique.outcomes)"
        ).scalar()
        low = min(oldest, int(busy)) if busy is not None else oldest
        report = CheckpointReport(started, 0.0, horizon, low, sts, last_cts, settled=settled)
        # Nothing a run reads can change without one of these moving (a version becomes stable only through a commit
        # timestamp, sts or the horizon; Cache rows are written by transactions that take ids; DDL that changes a
        # table commits; a bulk load writes Storage only), so a run with the counters of one that found nothing to
        # do would find nothing either. It writes nothing, not even its log row. MonetDB 11.41 moves its write-ahead
        # log into the tables' own files only while the database is left alone, and a write committed during a bulk
        # load can stop that until the kernel restarts; data only the log holds gets no hash, so every point read of
        # it scans (README "Engine facts"). An idle checkpointer must not be that write.
        state = (*counters, -1 if busy is None else int(busy))
        if not settled and state == self._quiet:
            report.idle = True
            report.duration_s = time.monotonic() - t0
            return report
        self._quiet = None
        self._hook("planned")
        # Before anything is deleted: recovery restarts the counters past these, whatever step a crash hits (the
        # ids about to be trimmed are all at or below last_txid: L <= oldest_txid <= last_txid + 1).
        started_ms = self._log_start(report, last_txid)
        try:
            self._hook("logged")
            self._tables_and_metadata(report)
        except DatabaseError as exc:  # the run's log row says why it stopped
            try:
                self._storage.raise_if_large_write_failed(exc, self.conn)  # its log row, a batch's StorageFull
            except StorageFull as full:
                exc = full
            report.errors.append(f"{type(exc).__name__}: {exc}")
            report.duration_s = time.monotonic() - t0
            with contextlib.suppress(DatabaseError):
                self._log_end(report, started_ms, last_txid)
            raise exc
        report.duration_s = time.monotonic() - t0
        self._log_end(report, started_ms, last_txid)
        self._hook("finished")
        did = report.moved or report.cleaned or report.metadata_trimmed or report.settled
        if not (did or report.errors or report.deferred or any(t.deferred for t in report.tables.values())):
            self._quiet = state
        return report

    def _tables_and_metadata(self, report: CheckpointReport) -> None:
        self.catalog.refresh(self.conn)
        trim_below = report.low_txid
        tables = [info for info in self.catalog.all() if info.kind == "tx"]
        empty = self._empty_caches(tables)
        left: list[TableInfo] = []  # tables whose Cache clean was deferred
        for info in tables:
            name = f"{info.schema}.{info.name}"
            if info.cache in empty:
                report.tables[name] = TableReport()
                continue
            try:
                table_low = self._table_low(info, report.horizon, report.low_txid)
                trim_below = min(trim_below, table_low)
                table = report.tables[name] = self._table(info, report.horizon, table_low, report)
                if table.deferred:
                    left.append(info)
                if table.kept:  # its Cache rows must stay visible: no metadata trimmed this run
                    report.errors.append(
                        f"{name}: {table.mismatched} versions written to Storage read back otherwise than the Cache "
                        "holds them (a misread scan?); they stay in the Cache, the next run writes them again"
                    )
            except CheckpointLockLost:
                raise
            except DatabaseError as exc:
                self._storage.raise_if_large_write_failed(exc, self.conn)  # a batch's StorageFull stops the run
                report.errors.append(f"{name}: {exc}")
            self._renew()  # renew the lock between tables
        if not report.errors:
            # Only once every table's stable versions are in Storage: a trimmed outcome hides its Cache rows. And only
            # below every Cache row left: a committed Cache row keeps its commit record, which is how a MAPI client
            # knows its key may be cached (tique/record_keys.py) while a later run rewrites its Storage row.
            try:
                trim_below = min(trim_below, self._oldest_left(left, trim_below))
            except DatabaseError as exc:
                report.errors.append(f"the Cache rows a deferred clean left: {exc}")
                return
            self._trim_metadata(trim_below, report)

    def _oldest_left(self, left: Sequence[TableInfo], otherwise: int) -> int:
        """The smallest transaction id of the Cache rows left in ``left``, whose clean was deferred (their rows below
        L_t stay; no transaction with a smaller id is running, so none appends one meanwhile); ``otherwise`` when
        none is left."""
        if not left:
            return otherwise
        sql = " UNION ALL ".join(f"SELECT MIN(tq_txid) AS m FROM {info.cache}" for info in left)
        oldest = self.conn.execute(f"SELECT MIN(m) FROM ({sql}) AS tq_m").scalar()
        return otherwise if oldest is None else int(oldest)

    def _empty_caches(self, tables: Sequence[TableInfo]) -> set[str]:
        """The Cache tables of ``tables`` that hold no row, counted after the horizon was read: a commit at or
        below it wrote its rows before taking its timestamp, and a row written later is from an id at or above L
        (its transaction was running), so such a table has nothing to move, clean or keep from the metadata trim.
        Counted in a few statements (COUNT(*) is the table's size to MonetDB): each table's own steps cost two to
        three statements even for an empty Cache, half a second a run at 200 tables. A statement that fails (a
        table dropped since the catalog was read) counts none of its tables as empty."""
        empty: set[str] = set()
        for start in range(0, len(tables), COUNT_BATCH):
            batch = tables[start : start + COUNT_BATCH]
            sql = " UNION ALL ".join(f"SELECT {i}, COUNT(*) FROM {info.cache}" for i, info in enumerate(batch))
            try:
                rows = self.conn.execute(sql).rows
            except DatabaseError:
                continue
            empty.update(batch[int(i)].cache for i, count in rows if not int(count))
        return empty

    def _hook(self, step: str) -> None:
        if self.step_hook:
            self.step_hook(step)

    # ---- dead clients --------------------------------------------------------------------------------------

    def _settle_dead_clients(self) -> int:
        """Give a dead client's commit its outcome while the database runs (recovery does it only at open).

        A commit record without outcome whose slot is stuck before deciding for longer than the lease is expired
        (as a waiting committer would) and recorded as aborted: its late owner's decide then fails, so it can
        never commit. A slot the C module says is abandoned - or settled although no outcome is visible (an
        abandoned slot the ring has reused: a commit records its outcome before it advances) - is recorded as
        aborted too (or committed, if the module says its owner decided so). A commit stuck deciding is settled with
        its decided outcome (tique/outcomes.py). A record whose timestamp the module does not know (written before
        a restart) is left to recovery."""
        settled = 0
        unfinished = self.conn.execute(
            "SELECT txid, MAX(cts) FROM tique.commits WHERE txid NOT IN (SELECT txid FROM tique.outcomes) GROUP BY txid"
        ).rows
        for txid, cts in unfinished:
            state = int(self.conn.execute(f"SELECT tique.cts_state({int(cts)})").scalar())
            if state in (TAKEN, PUBLISHED) and int(self.conn.execute(f"SELECT tique.expire({int(cts)})").scalar()):
                state = ABANDONED
            if state not in (ABANDONED, DONE):
                continue  # still running within its lease, deciding, or unknown to this engine
            # read after the state: an outcome recorded before a settled state is visible now
            if not self.conn.execute(f"SELECT COUNT(*) FROM tique.outcomes WHERE txid = {int(txid)}").scalar():
                # and its snapshot pin ends: a transaction in COMMIT never reads a version again
                record_outcome(self.conn, None, int(txid), int(cts))  # aborted unless decided
                self.conn.execute(f"SELECT tique.end_txn_as({int(txid)}, 0)")  # another session's: as the owner
                settled += 1
        while True:
            stuck = int(self.conn.execute("SELECT tique.stuck()").scalar())
            if not stuck or not settle_if_decided(self.conn, stuck):
                return settled
            self.conn.execute(f"SELECT tique.end_txn_as(tique.owner({stuck}), 0)")
            settled += 1

    # ---- one table -----------------------------------------------------------------------------------------

    def _table_low(self, info: TableInfo, horizon: int, low: int) -> int:
        """The largest L_t <= low such that no key has a committed version from an id below L_t that is newer
        (commits later) than a version from an id at or above it. Deleting below L_t then never leaves an older
        version of a key in the Cache, where it would outrank the newer one moved to Storage."""
        key = ", ".join(f"c.{quote(k)}" for k in info.key)
        # per version: the largest id among the key's versions that committed before it
        inversions = [
            (int(w), int(p))
            for w, p in reading_part(
                self.conn,
                info,
                cache_of,
                f"SELECT tq_txid, tq_prev FROM (SELECT c.tq_txid, MAX(c.tq_txid) OVER (PARTITION BY {key} "
                "ORDER BY o.cts, c.tq_seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS tq_prev "
                f"FROM {info.cache} AS c JOIN tique.outcomes AS o ON o.txid = c.tq_txid "
                f"WHERE o.ok AND o.cts <= {horizon}) AS z WHERE tq_prev > tq_txid AND tq_txid < {low}",
            )
        ]
        while True:  # L_t must not split any (newer version's id, older version's id] interval
            splitting = [w for w, p in inversions if w < low <= p]
            if not splitting:
                return low
            low = min(splitting)

    def _table(self, info: TableInfo, horizon: int, low: int, report: CheckpointReport) -> TableReport:
        out = TableReport()
        cols = list(info.stored_names)
        types = column_types(info)
        plain = ", ".join(quote(c) for c in cols)
        texts = ", ".join(f"CAST({quote(c)} AS CLOB)" for c in cols)  # the engine's own text of every value
        # its Storage writes make this process's readers of the table's Storage run again, and its reads run again
        # when a commit's rows went into the Cache meanwhile (append_guard.py): a string misread as '' while it
        # copies could be misread the same way by the read-back that checks the copy
        guard: AppendGuard = getattr(self.conn, "append_guard", None) or NO_GUARD
        storage = [storage_of(info.qualified)] if info.has_strings else []
        both = [cache_of(info.qualified), *storage] if info.has_strings else []
        newest = f"SELECT {texts}, tq_deleted FROM ({_newest(info, horizon, low)}) AS z"
        rows = guard.reading(both, lambda: self.conn.execute(newest).rows)
        self._hook("read")
        key_pos = [cols.index(k) for k in info.key]
        converts = [text_to_sql(types[c]) for c in cols]
        rows = [zero_keys(r, key_pos) for r in rows]
        for start in range(0, len(rows), WRITE_BATCH):
            batch = rows[start : start + WRITE_BATCH]
            keys = [tuple(r[i] for i in key_pos) for r in batch]
            stored = self._stored_keys(info, keys)
            keys = keys if stored is None else [k for k in keys if k in stored]
            # another session's DROP and CREATE of the name must not get these writes: the DELETE deletes only
            # while the table is the one read, and the INSERT runs in an engine transaction that checks it first
            # (still_current). Not one transaction for both: so TPC-C at scale 1.0 made a median 1716 tpmC against
            # 1880 (likely: an INSERT after a DELETE of its own transaction has no usable hash for its key check)
            if keys:
                self._delete_keys(info, keys)
            live = [r[: len(cols)] for r in batch if not r[-1]]
            if live:
                negative = any(r[i] == "-0" for r in live for i in info.float_positions)
                insert = f"INSERT INTO {info.storage} ({plain}) VALUES " + ", ".join(
                    "(" + ", ".join(f(v) for f, v in zip(converts, r)) + ")" for r in live
                )
                try:
                    with guard.appending(storage), zero_signs_kept(self.conn, negative), one_transaction(self.conn):
                        self._renew()
                        still_current(self.conn, info, "checkpoint")
                        self.conn.execute(insert)
                except DatabaseError as exc:
                    # judged once rolled back: a conflict counts near a full disk by the batch's size (the engine's
                    # log takes about the statement's size, and more); a bulk load or ALTER beside it can really
                    # conflict
                    self._storage.raise_if_large_write_failed(exc, self.conn, 4 * len(insert) + (1 << 20))
                    raise
            out.moved += len(live)
            out.removed += len(batch) - len(live)
            self._renew()  # renew the lock: a big table takes many batches
            self._hook("wrote")
        if rows:
            out.mismatched = guard.reading(both, lambda: self._mismatched(info, horizon, low))
            if out.mismatched and self._zeros_written_again(info, rows, key_pos):
                out.mismatched = guard.reading(both, lambda: self._mismatched(info, horizon, low))
            self._hook("checked")
            if out.mismatched:  # the Cache keeps them (they outrank Storage); the next run writes them again
                out.kept = True
                return out
        cleaned = self._retrying(
            f"DELETE FROM {info.cache} WHERE tq_txid < {low} AND {still_current_sql(info)} AND {self._fence()}",
            report,
        )
        if cleaned is None:
            out.deferred = True
        else:
            out.cleaned = cleaned
        self._hook("cleaned")
        known = cache_keys_of(self.conn)
        if cleaned and known is not None and known.tracked(info):  # the keys it cleaned are no longer cached
            with contextlib.suppress(DatabaseError):  # failing, the set stays as it was: a superset still
                known.rebuild_from(info, self.conn)
        return out

    def _zeros_written_again(self, info: TableInfo, rows: Sequence[Sequence[Any]], key_pos: Sequence[int]) -> bool:
        """Write the REAL and DOUBLE zeros of the moved versions ``rows`` (the engine's text) again in Storage, in
        place, where they came out with the other sign: an INSERT into a slot a deleted row left keeps that row's
        zero sign (tique/zero_signs.py), which the read-back finds as a mismatch. Only the checkpointer writes
        Storage. False when none did."""
        types = column_types(info)
        names = info.stored_names
        zeros = []
        for row in rows:
            signs = {names[i]: row[i] == "-0" for i in info.float_positions if not row[-1] and row[i] in ("0", "-0")}
            if signs:
                match = " AND ".join(f"{quote(k)} = {from_text(row[i], types[k])}" for k, i in zip(info.key, key_pos))
                zeros.append((f"({match})", signs))
        return zeros_in_place(self.conn, info.storage, zeros, self._fence())

    def _mismatched(self, info: TableInfo, horizon: int, low: int) -> int:
        """How many of the keys this run moved have a Storage row other than their version in the Cache, read
        again (a tombstone's key: any row). The Cache rows are deleted only when none: a scan of a table others
        are writing can return '' for a stored string (README, engine facts), and a version misread so, once
        copied, would be the only one left. Compared as the engine's text, exact for every type (a zero's sign
        included: Storage writes keep it, tique/zero_signs.py), in one read-only statement; a misread in this
        check only keeps the rows a run longer."""
        on = " AND ".join(f"s.{quote(k)} = c.{quote(k)}" for k in info.key)
        first = quote(info.key[0])
        differs = " OR ".join(
            f"(s.{c} IS NULL) <> (c.{c} IS NULL) OR CAST(s.{c} AS CLOB) <> CAST(c.{c} AS CLOB)"
            for c in (quote(name) for name in info.stored_names if name not in info.key)
        )
        live = f"s.{first} IS NULL" + (f" OR {differs}" if differs else "")
        return int(
            self.conn.execute(
                f"SELECT COUNT(*) FROM ({_newest(info, horizon, low)}) AS c LEFT JOIN {info.storage} AS s ON {on} "
                f"WHERE CASE WHEN c.tq_deleted THEN s.{first} IS NOT NULL ELSE {live} END"
            ).scalar()
        )

    def _probe_at(self, info: TableInfo) -> int:
        """Where the probe column (Catalog.probed: the key column with the most distinct values in Storage) sits in
        the key."""
        probe = self.catalog.probed(self.conn, info).probe
        return info.key.index(probe) if probe in info.key else 0

    def _stored_keys(self, info: TableInfo, keys: Sequence[tuple[Any, ...]]) -> set[tuple[Any, ...]] | None:
        """Which of ``keys`` (engine text) Storage holds, so that only those are deleted: a DELETE on Storage
        matches its keys by a join over the whole table (35 ms at 1.2M rows, each run), and leaves the key
        check of the INSERT after it a rebuild of the key's hash; most moved versions are new keys (inserted
        rows) that need neither. A read-only statement that selects by one key column first (Catalog.probed),
        then Python compares whole keys exactly. None (delete them all) unless every key column is an integer
        and few values are probed."""
        types = column_types(info)
        if any(base_type(types[k]) not in INT_TYPES for k in info.key):
            return None
        try:
            parsed = {k: tuple(int(v) for v in k) for k in keys}
        except (TypeError, ValueError):
            return None
        at = self._probe_at(info)
        probe = info.key[at]
        probed = sorted({p[at] for p in parsed.values()})
        if len(probed) > PROBE_VALUES:
            return None
        names = ", ".join(quote(k) for k in info.key)
        others = " AND ".join(
            f"{quote(k)} IN ({', '.join(str(v) for v in sorted({p[i] for p in parsed.values()}))})"
            for i, k in enumerate(info.key)
            if k != probe
        )
        rows = self.conn.execute(
            f"SELECT {names} FROM (SELECT {names} FROM {info.storage} WHERE {quote(probe)} IN "
            f"({', '.join(str(v) for v in probed)}) LIMIT {NO_LIMIT}) AS p{' WHERE ' + others if others else ''}"
        ).rows
        found = {tuple(int(v) for v in r) for r in rows}
        return {k for k, p in parsed.items() if p in found}

    def _delete_keys(self, info: TableInfo, keys: Sequence[tuple[Any, ...]]) -> None:
        """Delete the Storage rows of ``keys``, given as the engine's text of each key value. A composite key is
        matched by a join with a table of this session holding the keys, never with a VALUES list: MonetDB 11.41
        merges the columns of a VALUES list whose values are the same up to order (``(VALUES (1, 2), (2, 1))``
        reads as (1, 1), (2, 2)), so such a DELETE removed other rows and left the ones it should remove (README,
        engine facts). One conjunction per key (``a = 1 AND b = 2 OR ...``) is right too, but costs a pass over
        the table per few keys: 60 ms for 200 keys of a 1.2M-row table, against about 30 ms for 1000 joined."""
        types = column_types(info)
        if len(info.key) == 1:
            k = info.key[0]
            values = ", ".join(from_text(v[0], types[k]) for v in keys)
            sql = (
                f"DELETE FROM {info.storage} WHERE {quote(k)} IN ({values}) AND {still_current_sql(info)} "
                f"AND {self._fence()}"
            )
            reading_part(self.conn, info, storage_of, sql)
            return
        scratch = self._key_table(tuple(types[k] for k in info.key))
        rows = ", ".join("(" + ", ".join(from_text(v, types[k]) for v, k in zip(row, info.key)) + ")" for row in keys)
        self.conn.execute(f"DELETE FROM {scratch}")
        self.conn.execute(f"INSERT INTO {scratch} VALUES {rows}")  # a plain INSERT's VALUES are read right
        # MonetDB resolves at most table.column here, not schema.table.column
        match = " AND ".join(f"v.k{i} = {quote(info.storage_name)}.{quote(k)}" for i, k in enumerate(info.key))
        # first the rows whose probe column (the key column with the most distinct values in Storage, as point
        # reads select by: Catalog.probed) has one of these keys' values: an IN list on one column is a hash lookup,
        # where the join alone passed over the whole table (1000 order_line keys, 593 of them stored, at scale 1.0:
        # 3.8 ms against 22.9 ms); the join still decides
        at = self._probe_at(info)
        probe = ", ".join(sorted({from_text(row[at], types[info.key[at]]) for row in keys}))
        sql = (
            f"DELETE FROM {info.storage} WHERE {quote(info.key[at])} IN ({probe}) "
            f"AND EXISTS (SELECT 1 FROM {scratch} AS v WHERE {match}) "
            f"AND {still_current_sql(info)} AND {self._fence()}"
        )
        reading_part(self.conn, info, storage_of, sql)

    def _key_table(self, types: tuple[str, ...]) -> str:
        """A temporary table of this session with columns k0, k1, ... of ``types`` (made at its first use; only
        this session sees it, so its writes conflict with nobody's)."""
        name = self._key_tables.get(types)
        if name is None:
            # named for this checkpointer: another one on the same session (a temporary table outlives its maker)
            # must not find the name taken
            name = f"tmp.tq_keys_{self.owner:x}_{len(self._key_tables)}"
            columns = ", ".join(f"k{i} {t}" for i, t in enumerate(types))
            self.conn.execute(f"CREATE LOCAL TEMPORARY TABLE {name} ({columns}) ON COMMIT PRESERVE ROWS")
            self._key_tables[types] = name
        return name

    # ---- metadata ------------------------------------------------------------------------------------------

    def _trim_metadata(self, low: int, report: CheckpointReport) -> None:
        """Reservations and commit records below ``low``, then their outcomes - only if both went through: a
        commit record (or reservation) whose outcome is gone looks unfinished forever and would freeze L."""
        now_ms = int(time.time() * 1000)
        complete = True
        fence = self._fence()
        for sql in (
            f"DELETE FROM tique.reservations WHERE (txid < {low} OR until_ms < {now_ms}) AND {fence}",
            f"DELETE FROM tique.commits WHERE txid < {low} AND {fence}",
        ):
            complete = self._trim(sql, report) and complete
        self._hook("trimmed_commits")
        if complete:
            self._trim(f"DELETE FROM tique.outcomes WHERE txid < {low} AND {fence}", report)
        self._hook("trimmed")

    def _trim(self, sql: str, report: CheckpointReport) -> bool:
        n = self._retrying(sql, report)
        if n is None:
            report.deferred.append(sql.split(" WHERE")[0].removeprefix("DELETE FROM "))
            return False
        report.metadata_trimmed += n
        return True

    def _retrying(self, sql: str, report: CheckpointReport) -> int | None:
        """Run a DELETE on a table others append to; MonetDB aborts it when an append committed meanwhile.
        The number of rows deleted (counted first: over MAPI the engine sends no update counts), or None after
        the retries ran out. The rows it deletes are never appended again, so the count stays exact."""
        count = int(self.conn.execute(sql.replace("DELETE FROM", "SELECT COUNT(*) FROM", 1)).scalar())
        if not count:
            return 0
        delay = self.backoff_s
        for _ in range(self.retries + 1):
            try:
                self.conn.execute(sql)
                return count
            except DatabaseError as exc:
                # also "Delete failed due to conflict" (a ProgrammingError): a writer's in-place last resort for its
                # zeros (tique/zero_signs.py) updates the Cache
                if not lost_to_concurrency(exc):
                    raise
                # MonetDB reports a log write that failed for want of space as this conflict, and then acknowledges
                # commits it may not keep: near the minimum free space (by the DELETE's log, small) writes stop
                self._storage.raise_if_large_write_failed(exc, self.conn, (1 << 20) + 16 * count)
                report.conflicts += 1
                time.sleep(delay * random.uniform(0.5, 1.5))
                delay = min(delay * 2, 0.2)
        return None

    # ---- the log -------------------------------------------------------------------------------------------

    def _log_start(self, report: CheckpointReport, last_txid: int) -> int:
        """The run's log row, with the counters' high-water marks, before the run deletes anything."""
        started_ms = int(report.started * 1000)
        self.conn.execute(
            "INSERT INTO tique.checkpoints VALUES ("
            f"{started_ms}, 0, {report.horizon}, {report.low_txid}, {last_txid}, {report.last_cts}, 0, 0, 0, 0, "
            f"{RUNNING}, 'running')"
        )
        return started_ms

    def _log_end(self, report: CheckpointReport, started_ms: int, last_txid: int) -> None:
        note = "; ".join(report.errors + [f"deferred: {d}" for d in report.deferred])[:1000]
        # only the checkpointer writes the log, so these statements never conflict
        self.conn.execute(
            f"UPDATE tique.checkpoints SET duration_ms = {int(report.duration_s * 1000)}, moved = {report.moved}, "
            f"cleaned = {report.cleaned}, trimmed = {report.metadata_trimmed}, conflicts = {report.conflicts}, "
            f"errors = {len(report.errors)}, note = {literal(note)} WHERE started_ms = {started_ms} "
            f"AND errors = {RUNNING} AND last_txid = {last_txid}"
        )
        # the log itself stays small, but never loses its largest high-water marks (even if the clock went back)
        self.conn.execute(
            "DELETE FROM tique.checkpoints WHERE started_ms < (SELECT MIN(started_ms) FROM (SELECT started_ms FROM "
            "tique.checkpoints ORDER BY started_ms DESC LIMIT 1000) AS recent) "
            "AND last_txid < (SELECT MAX(last_txid) FROM tique.checkpoints) "
            "AND last_cts < (SELECT MAX(last_cts) FROM tique.checkpoints)"
        )
