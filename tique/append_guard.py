"""Reads of a table that overlapped an append to it, run again: MonetDB 11.41 can read strings wrongly then.

When a write grows a string column's heap, the kernel may move the heap while another session's statement reads
it; that statement then returns an empty string or another row's (benchmarks/string_race.py: a reader of two fixed
rows beside an appending writer read wrong in 5 of 10 six-second runs; a copy inside the statement, or a CAST,
does not help). The kernel gives no way to hold a heap in place, so within the process that has the embedded
database open tique keeps its reads and its own appends apart:

- an append (a commit's rows into a Cache, the checkpointer's move into Storage, a bulk load's move) counts as
  running on its tables for as long as its statement runs (``appending``);
- a read of tables with string columns notes their append counters before it runs and runs again when an append
  to one of them ran meanwhile (``reading``); after ``RERUNS`` such runs it holds appends back for one run.

Appends by other processes (MAPI clients of ``tique serve``) are not seen: over MAPI the engine's race stays.
A table's Storage and Cache are guarded apart (``storage_of``, ``cache_of``): a read by keys no Cache row has
reads Storage alone, which commits do not append to. A table without string columns needs no guard.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

RERUNS = 2
T = TypeVar("T")


def storage_of(qualified: str) -> str:
    """The guard's name for a table's Storage (a read of Storage alone is not overlapped by Cache appends)."""
    return f"{qualified}\x00storage"


def cache_of(qualified: str) -> str:
    return f"{qualified}\x00cache"


class AppendGuard:
    """Per kernel: which tables have appends running, and how many have started (see the module's docstring)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._running: Counter[str] = Counter()  # appends running per table
        self._started: Counter[str] = Counter()  # appends started per table, ever
        self._held: Counter[str] = Counter()  # readers or exclusive appends holding appends back, per table
        self.reruns = 0  # reads run again, for tests and benchmarks

    @contextmanager
    def appending(self, tables: Iterable[str]) -> Iterator[None]:
        names = sorted(set(tables))
        with self._changed:
            self._changed.wait_for(lambda: not any(self._held[t] for t in names))
            self._running.update(names)
            self._started.update(names)
        try:
            yield
        finally:
            with self._changed:
                self._running.subtract(names)
                self._changed.notify_all()

    def reading(self, tables: Iterable[str], run: Callable[[], T]) -> T:
        """``run()``, run again while an append to one of ``tables`` overlapped it."""
        names = sorted(set(tables))
        if not names:
            return run()
        for _ in range(RERUNS + 1):
            with self._changed:
                clean = not any(self._running[t] for t in names)
                before = [self._started[t] for t in names]
            result = run()
            with self._changed:
                if clean and before == [self._started[t] for t in names]:
                    return result
                self.reruns += 1
        with self._holding(names):
            return run()

    @contextmanager
    def _holding(self, names: list[str]) -> Iterator[None]:
        with self._changed:
            self._held.update(names)
        try:  # an interrupt while it waits must not leave the appends held back for good
            with self._changed:
                self._changed.wait_for(lambda: not any(self._running[t] for t in names))
            yield
        finally:
            with self._changed:
                self._held.subtract(names)
                self._changed.notify_all()


# For connections to a kernel tique does not guard (over MAPI): a guard of its own, which sees this process alone
NO_GUARD = AppendGuard()
