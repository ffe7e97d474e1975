"""Two checkpointers at once. The lock's lease (10 s) was renewed only between batches and tables, and a run never
checked that it still held the lock before it wrote: a run that stalled past its lease (a long read of a large
Cache, a paused process) let a second checkpointer (`tique checkpoint --wait`, a scheduled `--once` beside
`tique serve --checkpoint-interval`) take the lock and run, and then wrote what it had read before. A version it
read replaced in Storage a newer one the other run had moved and cleaned from the Cache: a committed update lost
(found by a review). Every write of a run is now fenced by the lock's epoch (tique.ckpt_fence): the stalled run
stops with CheckpointLockLost, having written nothing. The stall is simulated with the step hook and a short lease
(300 ms).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

import tique
from tests.conftest import ServeProcess
from tique.checkpoint import Checkpointer
from tique.engine import RawConnection
from tique.errors import CheckpointLockLost


def _value(url: str, table: str) -> list[tuple[object, ...]]:
    conn = tique.connect(url)
    cur = conn.cursor()
    cur.execute(f"SELECT k, v FROM {table} ORDER BY k")
    rows = cur.fetchall()
    conn.close()
    return rows


@pytest.mark.parametrize("stall", ["read", "wrote"])
def test_a_checkpointer_past_its_lease_does_not_write_a_stale_version(
    served: ServeProcess, raws: Callable[[], RawConnection], unique_name, stall: str
) -> None:
    table = unique_name("lease_kv")
    conn = tique.connect(served.url)
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {table} (k INT PRIMARY KEY, v INT)")
    conn.commit()
    cur.execute(f"INSERT INTO {table} VALUES (1, 1)")
    conn.commit()
    conn.close()

    paused, resume = threading.Event(), threading.Event()
    outcome: list[object] = []

    def hook(step: str) -> None:
        if step == stall and not paused.is_set():  # A read the Cache's (1, 1) and now stalls in a long step
            paused.set()
            resume.wait(30)

    a = Checkpointer(raws(), lock_lease_ms=300, step_hook=hook)

    def run_a() -> None:
        try:
            outcome.append(a.run_once())
        except Exception as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run_a)
    thread.start()
    assert paused.wait(30)
    time.sleep(0.6)  # past A's lease
    b = Checkpointer(raws(), lock_lease_ms=300)
    b.run_once()  # the lock looks free: B moves (1, 1) and cleans the Cache
    writer = tique.connect(served.url)
    writer.cursor().execute(f"UPDATE {table} SET v = 2 WHERE k = 1")
    writer.commit()
    writer.close()
    b.run_once()  # B moves (1, 2) and cleans the Cache
    assert _value(served.url, table) == [(1, 2)]
    resume.set()
    thread.join(60)
    assert _value(served.url, table) == [(1, 2)], f"A's outcome: {outcome}"  # it was [(1, 1)]
    assert len(outcome) == 1 and isinstance(outcome[0], CheckpointLockLost), outcome
    b.release()
    again = Checkpointer(raws(), lock_lease_ms=300).run_once()  # the next run starts afresh and finds all moved
    assert not again.errors and _value(served.url, table) == [(1, 2)]


def test_the_lock_epoch_changes_with_the_lock_s_hands(served: ServeProcess, raws: Callable[[], RawConnection]) -> None:
    """ckpt_lock answers the lock's epoch while its holder keeps it (renewed, even past its lease when nobody took
    it), a new one whenever it changes hands (released and taken again included), and minus the holder to
    others; ckpt_fence renews it for its holder at that epoch only."""
    raw = raws()
    one, two = 7 << 20, 9 << 20
    lock = lambda owner, lease: int(raw.execute(f"SELECT tique.ckpt_lock({owner}, {lease})").scalar())  # noqa: E731
    first = lock(one, 200)
    assert first > 0 and lock(one, 200) == first
    assert lock(two, 200) == -one
    assert int(raw.execute(f"SELECT tique.ckpt_fence({one}, {first}, 200)").scalar()) == 1
    time.sleep(0.3)  # past the lease, nobody took it: still the holder's, at its epoch
    assert lock(one, 200) == first
    time.sleep(0.3)
    second = lock(two, 10_000)  # taken over
    assert second > first
    with pytest.raises(CheckpointLockLost, match="lost its lock"):
        raw.execute(f"SELECT tique.ckpt_fence({one}, {first}, 200)")
    raw.execute(f"SELECT tique.ckpt_release({two})")
    third = lock(one, 200)  # the same owner again, after another held it: a new epoch, so its old run stays fenced
    assert third > second
    with pytest.raises(CheckpointLockLost):
        raw.execute(f"SELECT tique.ckpt_fence({one}, {first}, 200)")
    raw.execute(f"SELECT tique.ckpt_release({one})")
