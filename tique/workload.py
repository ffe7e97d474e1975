"""Analytical reads yield to transactions while they write (workload management for HTAP, on by default).

MonetDB runs an analytical query's operators on every core, so on a machine with few cores the transactions
beside it wait for the CPU. While other connections are writing, an analytical read (a scan or
aggregate, never a point read) of a connection that is not writing itself therefore

- takes a turn: one such read at a time per database in this process;
- runs on MonetDB's sequential pipeline (every operator on the calling thread, no worker threads) and, embedded,
  on this process's one low-priority thread (nice 19 on Linux), so a transaction that wants a core gets it;
- rests after it ran for ``analytical_rest`` times as long: the next yielding read waits for the rest to end (its
  result is not held back), so with 1.0 (embedded) analytical reads run at most half of the time; over MAPI the
  default is 3.0, the server's threads running the reads at their usual priority (Connection.rest_factor).

Measured at TPC-C scale 1.0 on 2 cores, 4 transactional clients beside 2 analytical ones, each run between two
runs without them: the transactions lost 38-44% with analytical reads on one MonetDB worker thread (the earlier
way), 23-29% on the low-priority thread, 13-17% with the rest as well; the analytical clients ran 178-216, 109-128
and 54-57 queries a minute. With no writer about, analytical reads run as they would without tique: on every core,
all at once.

"Other connections are writing" is known without asking the engine: a commit with writes by another connection of
this process in the last WRITERS_WINDOW_S seconds, or a snapshot that moved between two begins of this process
beyond what its own connections committed (another process committed writes; read-only commits take no
timestamp and the checkpointer takes none). A connection that committed writes itself in the last
OWN_WINDOW_S seconds is a transactional one and never yields: the reads inside transactional work (TPC-C's
StockLevel) do not wait behind reports.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from tique.engine.worker import Worker

WRITERS_WINDOW_S = 1.0  # writes this recent mean the transactions are running now
OWN_WINDOW_S = 10.0  # a connection that wrote this recently is transactional: it does not yield
ANOTHER_PROCESS = 0  # the writer key of commits seen only as a moved snapshot
LOW_PRIORITY_NICE = 19  # the yielding reads' thread: it gets a core only when no transaction wants one

T = TypeVar("T")


class Workload:
    """Who wrote recently, per database and process, and the turn analytical reads take while someone does."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen_sts: int | None = None  # the newest commit this process knows of (its own, or seen at a begin)
        self._writers: dict[int, float] = {}  # connection key (or ANOTHER_PROCESS) -> its last write commit
        self.turn = threading.Lock()  # a C lock: an interrupt cannot leave it half taken (a semaphore's Python can)
        self.rested_at = 0.0  # (monotonic) when the last yielding read's rest ends: the next one waits for it

    def began(self, sts: int) -> None:
        """A transaction of this process began at ``sts``: newer than every commit seen, someone else committed
        (the first begin only tells where the snapshot is)."""
        seen = self._seen_sts
        if seen is not None and sts <= seen:  # read without the lock: the common case, a snapshot that did not move
            return
        with self._lock:
            if self._seen_sts is None:
                self._seen_sts = sts
            elif sts > self._seen_sts:
                self._seen_sts = sts
                self._writers[ANOTHER_PROCESS] = time.monotonic()

    def committed(self, who: int, cts: int) -> None:
        """Connection ``who`` committed writes at ``cts``."""
        with self._lock:
            self._seen_sts = max(self._seen_sts or 0, cts)
            self._writers[who] = time.monotonic()

    def should_yield(self, who: int) -> bool:
        """Whether an analytical read of connection ``who`` should yield now: another connection or process wrote
        in the last WRITERS_WINDOW_S and ``who`` did not write in the last OWN_WINDOW_S."""
        now = time.monotonic()
        with self._lock:
            if now - self._writers.get(who, -OWN_WINDOW_S) < OWN_WINDOW_S:
                return False
            for key, at in list(self._writers.items()):
                if now - at >= OWN_WINDOW_S:
                    del self._writers[key]  # forgotten: the map stays as small as the writing connections
                elif key != who and now - at < WRITERS_WINDOW_S:
                    return True
            return False

    def forget(self, who: int) -> None:
        """A closed connection: its key may be reused by a new one."""
        with self._lock:
            self._writers.pop(who, None)


class LowPriorityThread:
    """One thread that runs calls at the lowest CPU priority, one at a time (the turn lets one through anyway).

    Linux schedules threads one by one, and a thread may always lower its own priority but, unprivileged, never
    raise it back: so the yielding reads run on a thread that stays low, not on the caller's. Elsewhere the
    thread runs at the process's priority. The thread is a Worker (engine/worker.py), lowered by its first call:
    a Worker's caller, interrupted, waits for its call's end (a second interrupt stops the wait) and no interrupt
    can leave its queue or the thread stuck, which a Condition and a job slot of this class's own could."""

    def __init__(self) -> None:
        self.nice: int | None = None  # the thread's nice value (None: not known or not Linux)
        self._worker = Worker("tique-low-priority")
        self._worker.call(self._lower)

    def call(self, fn: Callable[[], T]) -> T:
        """``fn()`` on the thread; its result, or its exception raised here. An interrupted caller waits until ``fn``
        has returned (a second interrupt stops the wait, as Worker.call says): the session ``fn`` uses is not used
        by two threads at once."""
        return self._worker.call(fn)  # type: ignore[no-any-return]

    def _lower(self) -> None:
        if sys.platform.startswith("linux"):  # elsewhere PRIO_PROCESS with a thread id is not per thread
            try:
                tid = threading.get_native_id()
                os.setpriority(os.PRIO_PROCESS, tid, LOW_PRIORITY_NICE)
                self.nice = os.getpriority(os.PRIO_PROCESS, tid)
            except OSError:
                pass
