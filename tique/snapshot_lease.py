"""The snapshot of one transaction and its lease (the paper's start timestamp, with the checkpointer's horizon
kept behind it): begin takes the snapshot and pins it with a lease, statements renew the lease, waits for a
commit to become visible, and the pin's end."""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence

from tique.database import Database
from tique.engine.base import RawConnection
from tique.errors import DatabaseError, LeaseExpired, Timeout
from tique.outcomes import settle_if_decided, waiting
from tique.prepared import protocol_template, run_template
from tique.rewrite.template import STS, TXID, Template
from tique.sequencer import CSequencer
from tique.settings import COMMIT_LEASE_MS, INT_MAX, Settings


@functools.cache
def _begin_template(begin_txn: str, marks: int = 0) -> Template:
    """begin's statement, prepared once per session (EXEC skips MonetDB's parser and optimizer: about 0.2 ->
    0.07 ms); ``begin_txn`` is the sequencer's call, bound to the session for an ordinary user. ``marks``: how
    many write marks it reads after taking the snapshot (shared_rows.py), of the tables given as parameters
    ``m0``...: the set tracked changes at a begin when more tables than it holds are read by key in turn, so
    with the ids in the text each begin would be a new statement to parse, optimize and keep."""
    reads = "".join(f", tique.last_write(x.t, {{m{i}}})" for i in range(marks))
    return protocol_template(
        f"SELECT x.t, tique.snapshot_of(x.t), tique.stuck(), tique.catalog_version(x.t){reads} FROM "
        f"(SELECT {begin_txn} AS t) AS x"
    )


def _marks_read(tracked: int) -> int:
    """The places for write marks in the begin statement for ``tracked`` tables: a few sizes, so a session
    prepares a few begin statements whatever tables it reads."""
    return 0 if tracked == 0 else max(4, 1 << (tracked - 1).bit_length())


class SnapshotLease:
    """``sts`` and ``txid`` of a transaction begun now; with the C module, a pin on ``sts`` renewed while in use."""

    def __init__(
        self, db: Database, conn: RawConnection, settings: Settings, min_sts: int = 0, prev_txid: int = 0
    ) -> None:
        self.db = db
        self.conn = conn
        self.settings = settings
        self.renewed_at = time.monotonic()
        self.catalog_seen: int | None = None  # the engine's catalog version at begin (None: no write marks read)
        self.catalog_sts: int | None = None  # the snapshot it was read after (sts may move on: a wait, a retry)
        self.catalog_at_begin: int | None = None  # the engine's catalog version this transaction began under
        self.sts, self.txid = self._begin(min_sts, prev_txid)

    def _begin(self, min_sts: int, prev_txid: int) -> tuple[int, int]:
        if isinstance(self.db.sequencer, CSequencer):
            # One call ends the session's previous transaction and registers this one's snapshot with a lease, so
            # the checkpointer keeps every version it may read (see renew).
            # The catalog version is read after begin_txn took the snapshot (it takes x.t as input), so a snapshot
            # that includes a DDL comes with that DDL's version (see catalog.py).
            shared = self.db.shared_rows
            tracked = shared.tracked() if self.settings.shared_rows and shared.max_rows > 0 else ()
            local = self.db.sequencer.local
            if local is not None and not self.conn.closed:
                txid, sts, stuck, version, marks = local.begin(prev_txid, self.settings.snapshot_lease_ms, tracked)
            else:
                txid, sts, stuck, version, marks = self._begin_statement(prev_txid, tracked)
            shared.validate(sts, int(version), {t: int(m) for t, m in zip(tracked, marks)})
            self.catalog_seen, self.catalog_sts = int(version), sts
            if stuck and settle_if_decided(self.conn, int(stuck), self.db.sequencer.restricted):
                sts = self.db.sequencer.sts(self.conn)  # a dead client's commit held the snapshot back
        else:
            sts, txid = self.db.sequencer.sts(self.conn), self.db.sequencer.next_txid(self.conn)
            version = self.db.sequencer.catalog_version(self.conn)
        self.catalog_at_begin = int(version)
        self.db.catalog.sync(self.conn, int(version))
        if sts < min_sts:  # this session's last commit is not visible yet: wait, so it reads its own commits
            try:
                sts = self._await_own_commit(min_sts)
            except BaseException:
                self.end_pin(txid)
                raise
        return sts, txid

    def _begin_statement(self, prev_txid: int, tracked: Sequence[int]) -> tuple[int, int, int, int, list[int]]:
        """The begin as one prepared statement (a client over MAPI, an ordinary user)."""
        values = {"prev": str(int(prev_txid)), "lease": str(int(self.settings.snapshot_lease_ms))}
        places = _marks_read(len(tracked))
        # a table id is never 0: the places past the tables tracked read a mark nobody uses
        values.update({f"m{i}": str(int(t)) for i, t in enumerate((*tracked, *[0] * (places - len(tracked))))})
        begin = _begin_template(self.db.sequencer.call("begin_txn", "{prev}", "CAST({lease} AS INT)"), places)
        txid, sts, stuck, version, *marks = run_template(self.conn, begin, values).rows[0]
        return int(txid), int(sts), int(stuck or 0), int(version), [int(m) for m in marks]

    def _await_own_commit(self, cts: int) -> int:
        """Wait until this session's last commit ``cts`` is visible. It is committed (its outcome is recorded),
        and only earlier commits can hold it back: each finishes, or is abandoned once stuck for the lease, so
        the wait lasts up to the lease plus the advance time-out instead of failing after the time-out alone.
        With the C module the wait is an advance of ``cts``, which settles it (if its COMMIT could not) and
        abandons stale predecessors as any committer's wait does."""
        lease = self.db.lease_ms or COMMIT_LEASE_MS
        timeout = min(lease + self.settings.advance_timeout_ms, INT_MAX)  # the C module takes an INT
        if not isinstance(self.db.sequencer, CSequencer):
            return self.await_sts(cts, "this session's last commit", timeout)
        try:
            advance = self.db.sequencer.advance_fn
            waiting(
                self.conn,
                lambda: self.conn.execute(f"SELECT {advance}({int(cts)}, {timeout})"),
                self.db.sequencer.restricted,
            )
        except Timeout as exc:
            raise Timeout(
                f"this session's last commit ({cts}) is committed but still not visible after {timeout} ms: an "
                f"earlier commit is stuck; the new transaction did not start, try again ({exc})",
                exc.sqlstate,
            ) from exc
        return self.db.sequencer.sts(self.conn)

    def end_pin(self, txid: int) -> None:
        """Release a snapshot pin of a transaction that will not run (best effort: the lease ends it too)."""
        if isinstance(self.db.sequencer, CSequencer):
            try:
                self.conn.execute(f"SELECT {self.db.sequencer.call('end_txn', int(txid))}")
            except DatabaseError:
                pass

    def await_sts(self, target: int, what: str, timeout_ms: int | None = None) -> int:
        """Poll until the snapshot includes commit ``target``; an error after the time-out (by default the
        advance time-out)."""
        timeout_ms = self.settings.advance_timeout_ms if timeout_ms is None else timeout_ms
        deadline = time.monotonic() + timeout_ms / 1000
        while (sts := self.db.sequencer.sts(self.conn)) < target:
            if time.monotonic() > deadline:
                raise Timeout(f"{what} ({target}) is not visible yet after {timeout_ms} ms: an earlier commit is stuck")
            time.sleep(0.001)
        return sts

    def renew(self) -> None:
        """Keep the snapshot's lease: renewed before any statement once half of it has passed. A transaction whose
        lease ran out (its client stalled) may find versions it needs checkpointed away: SerializationFailure."""
        if not isinstance(self.db.sequencer, CSequencer):
            return
        if time.monotonic() - self.renewed_at < self.settings.snapshot_lease_ms / 2000:
            return
        sent = time.monotonic()
        renew = self.db.sequencer.call("renew", self.txid, self.settings.snapshot_lease_ms)
        if not self.conn.execute(f"SELECT {renew}").scalar():
            raise LeaseExpired(
                f"transaction {self.txid} was idle past its snapshot lease ({self.settings.snapshot_lease_ms} ms), "
                "so the checkpointer may have moved versions it reads; it was rolled back and is safe to retry "
                "(a longer snapshot_lease_ms keeps it longer)"
            )
        self.renewed_at = sent

    def slots(self) -> dict[str, str]:
        """The values of a rewritten statement's snapshot slots: the snapshot (the newest one with
        unsafe_read_latest) and the transaction id."""
        sts = self.sts
        if self.settings.unsafe_read_latest:
            sts = self.db.sequencer.sts(self.conn)
        return {STS: str(sts), TXID: str(self.txid)}
