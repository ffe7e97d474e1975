"""Recovery, when an engine opens a database (section 2.4.2 of the paper).

1. Every transaction with a commit record but no outcome did not finish COMMIT: it gets an aborted outcome.
   (A transaction whose committed outcome was written before the crash stays committed.)
2. The counters restart past everything recorded: transaction ids past any id in the metadata or in a
   Cache table (provisional rows of unfinished transactions must never look like a new transaction's own;
   hidden row ids derive from transaction ids, so the ids a keyless table's Storage holds count too: a bulk
   load's transaction id is recorded nowhere else) or table id (ids come from the same counter and are never
   reused), commit timestamps past the last one recorded. The checkpointer logs both high-water marks before
   it deletes anything, so a crash at any of its steps leaves them recorded; the snapshot moves to that
   timestamp, so every committed transaction is visible.
"""

from __future__ import annotations

from dataclasses import dataclass

from tique.catalog import ROWID_BITS, read_tables
from tique.engine.base import RawConnection
from tique.sequencer import Sequencer


@dataclass(frozen=True)
class RecoveryReport:
    aborted: int
    last_txid: int
    last_cts: int


def recover(conn: RawConnection, sequencer: Sequencer) -> RecoveryReport:
    unfinished = int(
        conn.execute(
            "SELECT COUNT(DISTINCT txid) FROM tique.commits WHERE txid NOT IN (SELECT txid FROM tique.outcomes)"
        ).scalar()
    )
    if unfinished:
        conn.execute(
            "INSERT INTO tique.outcomes SELECT txid, MAX(cts), FALSE FROM tique.commits "
            "WHERE txid NOT IN (SELECT txid FROM tique.outcomes) GROUP BY txid"
        )
    caches, keyless = _caches(conn)
    txid_sources = [
        "SELECT MAX(txid) AS m FROM tique.commits",
        "SELECT MAX(txid) AS m FROM tique.outcomes",
        "SELECT MAX(txid) AS m FROM tique.reservations",  # a priority retry that died before its commit record
        "SELECT MAX(last_txid) AS m FROM tique.checkpoints",  # ids of trimmed metadata: logged before any trim
        "SELECT MAX(CAST(table_id AS BIGINT)) AS m FROM tique.tables",  # a table's id is its DDL's txid
    ]
    txid_sources += [f"SELECT MAX(tq_txid) AS m FROM {c}" for c in caches]
    # a keyless table's hidden row ids carry the txid that numbered them: (txid << 24) | n for a transaction's
    # rows, the negative of it for a bulk load's, whose txid is recorded nowhere else (bulk_load._rowids)
    txid_sources += [f"SELECT MAX(ABS(tq_rowid)) / {1 << ROWID_BITS} AS m FROM {t}" for t in keyless]
    row = conn.execute(
        f"SELECT (SELECT MAX(m) FROM ({' UNION ALL '.join(txid_sources)}) AS x), "
        "(SELECT MAX(m) FROM (SELECT MAX(cts) AS m FROM tique.commits "
        "UNION ALL SELECT MAX(cts) FROM tique.outcomes UNION ALL SELECT MAX(last_cts) FROM tique.checkpoints) AS y)"
    ).rows[0]
    db_txid, db_cts = int(row[0] or 0), int(row[1] or 0)
    # Within one process the in-engine counters may already be ahead (ids burned by read-only work).
    live_txid, live_cts = sequencer.counters(conn)
    last_txid, last_cts = max(db_txid, live_txid), max(db_cts, live_cts)
    sequencer.reset(conn, last_txid, last_cts)
    return RecoveryReport(unfinished, last_txid, last_cts)


def _caches(conn: RawConnection) -> tuple[list[str], list[str]]:
    """The Cache tables of tique's transactional tables, and the Storage tables of those without a primary key
    (hidden row ids), as its catalog (tique.tables) names them - never found by a name pattern: an application's
    own table may be called anything, ``page_cache`` or ``x__cache``. A table the catalog lists but the engine
    lacks (a CREATE that died half-way) is left out."""
    present = {
        (str(s), str(t))
        for s, t in conn.execute(
            "SELECT s.name, t.name FROM sys.tables t JOIN sys.schemas s ON t.schema_id = s.id"
        ).rows
    }
    caches, keyless = [], []
    for info in read_tables(conn):
        if info.kind == "tx" and (info.physical_schema, info.cache_name) in present:
            caches.append(info.cache)
        if info.kind == "tx" and info.has_rowid and (info.physical_schema, info.storage_name) in present:
            keyless.append(info.storage)
    return caches, keyless
