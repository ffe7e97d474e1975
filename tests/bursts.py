"""Writers, readers and the checkpointer together, the writers let through in bursts: the Cache fills, then the
checkpointer empties it in the pauses, so readers meet every form a read can take (tests of Storage-only reads)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from tique.checkpoint import Checkpointer
from tique.engine import open_engine


def run_in_bursts(
    url: str,
    writer: Callable[[int], None],
    reader: Callable[[], None],
    stop: threading.Event,
    writing: threading.Event,
    errors: list[str],
    seconds: float,
    *,
    burst: float = 0.4,
    pause: float = 0.6,
    enough: Callable[[], bool] = lambda: False,
) -> None:
    """Two ``writer`` threads (seeds 1 and 2, writing while ``writing`` is set), two ``reader`` threads and a
    checkpointer looping every 50 ms, until ``seconds`` pass, an error is recorded or ``enough()``; then ``stop``
    is set and every thread joined."""
    checkpointer = Checkpointer(open_engine(url).connect())

    def checkpointing() -> None:
        try:
            while not stop.is_set():
                checkpointer.run_once()
                time.sleep(0.05)
        except Exception as exc:  # pragma: no cover - reported by the caller
            errors.append(f"checkpointer: {exc!r}")

    threads = [threading.Thread(target=writer, args=(s,)) for s in (1, 2)]
    threads += [threading.Thread(target=reader) for _ in range(2)] + [threading.Thread(target=checkpointing)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not errors and not enough():
        writing.set()
        time.sleep(burst)
        writing.clear()
        time.sleep(pause)
    stop.set()
    for t in threads:
        t.join(60)
    checkpointer.conn.close()
