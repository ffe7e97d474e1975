"""A catalog change (DROP TABLE, ALTER TABLE, a view's CREATE or DROP) as a commit of the normal protocol whose
write-set is the changed tables' schema hashes (see catalog.py for why).

In order: take a transaction id and a commit timestamp and write the record; publish; decide and write a
committed outcome; only then change the tables and tique.tables; bump the catalog version; advance. So a
transaction that overlaps the change in commit order (its snapshot before the DDL's timestamp, its own timestamp
after) finds the record when it certifies and fails, and one whose timestamp is smaller took it before the change
began, so its rows went to the old table; one whose snapshot includes the DDL began after the version bump and
plans against the refreshed catalog.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TypeVar

from tique import catalog
from tique.database import Database
from tique.engine.base import RawConnection
from tique.errors import DatabaseError, ProgrammingError, Timeout
from tique.outcomes import settle_failed, waiting
from tique.sequencer import CSequencer

T = TypeVar("T")
DDL_TIMEOUT_MS = 30000  # waits for earlier commits to publish and settle


def versioned(
    db: Database,
    conn: RawConnection,
    tables: list[tuple[str, str]],
    change: Callable[[], T],
    ids: list[int] | None = None,
) -> T:
    """Run ``change()`` as a committed catalog change of ``tables`` ((schema, name) pairs): see the module's
    docstring for the order of its steps, and catalog.py for why. The change's transaction id is appended to
    ``ids``: the session that ran it must not count it as another session's DDL against its own transaction."""
    hashes = [catalog.schema_hash(s, n) for s, n in tables]
    seq = db.sequencer
    if seq.restricted:  # before any record: a refused change must not leave a committed DDL record behind
        raise ProgrammingError(
            f"DDL on tique's tables ({', '.join(f'{s}.{n}' for s, n in tables)}) needs tique's owner, the admin "
            "(user monetdb): an ordinary user's session may not change them",
            "42000",
        )
    if isinstance(seq, CSequencer):
        # registered like a transaction's begin, so the checkpointer keeps the record until it is settled
        txid, sts = conn.execute(
            f"SELECT x.t, tique.snapshot_of(x.t) FROM (SELECT {seq.call('begin_txn', 0, DDL_TIMEOUT_MS)} AS t) AS x"
        ).rows[0]
        txid, sts = int(txid), int(sts)
    else:
        txid, sts = seq.next_txid(conn), seq.sts(conn)
    # the commit protocol's steps (tique/commit.py), with the schema hashes as the write-set; no certification:
    # DDL always commits, and a transaction that used the table meanwhile fails its own certification
    taken = seq.record(conn, txid, sts, hashes)
    if ids is not None:
        ids.append(txid)
    try:
        cts = waiting(conn, lambda: seq.publish_record(conn, txid, taken, DDL_TIMEOUT_MS))
        seq.decide_and_record(conn, txid, cts, True)
    except DatabaseError:
        settle_failed(conn, seq, txid, taken)  # aborted, unless decide ran (see tique/outcomes.py)
        if isinstance(seq, CSequencer):
            with contextlib.suppress(DatabaseError):
                conn.execute(f"SELECT {seq.call('end_txn', txid)}")
        raise
    try:
        return change()
    finally:
        try:
            seq.bump_catalog(conn)  # before the change becomes visible: a snapshot that includes it sees the bump
        finally:  # the decided commit is settled whatever failed: it must never hold later commits back
            try:
                waiting(conn, lambda: seq.finish(conn, txid, cts, DDL_TIMEOUT_MS))
            except Timeout:
                # settled; the change becomes visible once the earlier commit it waited for settles
                seq.finish(conn, txid, cts, 0)
            db.catalog.refresh(conn)
