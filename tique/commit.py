"""The commit protocol (the paper's commit: timestamp, certification, outcome, visibility in commit order),
written once for every sequencer: each step is a Sequencer operation (tique/sequencer.py), so the C module and
the SQL sequencer run the same code, with the same step hooks, errors and settling of stuck commits.

1. ``record``: take a commit timestamp and write the commit record with the write-set (one statement);
2. ``publish_record``: from here every later certifier sees the record; wait for every earlier one;
3. certify, read-only: no transaction that committed (or is committing) in (sts, cts) wrote a key this one wrote;
   with the C module steps 2 and 3 are one statement when no earlier commit was in flight while the record was
   written (``publish_and_certify``), so COMMIT is the flush plus 4 statements;
4. ``decide_and_record``: the outcome is durable when this returns - the commit point if it committed;
5. ``finish``: settle, wait (bounded) until visible in commit order, end the snapshot pin.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tique.errors import (
    CommitOutcomeUnknown,
    DatabaseError,
    OperationalError,
    SerializationFailure,
    connection_lost,
)
from tique.outcomes import settle_failed, waiting
from tique.rewrite.template import SLOT_PREFIX, Template

if TYPE_CHECKING:
    from tique.transaction import Transaction


@dataclass(frozen=True)
class CommitResult:
    committed: bool
    cts: int | None
    visible: bool = True  # False: committed, but an earlier commit still held it back when COMMIT returned


# Called at each step of COMMIT with (step, transaction): "sent" (the last rows and the record, before their zero
# signs are checked), "recorded", "published", "decided", "advanced".
# Tests pause or kill a committer here to force every interleaving of the protocol.
step_hooks: list[Callable[[str, Transaction], None]] = []


def commit(t: Transaction) -> CommitResult:
    """Run the commit protocol for ``t``. What the caller sees:

    - before the commit point (the committed outcome recorded): SerializationFailure when the transaction lost
      (nothing of it is visible, it is safe to retry), another error when a step failed (the record is settled
      as aborted), or CommitOutcomeUnknown when the connection was lost while the outcome was being written;
    - after it, success: the commit is durable. If earlier commits still hold it back after advance_timeout_ms,
      COMMIT returns anyway with ``visible=False``: other sessions see it once those finish (or are settled after
      the lease), and this session's next transaction waits for it. Something other than an engine error failing
      after that point (a bug, a step hook) raises CommitOutcomeUnknown naming the commit; an interrupt
      (KeyboardInterrupt) propagates as it is. Either way ``committed_cts`` is set, and the connection counts
      the commit as done.
    """
    t.check_usable()
    if t.read_only:
        check_read_only(t)
        return CommitResult(True, None)  # read-only transactions write no metadata
    hashes = t.record_set()
    seq, conn, s = t.db.sequencer, t.conn, t.settings
    # 1. one statement, which fails whole: no record to settle (a timestamp it took is abandoned after the
    # lease). On a nearly full disk the C module refuses it (StorageFull): no commit is acknowledged that the
    # engine's log cannot keep. With the C module it goes in one engine transaction with the last Cache rows.
    record = seq.record_sql(t.txid, t.sts, hashes, t.written_table_ids())
    zeros = t.flush(then=record)
    cts = None
    if record is None:
        try:
            cts = seq.record(conn, t.txid, t.sts, hashes)
        except DatabaseError as exc:
            full = t._storage_full(exc)
            if full is None:
                raise
            raise full from exc
    deciding = False
    try:
        _step("sent", t)
        t.zero_signs_checked(zeros)  # the rows went with the record: a failure here settles it
        _step("recorded", t)
        if seq.publishes_in_certification and not t.priority and not s.unsafe_skip_certification:
            cts, ok = publish_and_certify(t)  # steps 2 and 3, in one statement unless an earlier commit is in flight
        else:
            # 2. from here every later committer's certification sees this record; wait for earlier ones
            cts = waiting(conn, lambda: seq.publish_record(conn, t.txid, cts, s.publish_timeout_ms), seq.restricted)
            _step("published", t)
            # 3. read-only: this statement starts after every earlier record is visible. (A statement that writes
            # must not also filter tables others append to: MonetDB aborts it on a conflict.)
            ok = s.unsafe_skip_certification or certify(t, cts)
        # 4. once this returns, a committed outcome is durable. The C module keeps the verdict: if the statement
        # never commits (its client died, the engine failed it after decide ran), a waiter writes the same outcome
        deciding = True
        seq.decide_and_record(conn, t.txid, cts, ok)
    except BaseException as exc:
        if isinstance(exc, OperationalError) and connection_lost(exc):
            raise CommitOutcomeUnknown(
                f"the connection was lost during COMMIT of transaction {t.txid}: its outcome is unknown until "
                "recovery settles it; reconnect and check before running it again"
            ) from exc
        # An error before step 4 means no outcome exists: abort now, or later committers wait for the lease.
        # Step 4 failing may have run decide: then the decided outcome is the only one anybody may record.
        # (An interrupt during step 4 is left to the waiters and recovery.)
        settled = settle_failed(conn, seq, t.txid, cts) if isinstance(exc, Exception) or not deciding else None
        if settled is True and cts is not None:
            t.committed_cts = cts  # decided committed, and that outcome is recorded now
            return CommitResult(True, cts, _become_visible(t, cts, True))
        full = t._storage_full(exc) if isinstance(exc, DatabaseError) else None
        if full is not None:
            raise full from exc  # a failed write for want of space is no conflict to retry
        raise
    if ok:
        t.committed_cts = cts  # the commit point
    visible = _become_visible(t, cts, ok)
    if not ok:
        raise SerializationFailure(_failure_message(t))
    return CommitResult(True, cts, visible)


def _become_visible(t: Transaction, cts: int, ok: bool) -> bool:
    """Step 5: settle ``cts`` and (if committed) wait until it is visible, in commit order. The outcome is
    recorded, so nothing here may turn into a failure of the commit: an engine error or time-out means the commit
    is not visible yet (False); the next waiter, or this session's next begin, settles it."""
    seq, conn, timeout = t.db.sequencer, t.conn, t.settings.advance_timeout_ms if ok else 0
    try:
        _step("decided", t)
        waiting(conn, lambda: seq.finish(conn, t.txid, cts, timeout), seq.restricted)
        _step("advanced", t)
        return True
    except DatabaseError as exc:
        if not connection_lost(exc):
            _settle_late(t, cts)
        return False
    except Exception as exc:
        if not ok:
            raise
        _settle_late(t, cts)
        raise CommitOutcomeUnknown(
            f"transaction {t.txid} reached its commit point (its committed outcome, commit {cts}, is recorded and "
            f"durable), but COMMIT then failed: {exc!r}. Treat it as committed; do not run it again"
        ) from exc


def _settle_late(t: Transaction, cts: int) -> None:
    """Settle a recorded outcome without waiting and end the snapshot pin (best effort: a waiter or the next
    begin settles it otherwise)."""
    try:
        t.db.sequencer.finish(t.conn, t.txid, cts, 0)
    except DatabaseError:
        pass


def _failure_message(t: Transaction) -> str:
    if t.ddl_conflict:
        return (
            f"could not serialize: a table this transaction read or wrote was dropped, altered or re-created by DDL "
            f"(DROP TABLE / ALTER TABLE), or bulk-loaded, in another session while it ran; transaction {t.txid} was "
            "rolled back: run it again (it will use the table as it is now)"
        )
    return (
        f"could not serialize: a concurrent transaction committed first a write to a row this transaction wrote "
        f"(first committer wins); transaction {t.txid} was rolled back and is safe to retry"
    )


def publish_and_certify(t: Transaction) -> tuple[int, bool]:
    """Steps 2 and 3 as one read-only statement: the C module publishes the commit timestamp txid took
    (the record is committed: this statement started after it) and certifies. That certification stands when
    every earlier timestamp was published while the record was being written (the C module notes it): their
    records were committed before this statement started, so its snapshot holds them all. Otherwise (an earlier
    commit was still in flight) wait for them as publish does and certify again. (cts, committed)."""
    seq, conn = t.db.sequencer, t.conn
    values = {"txid": str(t.txid), "sts": str(t.sts), "now": _now_ms()}
    rows = conn.run(_publish_and_certify_template(t), values).rows
    head = next(int(r[1]) for r in rows if int(r[0]) == 0)
    cts = abs(head)
    if head < 0:
        waiting(conn, lambda: seq.await_published(conn, cts, t.settings.publish_timeout_ms), seq.restricted)
        _step("published", t)
        return cts, certify(t, cts)
    _step("published", t)
    return cts, certify(t, cts, [int(r[1]) for r in rows if int(r[0]) == 1])


def _publish_and_certify_template(t: Transaction) -> Template:
    """publish_and_certify's statement with slots for txid, sts and the time: the same text for every transaction
    over the same tables (no foreign-key entries or DDL of its own), so the session prepares it once."""
    txid, sts, now = (f"CAST(:{SLOT_PREFIX}{name} AS BIGINT)" for name in ("txid", "sts", "now"))
    if t.buffer.refs or t.buffer.probes or t.own_ddl:  # values of this transaction only: no text worth preparing
        txid, sts, now = str(t.txid), str(t.sts), _now_ms()
    own = t.db.sequencer.publish_own_sql(txid)  # the engine may evaluate it once per use: it is idempotent
    conflicts = _conflicts(t, f"ABS({own})", sts, txid, now)
    return Template.from_sql(f"SELECT 0, {own} UNION ALL SELECT 1, k.c FROM ({conflicts}) AS k(c)")


def _now_ms() -> str:
    return str(int(time.time() * 1000))


def certify(t: Transaction, cts: int, conflicts: list[int] | None = None) -> bool:
    """Step 3: True when no conflicting transaction committed (or is committing) in (sts, cts). A conflicting
    one stuck before deciding for longer than the lease (its client died after publishing) is expired, then the
    check runs again: it will never commit. ``conflicts``: the first check's result, when already read."""
    if t.priority:  # every earlier commit decided: only real commits count against it
        t.lease.await_sts(cts - 1, "an earlier commit")
    while True:
        if conflicts is None:
            conflicts = [int(r[0]) for r in t.conn.execute(conflicts_sql(t, cts)).rows]
        if -2 in conflicts:
            t.ddl_conflict = True
            return False  # a table it used was dropped meanwhile
        if -1 in conflicts:
            return False  # a key reserved by a priority transaction
        if not conflicts:
            return True
        if not t.db.sequencer.expire(t.conn, conflicts):
            return False
        conflicts = None


def conflicts_sql(t: Transaction, cts: int | str) -> str:
    """Write-write conflicts: transactions that committed (or are committing) in (sts, cts) and wrote a key this
    one wrote. Aborted ones do not count; undecided ones do (as in the paper: status T or C). Then -1 for a key a
    priority transaction reserved, and -2 for a DDL (its schema hash) on a table this one read or wrote,
    committed in (sts, cts): a read-set check, ordinary transactions never write schema hashes. ``cts``: the
    timestamp, or a SQL expression computing it."""
    return _conflicts(t, str(cts), str(t.sts), str(t.txid), _now_ms())


def _conflicts(t: Transaction, cts: str, sts: str, txid: str, now_ms: str) -> str:
    """conflicts_sql with the values given as SQL text (literals, or a prepared statement's slots)."""
    live = t.db.sequencer.live_sql
    aborted = f"SELECT txid FROM tique.outcomes WHERE NOT ok AND cts > {sts} AND cts < {cts}"
    records = _ddl_records(t, sts, aborted, f"AND d.cts < {cts} {live('d.cts')} ")
    ddl = f"UNION ALL SELECT -2 {records}" if records else ""
    mine = f"SELECT h FROM tique.commits WHERE txid = {txid}"
    if t.buffer.refs:  # references conflict with probes only: children of one parent do not conflict
        mine += f" AND h NOT IN ({', '.join(str(h) for h in sorted(t.buffer.refs))})"
    if t.buffer.probes:
        mine += " UNION ALL SELECT h FROM (VALUES " + ", ".join(f"({h})" for h in sorted(t.buffer.probes))
        mine += ") AS tq_p(h)"
    return (
        f"SELECT DISTINCT o.cts FROM tique.commits AS o WHERE o.cts > {sts} AND o.cts < {cts} "
        f"AND o.h IN ({mine}) {live('o.cts')} AND o.txid NOT IN ({aborted}) "
        f"UNION ALL SELECT -1 FROM tique.reservations AS r WHERE r.txid <> {txid} "
        f"AND r.until_ms > {now_ms} AND r.txid NOT IN (SELECT txid FROM tique.outcomes) "
        f"AND r.h IN (SELECT h FROM tique.commits WHERE txid = {txid}) {ddl}"
    )


def _ddl_records(t: Transaction, sts: str, aborted: str, bounds: str = "") -> str:
    """``FROM ... WHERE``: the commit records of DDL (catalog.schema_hash) of a table ``t`` read or wrote, committed
    after ``sts`` (``bounds``: more conditions on them, each beginning with AND), other than its own session's and
    those ``aborted`` (a query of their ids) lists; "" when it used no table."""
    schema = ", ".join(str(h) for h in t.schema_hashes())
    if not schema:
        return ""
    own = "".join(f"AND d.txid <> {x} " for x in sorted(t.own_ddl))
    return (
        f"FROM tique.commits AS d WHERE d.cts > {sts} {bounds}AND d.h IN ({schema}) {own}AND d.txid NOT IN ({aborted})"
    )


def check_read_only(t: Transaction) -> None:
    """COMMIT of a read-only transaction, which writes no record, so certification's check that fails a writer
    overlapping a DDL of a table it read (conflicts_sql's -2) does not run: another session's RENAME COLUMN swap,
    DROP and ADD COLUMN, or DROP and CREATE of a table it read, between two of its statements, made the later ones
    read the new table (a row read as (1, 10, 100) came back as (1, 100, 10); found by a review). Such a
    transaction fails as a writer would (SerializationFailure). Costs a statement for a transaction that read
    tables in two statements or more, and one more when some DDL committed since it began."""
    seen = t.lease.catalog_at_begin
    if t.reads_run < 2 or seen is None or not t.read_names or t.db.sequencer.catalog_version(t.conn) == seen:
        return
    sts = str(t.sts)
    records = _ddl_records(t, sts, f"SELECT txid FROM tique.outcomes WHERE NOT ok AND cts > {sts}")
    if records and t.conn.execute(f"SELECT COUNT(*) {records}").scalar():
        raise SerializationFailure(
            "another session changed a table this read-only transaction read (DROP, ALTER or RENAME) after it "
            "began, so its later statements may have read the changed table: nothing was changed, run it again"
        )


def _step(name: str, t: Transaction) -> None:
    for hook in step_hooks:
        hook(name, t)
