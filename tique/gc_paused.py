"""Python's cyclic garbage collector paused while a large result is built.

A result is built as a tuple per row, and Python runs its collector every 700 new container objects, walking
older generations every tenth and hundredth run: the cost grows with everything the process holds, not with the
result. Measured on CH-benCHmark's Q18 at scale 1.0 (122k rows, embedded): decoding its timestamp column took
137 ms per run, 42 ms with the collector paused. A result's values hold no reference cycles, so the collector
could free nothing of what is made meanwhile; it runs again as soon as the last large result is built.

The collector is one per process: the pause is counted across threads, and lifted only by the last one out, and
only if it was running when the first came in. (An application that turns the collector off while a large result
is being built finds it on again afterwards.)
"""

from __future__ import annotations

import gc
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
    global _holders, _resume
    with _lock:
        if _holders == 0:
            _resume = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _resume:
                gc.enable()
