"""Reads of a table kept apart from appends to it: beside one, MonetDB 11.41 can read strings wrongly.

When a write grows a string column's heap, the kernel may move the heap while another session's statement reads
it; that statement then returns an empty string or another row's (benchmarks/string_race.py: a reader of two fixed
rows beside an appending writer read wrong in 5 of 10 six-second runs; a copy inside the statement, or a CAST,
does not help). The kernel gives no way to hold a heap in place, so within the process that has the embedded
database open tique keeps its reads and its own appends apart, as a readers-writer lock per table:

- an append (a commit's rows into a Cache, the checkpointer's move into Storage, a bulk load's move) waits for the
  reads of its tables that came before it, then runs (``appending``);
- a read of tables with string columns waits for the appends of them that came before it, then runs
  (``reading``); reads do not wait for each other, nor appends for each other.

Turns go in the order requests came, so neither a stream of reads nor a stream of commits keeps the other waiting.
The first form of this guard ran a read again when an append had overlapped it, and held appends back after two
such runs: at TPC-C scale 1.0 with 4 clients a quarter of the reads ran again, CPU that waiting does not spend.

Appends by other processes (MAPI clients of ``tique serve``) are not seen here: they take their turns in the C
module (tique/turns.py), and so does this guard in ``tique serve``'s process (``kernel``).
A table's Storage and Cache are guarded apart (``storage_of``, ``cache_of``): a read by keys no Cache row has
reads Storage alone, which commits do not append to. A table without string columns needs no guard.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from tique.turns import KernelTurns

T = TypeVar("T")


class _Table(Protocol):  # catalog.TableInfo, as far as reading_part needs it
    @property
    def qualified(self) -> str: ...

    def names_strings(self, sql: str) -> bool: ...


def storage_of(qualified: str) -> str:
    """The guard's name for a table's Storage (a read of Storage alone is not overlapped by Cache appends)."""
    return f"{qualified}\x00storage"


def cache_of(qualified: str) -> str:
    return f"{qualified}\x00cache"


def reading_part(conn: Any, table: _Table, part: Callable[[str], str], sql: str) -> list[tuple[Any, ...]]:
    """The rows of ``sql``, a read of one part of ``table`` (``storage_of`` or ``cache_of``) through a raw
    connection: when it names a string column, in turn with this process's appends to that part (a string key
    misread would match or group the wrong rows)."""
    guard: AppendGuard | None = getattr(conn, "append_guard", None)
    if guard is None or not table.names_strings(sql):
        return conn.execute(sql).rows  # type: ignore[no-any-return]
    return guard.reading([part(table.qualified)], lambda: conn.execute(sql).rows)


class _Request:
    """A read or an append, waiting or running, of some tables, by one thread."""

    __slots__ = ("appends", "names", "running", "thread", "ticket")

    def __init__(self, appends: bool, names: Iterable[str]) -> None:
        self.appends = appends
        self.names = frozenset(names)
        self.thread = threading.get_ident()
        self.running = False
        self.ticket = 0  # its turn in the C module, when the kernel serves MAPI clients

    def conflicts(self, other: _Request) -> bool:
        return self.appends != other.appends and not self.names.isdisjoint(other.names)


class AppendGuard:
    """Per kernel: the reads and appends waiting or running, in the order they came (see the module's docstring).
    A read waits for the appends of its tables that came before it, an append for the reads: first come, first
    served, so neither a stream of reads nor one of appends keeps the other waiting for good, and a request waits
    only for earlier ones (no cycle).

    A request a thread makes while it holds another (a statement hook of the read or append, which runs once its
    statement has ended) waits only for other threads' running requests, which wait for nothing: it must not
    wait behind requests that wait for the one it is nested in."""

    def __init__(self) -> None:
        # entered as the C lock itself (``with self._mutex``): a Condition's own __enter__ is Python, and an interrupt
        # inside it, after the lock was taken, would keep the lock for good
        self._mutex = threading.RLock()
        self._changed = threading.Condition(self._mutex)
        self._active: list[_Request] = []  # waiting or running, in the order they came
        self.reads = 0  # guarded reads, for tests and benchmarks (benchmarks/tpcc reports them)
        self.read_waits = 0  # reads that waited for an append
        self.append_waits = 0  # appends that waited for a read
        # tique serve: the kernel's MAPI clients take turns in the C module, and so must this process (turns.py)
        self.kernel: KernelTurns | None = None

    @contextmanager
    def appending(self, tables: Iterable[str]) -> Iterator[None]:
        request = _Request(True, tables)
        try:  # entered inside: an interrupt at any point of the entry must not leave the request in the way
            self._enter(request)
            yield
        finally:
            # _leave to its end through interrupts (Ctrl-C as the statement ends; CPython runs a signal's handler
            # as a function is entered, too): a request left in the list, or a turn in the C module never ended,
            # would keep conflicting requests of other threads waiting for good. Written out here, not called: a
            # helper could be interrupted as it is entered, before its own try. The interrupt is raised after.
            interrupted: BaseException | None = None
            tries = 0
            while True:  # no call before the try (a handler runs as a call returns): range() would be one
                try:
                    self._leave(request)
                    break
                except BaseException as exc:
                    interrupted, tries = exc, tries + 1
                    if tries == 100:  # a failure that keeps coming is no interrupt
                        break
            if interrupted is not None:
                raise interrupted

    def reading(self, tables: Iterable[str], run: Callable[[], T]) -> T:
        """``run()``, with no append to one of ``tables`` running meanwhile."""
        request = _Request(False, tables)
        if not request.names:
            return run()
        try:
            self._enter(request)
            return run()
        finally:
            interrupted: BaseException | None = None  # as in appending
            tries = 0
            while True:
                try:
                    self._leave(request)
                    break
                except BaseException as exc:
                    interrupted, tries = exc, tries + 1
                    if tries == 100:
                        break
            if interrupted is not None:
                raise interrupted

    def _enter(self, request: _Request) -> None:
        with self._mutex:
            nested = any(r.thread == request.thread for r in self._active)
            self._active.append(request)
            if not request.appends:
                self.reads += 1

            def blocked() -> bool:
                return self._blocked_nested(request) if nested else self._blocked(request)

            if blocked():
                if request.appends:
                    self.append_waits += 1
                else:
                    self.read_waits += 1
                self._changed.wait_for(lambda: not blocked())
            request.running = True
        if self.kernel is not None:
            request.ticket = self.kernel.take(request.appends, request.names)

    def _blocked(self, request: _Request) -> bool:
        """An earlier conflicting request, or a running one (a nested request may run before earlier ones)."""
        earlier = True
        for other in self._active:
            if other is request:
                earlier = False
            elif (earlier or other.running) and other.conflicts(request):
                return True
        return False

    def _blocked_nested(self, request: _Request) -> bool:
        return any(r.running and r.thread != request.thread and r.conflicts(request) for r in self._active)

    def _leave(self, request: _Request) -> None:
        """Ends ``request``, entered or not; idempotent, so the callers' finally runs it again if an interrupt stopped
        it half way."""
        if request.ticket and self.kernel is not None:
            self.kernel.end(request.ticket)
            request.ticket = 0
        with self._mutex:
            if any(r is request for r in self._active):
                self._active.remove(request)
            self._changed.notify_all()


# For connections to a kernel tique does not guard (over MAPI): a guard of its own, which sees this process alone
NO_GUARD = AppendGuard()
