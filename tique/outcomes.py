"""Outcome records written for a commit its owner could not finish.

A commit's outcome row in ``tique.outcomes`` is normally written by its owner (step 4 of the commit protocol,
in the same statement as ``tique.decide``). When that statement never commits - the client died, the engine
failed it after decide ran - the commit stays DECIDING in the C module and holds back every later one. The C
module keeps the decided verdict and the owner's id, so any session can write that same outcome and settle the
commit. Two copies of one outcome are harmless (every reader ranks versions per key); two different outcomes
must never exist, so every writer here uses the verdict when there is one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from tique.engine.base import RawConnection
from tique.errors import CommitStuck, DatabaseError, stuck_commit
from tique.sequencer import CSequencer, Sequencer

T = TypeVar("T")


def waiting(conn: RawConnection, call: Callable[[], T], restricted: bool = False) -> T:
    """Run a waiting sequencer call; when it returns early behind a predecessor stuck DECIDING (its client died,
    or its outcome statement never committed), settle that one with its decided outcome and wait again.
    ``restricted``: as in settle_if_decided."""
    while True:
        try:
            return call()
        except CommitStuck as exc:
            stuck = stuck_commit(exc)
            if stuck is None or not settle_if_decided(conn, stuck, restricted):
                raise


def settle_if_decided(conn: RawConnection, cts: int, restricted: bool = False) -> bool:
    """Settle a commit stuck DECIDING whose client never advanced it: write the outcome its owner decided (the
    C module's verdict) unless one is recorded, then advance it. True if settled. A second copy of the same
    outcome (the owner's statement committing after all) is harmless: every reader ranks versions per key.
    ``restricted``: an ordinary user, who writes outcomes only through the protocol procedures (privileges.py)."""
    cts = int(cts)
    verdict, txid = (int(v) for v in conn.execute(f"SELECT tique.verdict({cts}), tique.owner({cts})").rows[0])
    if verdict < 0 or not txid:
        return False  # not decided in this engine: its owner is still before decide, or recovery settles it
    if not conn.execute(f"SELECT COUNT(*) FROM tique.outcomes WHERE txid = {txid}").scalar():
        if restricted:
            conn.execute(f"CALL tique.settle_outcome({cts})")
        else:
            conn.execute(f"INSERT INTO tique.outcomes VALUES ({txid}, {cts}, {'TRUE' if verdict else 'FALSE'})")
    conn.execute(f"SELECT {'tique.advance_settled' if restricted else 'tique.advance'}({cts}, 0)")
    return True


def record_outcome(conn: RawConnection, sequencer: Sequencer | None, txid: int, cts: int) -> bool:
    """Record the outcome of txid's commit ``cts`` that its owner could not finish, and settle it (advance, when
    ``sequencer`` is given): the verdict decide left in the C module if decide ran (another session may write
    that outcome too: never a different one), else aborted. Returns the outcome recorded."""
    c_module = sequencer is None or isinstance(sequencer, CSequencer)
    if isinstance(sequencer, CSequencer) and sequencer.restricted:
        # an ordinary user: the procedure decides it aborted unless decided, and records the verdict
        conn.execute(f"CALL tique.close_outcome({int(txid)}, {int(cts)})")
        ok = int(conn.execute(f"SELECT tique.verdict({int(cts)})").scalar()) == 1
        sequencer.advance(conn, cts, 0)
        return ok
    ok = c_module and int(conn.execute(f"SELECT tique.verdict({int(cts)})").scalar()) == 1
    conn.execute(f"INSERT INTO tique.outcomes VALUES ({int(txid)}, {int(cts)}, {'TRUE' if ok else 'FALSE'})")
    if sequencer is not None:
        sequencer.advance(conn, cts, 0)
    return ok


def settle_failed(conn: RawConnection, sequencer: Sequencer, txid: int, cts: int | None) -> bool | None:
    """Settle a commit (a transaction's or a DDL's) that failed after its record was written: record_outcome,
    the record's timestamp looked up when the failing step never returned it. The outcome recorded, or None if
    none could be (recovery settles it; the caller reports the original error)."""
    try:
        if cts is None:
            found = conn.execute(f"SELECT MAX(cts) FROM tique.commits WHERE txid = {int(txid)}").scalar()
            if found is None:
                return None
            cts = int(found)
        return record_outcome(conn, sequencer, txid, cts)
    except DatabaseError:
        return None
