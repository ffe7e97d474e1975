"""Worker threads for the embedded kernel, where session stacks (session_stack.py) are not available: each
connection's kernel calls then run on one thread that never ends."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any


class Worker:
    """A thread that never ends, on which one connection's kernel calls run.

    The kernel checks stack depth against the stack it recorded for the calling OS thread when it first saw
    it. A Python thread that ended leaves that record behind, and a new thread can reuse its id: its calls
    then fail with "Query too complex: running out of stack space". Kernel calls therefore run only on
    these workers, which never end; application threads come and go freely.
    """

    def __init__(self, name: str = "tique-kernel") -> None:
        self._requests: queue.SimpleQueue[tuple[Callable[[], Any], _Reply]] = queue.SimpleQueue()
        threading.Thread(target=self._loop, name=name, daemon=True).start()

    def _loop(self) -> None:
        while True:
            fn, reply = self._requests.get()
            try:
                reply.end((True, fn()))
            except BaseException as exc:
                reply.end((False, exc))
            # The call closes over its connection: kept in this never-ending frame until the next call, it would
            # keep a forgotten connection (and its kernel session, of 64) alive for good.
            del fn, reply

    def call(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` on the worker and return its result. Each call has its own reply: the call runs to
        its end whatever happens to the caller, and its reply must not answer the next call.

        An interrupt (KeyboardInterrupt) of the caller is raised once the call has ended, as it is when the call
        runs on the calling thread (session_stack.py): what the caller holds around the statement, such as its
        turn in the append guard (append_guard.py), must not end before the statement. A second interrupt
        stops the wait."""
        reply = _Reply()
        try:
            # inside the try: an interrupt as the put returns (the request is queued) waits for the call's end too
            self._requests.put((fn, reply))
            reply.ended.get()
        except BaseException:
            # The interrupt can come after the wait took the signal of the end, as it returns: the outcome, kept
            # before the signal was given, says whether there is one still to wait for. (No interrupt can come
            # between the try's start and the put's call: the request is queued once anything here runs.)
            if not reply.outcome:
                reply.ended.get()
            raise
        ok, value = reply.outcome[0]
        if ok:
            return value
        raise value


class _Reply:
    """One call's outcome, and the signal that it is there."""

    def __init__(self) -> None:
        self.outcome: list[tuple[bool, Any]] = []
        self.ended: queue.SimpleQueue[None] = queue.SimpleQueue()

    def end(self, outcome: tuple[bool, Any]) -> None:
        self.outcome.append(outcome)
        self.ended.put(None)


_free_workers: list[Worker] = []
_workers_lock = threading.Lock()


def take_worker() -> Worker:
    with _workers_lock:
        return _free_workers.pop() if _free_workers else Worker()


def give_back(worker: Worker) -> None:
    with _workers_lock:
        _free_workers.append(worker)
