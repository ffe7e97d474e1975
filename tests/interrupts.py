"""Interrupts at random instants, as Ctrl-C comes: the handler of a signal raises ``Interrupt``, a BaseException as
KeyboardInterrupt is. CPython runs the handler as a call returns, at a backward jump or as a function is entered,
so the interrupt lands anywhere in the code under test.

- ``timer=True``: the real-time interval timer (SIGALRM), microseconds after arming: precise. It is
  pytest-timeout's alarm too, so that is put back afterwards (what was left of it), and meanwhile a hang ends the
  process after 120 s (faulthandler): the test fails rather than waits for good. Every thread's stack is written to
  a file in $TIQUE_HANG_DIR (else the temporary directory's tique-test-hangs), not to stderr, which pytest captures
  and loses with the process; `make test` prints the files after a failed run.
- ``timer=False``: a thread signals the main thread (SIGUSR1) after a busy wait of as long; it comes later than
  asked (a thread wakes in tens of microseconds), which suits calls that wait."""

from __future__ import annotations

import faulthandler
import gc
import os
import queue
import random
import signal
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Any


class Interrupt(BaseException):
    pass


class Interrupter:
    """``with Interrupter(seed, most_us) as interrupt:`` then ``interrupt.arm()`` before each call under test and
    ``interrupt.disarm()`` after it, both inside the try that catches ``Interrupt``."""

    def __init__(self, seed: int, most_us: float, timer: bool = False, hang_s: float = 120) -> None:
        self._rng = random.Random(seed)
        self._most = most_us / 1e6
        self._timer = timer
        self._signal = signal.SIGALRM if timer else signal.SIGUSR1
        self._alarm_left = 0.0
        self._began = 0.0
        self._main = threading.main_thread().ident
        self._armed = False
        self._go: queue.SimpleQueue[bool] = queue.SimpleQueue()  # C: no lock of its own an interrupt could keep
        self._previous: Any = None
        self._collecting = False
        self._hang_s = hang_s
        self._dump: IO[str] | None = None

    def __enter__(self) -> Interrupter:
        assert threading.get_ident() == self._main, "signals go to the main thread"
        # no automatic collection meanwhile: a handler run inside a gc callback (hypothesis registers one) has its
        # exception printed and dropped, an unraisable warning and an interrupt lost
        self._collecting = gc.isenabled()
        gc.disable()
        if self._timer:
            self._alarm_left, self._began = signal.getitimer(signal.ITIMER_REAL)[0], time.monotonic()
            self._dump = _hang_file().open("w")
            self._dump.write(f"{os.environ.get('PYTEST_CURRENT_TEST', 'a test')} hung for {self._hang_s} s:\n")
            self._dump.flush()
            faulthandler.dump_traceback_later(self._hang_s, exit=True, file=self._dump)
        self._previous = signal.signal(self._signal, self._on_signal)
        if not self._timer:
            threading.Thread(target=self._loop, name="interrupter", daemon=True).start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self._armed = False
        if self._timer:
            signal.setitimer(signal.ITIMER_REAL, 0)
        else:
            self._go.put(False)
        time.sleep(0.01)  # a signal on its way is handled (and ignored) before the handler is put back
        signal.signal(self._signal, self._previous)
        if self._collecting:
            gc.enable()
        if self._timer:
            faulthandler.cancel_dump_traceback_later()
            if self._dump is not None:
                self._dump.close()
                Path(self._dump.name).unlink(missing_ok=True)  # no hang: nothing to show
            if self._alarm_left:
                signal.setitimer(signal.ITIMER_REAL, max(self._alarm_left - (time.monotonic() - self._began), 0.001))

    def arm(self) -> None:
        if self._timer:
            self._armed = True
            signal.setitimer(signal.ITIMER_REAL, self._rng.uniform(1e-6, self._most))
        else:
            self._go.put(True)
            self._armed = True

    def disarm(self) -> None:
        self._armed = False

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self._armed:  # one interrupt per arming; one that comes after the call is not the case under test
            self._armed = False
            raise Interrupt()

    def _loop(self) -> None:
        while self._go.get():
            deadline = time.perf_counter() + self._rng.uniform(0, self._most)
            while time.perf_counter() < deadline:  # a busy wait: sleep() cannot wait microseconds
                pass
            if self._armed:
                signal.pthread_kill(self._main, signal.SIGUSR1)  # type: ignore[arg-type]


def _hang_file() -> Path:
    """Where a hang's stacks go: one file per process and Interrupter, in the directory `make test` prints."""
    directory = Path(os.environ.get("TIQUE_HANG_DIR") or Path(tempfile.gettempdir()) / "tique-test-hangs")
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"hang-{os.getpid()}-{time.monotonic_ns()}.txt"
