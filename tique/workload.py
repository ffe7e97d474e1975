"""Analytical reads yield to transactions while they write (workload management for HTAP, on by default).

MonetDB runs an analytical query's operators on every core, so on a machine with few cores the transactions
beside it wait for the CPU: at TPC-C scale 1.0 on 2 cores, 4 transactional clients lost 64% of their throughput
beside 2 analytical clients. While other connections are writing, an analytical read (a scan or aggregate, never
a point read) of a connection that is not writing itself runs on one MonetDB worker thread and takes a turn:
one such read at a time per database in this process. Measured there with both: the transactions lost nothing
within the noise and the analytical clients still ran 72 queries a minute. With no writer about, analytical
reads run as they would without tique: on every core, all at once.

"Other connections are writing" is known without asking the engine: a commit with writes by another connection of
this process in the last WRITERS_WINDOW_S seconds, or a snapshot that moved between two begins of this process
beyond what its own connections committed (another process committed writes; read-only commits take no
timestamp and the checkpointer takes none). A connection that committed writes itself in the last
OWN_WINDOW_S seconds is a transactional one and never yields: the reads inside transactional work (TPC-C's
StockLevel) do not wait behind reports.
"""

from __future__ import annotations

import threading
import time

WRITERS_WINDOW_S = 1.0  # writes this recent mean the transactions are running now
OWN_WINDOW_S = 10.0  # a connection that wrote this recently is transactional: it does not yield
ANOTHER_PROCESS = 0  # the writer key of commits seen only as a moved snapshot


class Workload:
    """Who wrote recently, per database and process, and the turn analytical reads take while someone does."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen_sts: int | None = None  # the newest commit this process knows of (its own, or seen at a begin)
        self._writers: dict[int, float] = {}  # connection key (or ANOTHER_PROCESS) -> its last write commit
        self.turn = threading.BoundedSemaphore(1)

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
