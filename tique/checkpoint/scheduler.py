"""When the checkpointer runs: every interval, sooner when a Cache table grows, as a loop or a background thread."""

from __future__ import annotations

import atexit
import contextlib
import math
import os
import random
import threading
import time
from collections.abc import Callable

from tique.catalog import Catalog
from tique.checkpoint.algorithm import Checkpointer, CheckpointerBusy, CheckpointReport
from tique.database import Database
from tique.engine.base import RawConnection
from tique.errors import DatabaseError, connection_lost
from tique.settings import CHECKPOINT_INTERVAL_S


class BackgroundCheckpointer:
    """The checkpointer as a thread of the process that holds the engine (an embedded database allows one
    process). Runs every ``interval_s`` or sooner when a Cache table holds more than ``max_cache_rows``."""

    def __init__(
        self,
        connect: Callable[[], RawConnection],
        interval_s: float,
        max_cache_rows: int | None = None,
        on_report: Callable[[CheckpointReport], None] | None = None,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        self._connect = connect
        self.interval_s = interval_s
        self.max_cache_rows = max_cache_rows
        self.on_report = on_report
        self.on_error = on_error
        self.reports: list[CheckpointReport] = []  # the last 100
        self.totals = {"runs": 0, "moved": 0, "cleaned": 0, "conflicts": 0, "busy_s": 0.0, "restarts": 0}
        self.errors: list[str] = []  # the last 100 the loop stopped on
        # One lock owner for every start of the loop: a loop that stopped holding the lock (its connection lost
        # after a renewal) leaves it taken for a lease, which a new owner would wait out, told "another checkpointer"
        self.owner = os.getpid() << 20 | random.getrandbits(20)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="tique-checkpointer", daemon=True)

    def start(self) -> BackgroundCheckpointer:
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _loop(self) -> None:
        """The loop, started again on a new connection after whatever stopped it (another checkpointer holding
        the lock, an error outside a run, a bug): a checkpointer that stops for good lets the Cache tables and
        the metadata grow without bound while nothing says so. Each stop is reported; the wait before the next
        start doubles up to a minute (and starts over after a minute without a stop)."""
        wait = self.interval_s
        while not self._stop.is_set():
            began = time.monotonic()
            try:
                conn = self._connect()
            except Exception as exc:
                self._stopped_on(exc, wait)
            else:
                try:
                    ckpt = Checkpointer(conn, owner=self.owner)
                    run_loop(ckpt, self.interval_s, self.max_cache_rows, self._stop, self._record)
                    ckpt.release()
                    return
                except Exception as exc:
                    self._stopped_on(exc, wait)
                finally:
                    with contextlib.suppress(Exception):
                        conn.close()
            if self._stop.wait(wait):
                return
            wait = self.interval_s if time.monotonic() - began > 60 else min(wait * 2, 60.0)
            self.totals["restarts"] += 1

    def _stopped_on(self, exc: Exception, wait: float) -> None:
        message = f"{type(exc).__name__}: {exc}"
        self.errors.append(message)
        del self.errors[:-100]
        if self.on_error and not self._stop.is_set():
            self.on_error(f"{message}; starting again in {wait:g} s")

    def _record(self, report: CheckpointReport) -> None:
        for name, value in (
            ("runs", 1),
            ("moved", report.moved),
            ("cleaned", report.cleaned),
            ("conflicts", report.conflicts),
            ("busy_s", report.duration_s),
        ):
            self.totals[name] += value
        self.reports.append(report)
        del self.reports[:-100]
        if self.on_report:
            self.on_report(report)


def _over_limit(conn: RawConnection, catalog: Catalog, limit: int) -> bool:
    return any(
        int(conn.execute(f"SELECT COUNT(*) FROM {info.cache}").scalar()) > limit
        for info in catalog.all()
        if info.kind == "tx"
    )


def _last_cts(conn: RawConnection) -> int:
    """The last commit timestamp handed out (the C module's counter): one read-only statement."""
    return int(conn.execute("SELECT tique.last_cts()").scalar() or 0)


def _counter_after_run(conn: RawConnection, before: int) -> int:
    """The counter the next poll compares with: as the run ended, not as it began (a run takes a second or more at
    scale, and commits during it would hide a burst's end for one more poll). A failed read is not the run's
    failure: ``before`` then, as it was."""
    try:
        return _last_cts(conn)
    except DatabaseError as exc:
        if connection_lost(exc):
            raise
        return before


def run_loop(
    ckpt: Checkpointer,
    interval_s: float,
    max_cache_rows: int | None,
    stop: threading.Event,
    on_report: Callable[[CheckpointReport], None],
) -> None:
    """Checkpoint every ``interval_s`` (sooner when a Cache table outgrows ``max_cache_rows``, or when writers
    went quiet: see below) until ``stop``. A failed run is reported and retried at the next tick; a lost
    connection, or another checkpointer holding the lock (CheckpointerBusy: the CLI then exits 2, or waits with
    --wait), ends the loop.

    Writers quiet: when commits came after the last run began but none in the last poll, the run starts then
    rather than at the next interval. Versions left in the Cache make every analytical read of their tables pay
    for the union with the Cache (CH-benCHmark's Q5 after a burst of TPC-C: 490 ms with 12k versions left, 100 ms
    once moved); under a steady write load commits come every poll and the interval decides, as before. An idle
    database sees no run (no commit since the last one)."""
    last = -math.inf  # the first run at once (monotonic time starts near 0 at boot: 0.0 was "a run at boot")
    poll = min(interval_s, 0.5)
    seen: int | None = None  # the last commit timestamp at the previous poll
    ran_after: int | None = None  # ... when the last run began
    while not stop.is_set():
        try:
            ckpt.acquire()  # held (renewed) for as long as the loop runs: a second checkpointer is told so
            due = time.monotonic() - last >= interval_s
            if not due and max_cache_rows is not None:
                due = _over_limit(ckpt.conn, ckpt.catalog, max_cache_rows)
            now = _last_cts(ckpt.conn)
            if not due:
                due = now == seen and ran_after is not None and now != ran_after
            seen = now
            if due:
                last = time.monotonic()
                ran_after = now
                on_report(ckpt.run_once(release=False))
                seen = _counter_after_run(ckpt.conn, now)
        except CheckpointerBusy:
            raise
        except DatabaseError as exc:
            if connection_lost(exc):
                raise
            on_report(CheckpointReport(time.time(), 0.0, 0, 0, 0, 0, errors=[str(exc)]))
        stop.wait(poll)


_background: dict[int, BackgroundCheckpointer] = {}


def start_background(
    url: str, interval_s: float = CHECKPOINT_INTERVAL_S, max_cache_rows: int | None = 100_000, verbose: bool = False
) -> BackgroundCheckpointer:
    """Run the checkpointer as a thread of this process, on the database ``url`` as tique.connect opens it
    (the way to checkpoint an embedded database that this process holds). One per database; stopped at exit."""
    db = Database.get(url)
    existing = _background.get(id(db))
    if existing is not None and existing._thread.is_alive():
        return existing
    on_report = (lambda r: print(r.line(), flush=True)) if verbose else None
    worker = BackgroundCheckpointer(db.connect_raw, interval_s, max_cache_rows, on_report).start()
    _background[id(db)] = worker
    db.on_close.append(worker.stop)
    atexit.register(worker.stop)  # before the engine's own exit handler closes the kernel under it
    return worker
