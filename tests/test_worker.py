"""The worker threads of the embedded kernel (tique/engine/worker.py): an interrupt of a caller that arrives as its
reply arrives still lets the call return, and never leaves the caller waiting for a reply it already took."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

import pytest

from tique.engine.worker import Worker


class _Interrupt(Exception):
    pass


def test_an_interrupt_as_the_reply_arrives_loses_no_reply() -> None:
    worker = Worker()
    main = threading.main_thread().ident
    assert threading.get_ident() == main

    calling: list[bool] = []

    def on_signal(signum: int, frame: Any) -> None:  # an interrupt that comes after the call is not the case here
        if calling:
            raise _Interrupt()

    previous = signal.signal(signal.SIGUSR1, on_signal)
    ended: list[float] = []
    interrupted = 0
    call_ends: list[float] = []

    def call(seconds: float, n: int) -> int:
        time.sleep(seconds)
        call_ends.append(time.monotonic())
        return n

    try:
        for i in range(400):
            delay = 0.0005 + (i % 20) * 0.00005
            # the first calls run long: the interrupt surely comes while the call runs, and is raised after its end
            length = delay + (0.05 if i < 10 else 0)
            timer = threading.Timer(delay, lambda: signal.pthread_kill(main, signal.SIGUSR1))  # type: ignore[arg-type]
            began = time.monotonic()
            timer.start()
            calling.append(True)
            try:
                assert worker.call(lambda s=length, n=i: call(s, n)) == i  # type: ignore[misc]
            except _Interrupt:
                interrupted += 1
                assert call_ends and call_ends[-1] >= began  # raised once the call had ended
            finally:
                calling.clear()
            timer.join()
            ended.append(time.monotonic() - began)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert max(ended) < 5
    assert interrupted >= 10


def test_an_interrupt_as_the_request_is_queued_waits_for_the_calls_end() -> None:
    """An interrupt delivered while the request is being queued (its handler runs as the put returns) is raised
    only once the call has ended, as any other interrupt of the caller: a turn held around the statement must not
    end while it runs. Before the put was inside the try, the caller got the interrupt at once."""
    worker = Worker()
    real = worker._requests

    class SignalledDuringPut:
        def get(self) -> Any:
            return real.get()

        def put(self, item: Any) -> None:
            real.put(item)
            signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)  # its handler runs as put returns

    def on_signal(signum: int, frame: Any) -> None:
        raise _Interrupt()

    previous = signal.signal(signal.SIGUSR1, on_signal)
    ended: list[bool] = []
    worker._requests = SignalledDuringPut()  # type: ignore[assignment]
    try:
        with pytest.raises(_Interrupt):
            worker.call(lambda: (time.sleep(0.3), ended.append(True)))
        assert ended == [True]  # the call had ended when the interrupt was raised
    finally:
        worker._requests = real
        signal.signal(signal.SIGUSR1, previous)
