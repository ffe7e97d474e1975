"""Python's cyclic garbage collector paused while a large result's rows are built.

A result is built as a tuple per row, and Python runs its collector every 700 new container objects, walking
older generations every tenth and hundredth run: the cost grows with everything the process holds, not with the
result. Measured on CH-benCHmark's Q18 at scale 1.0 (122k rows, embedded): decoding its timestamp column took
137 ms per run, 42 ms with the collector paused. The values of a result hold no reference cycles.

Only the building is paused, which holds the GIL: not the engine's hand-over of a column nor a server's replies,
during which other threads run and may make garbage of their own (that waits for the collector while any thread
builds a large result). The collector is one per process, so the pause is counted across threads, lifted by the
last one out, and only if the collector was running when the first came in. Left as it may be, rarely: an
application that turns the collector off while a large result is built finds it on again afterwards; a Ctrl-C
landing in the few bytecodes of the count itself leaves it off. A child forked during a pause starts with it
lifted.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

LARGE_RESULT_ROWS = 1000  # below this a result makes too few objects for a collection to matter

_lock = threading.Lock()
_holders = 0
_resume = False


@contextmanager
def paused(rows: int) -> Iterator[None]:
    """The collector paused for the block when ``rows`` is a large result's count; nothing done otherwise."""
    if rows < LARGE_RESULT_ROWS:
        yield
        return
    entered = False
    try:
        entered = _enter()
        yield
    finally:
        if entered:
            _leave()


def _enter() -> bool:
    global _holders, _resume
    with _lock:
        if _holders == 0:
            _resume = gc.isenabled()
            gc.disable()
        _holders += 1
    return True


def _leave() -> None:
    global _holders
    with _lock:
        _holders -= 1
        if _holders == 0 and _resume:
            gc.enable()


def _after_fork_in_child() -> None:
    """The threads that held the pause are not in the child: nothing would lift it there (and the lock may have
    been taken at the fork)."""
    global _lock, _holders
    _lock = threading.Lock()
    if _holders:
        _holders = 0
        if _resume:
            gc.enable()


os.register_at_fork(after_in_child=_after_fork_in_child)
