"""One database as this process sees it: its engine, catalog, sequencer and the cache of rewritten statements.

Connections to the same URL in a process share one Database (and so one embedded kernel, one statement
cache). Recovery runs when a process first opens an embedded database; over MAPI, ``tique serve`` ran it.
Closing the last tique connection to an embedded database directory closes the Database, so another process
can open the directory; a later connection opens it again. (An in-memory database stays open: closing it
would lose its data. A Database taken with ``Database.get`` directly, by a background checkpointer or a
benchmark, stays open until its ``close()``.)
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from tique import bootstrap, catalog, privileges
from tique.append_guard import AppendGuard
from tique.cache_keys import cache_keys_of
from tique.engine import Engine, RawConnection, open_engine, udf
from tique.engine.result_types import DdlClock, ResultTypes
from tique.engine.url import EngineURL, parse_url
from tique.errors import InterfaceError
from tique.record_keys import record_keys_for
from tique.sequencer import CSequencer, Sequencer, make_sequencer
from tique.settings import COMMIT_LEASE_MS, SHARED_ROWS_PER_TABLE
from tique.shared_rows import SharedRows
from tique.storage import StorageGuard
from tique.workload import LowPriorityThread, Workload

_registry: dict[tuple[str, str], Database] = {}
_registry_lock = threading.Lock()


class PlanCache:
    """Rewritten statements by (text, options); least recently used ones go first."""

    def __init__(self, size: int = 2048) -> None:
        self.size = size
        self._plans: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Any) -> Any:
        with self._lock:
            plan = self._plans.get(key)
            if plan is not None:
                self._plans.move_to_end(key)
                self.hits += 1
            else:
                self.misses += 1
            return plan

    def put(self, key: Any, plan: Any) -> None:
        with self._lock:
            self._plans[key] = plan
            while len(self._plans) > self.size:
                self._plans.popitem(last=False)


class _Gate:
    """``slots`` turns, each a C re-entrant lock the caller enters itself (``with gate.slot():``): a semaphore's
    Python, or any ``__enter__`` written in Python, can be interrupted (Ctrl-C) after it took a turn and before the
    ``with`` block began, and that turn is then lost for good (with one slot, every later analytical read waited for
    ever). A read waits for the slot it is given:

    - the slot its thread holds already, if any (a read nested in another, from a statement hook: no second slot,
      and no wait for its own);
    - else one that looks free, other than the one its thread left last: a waiter woken by that leaving holds the
      lock before it shows as held (it still waits for the GIL), and a thread that reads again at once would queue
      behind it and leave another slot idle;
    - else the next in turn."""

    def __init__(self, slots: int) -> None:
        self._slots = [threading.RLock() for _ in range(slots)]
        self._next = itertools.count()
        self._left = threading.local()  # .slot: the one this thread was given last

    def slot(self) -> Any:
        for lock in self._slots:
            if lock._is_owned():  # type: ignore[attr-defined]
                return lock
        last = getattr(self._left, "slot", None)
        free = [lock for lock in self._slots if lock is not last and _looks_free(lock)]
        chosen = free[0] if free else self._slots[next(self._next) % len(self._slots)]
        self._left.slot = chosen
        return chosen


def _looks_free(lock: Any) -> bool:
    """A C RLock's state as its repr shows it (it has no locked() before Python 3.14): a hint, never waited on."""
    return repr(lock).startswith("<unlocked")


class Database:
    def __init__(
        self, url: EngineURL, sequencer_kind: str, lease_ms: int | None, connect_timeout: float | None = None
    ) -> None:
        self.url = url
        options = {"connect_timeout": connect_timeout} if connect_timeout is not None and url.kind == "server" else {}
        self.engine: Engine = open_engine(url, **options)
        self.catalog = catalog.Catalog()
        self.plans = PlanCache()
        self.shared_rows = SharedRows(SHARED_ROWS_PER_TABLE)  # rows of quiet tables across transactions
        self._gates: dict[int, _Gate] = {}
        self.workload = Workload()  # who writes now: analytical reads yield to them (tique/workload.py)
        # the thread yielding reads run on: embedded, the kernel runs a sequential read on the calling thread
        self.low_priority = LowPriorityThread() if url.kind == "embedded" else None
        # embedded: the SQL types of results, which the C API does not pass (tique/engine/result_types.py)
        self.ddl_clock = DdlClock()  # when this process's DDL ran: a result's types are kept only between two
        self.result_types = ResultTypes(self.ddl_clock) if url.kind == "embedded" else None
        self.sequencer: Sequencer = make_sequencer(sequencer_kind, lease_ms or COMMIT_LEASE_MS)  # type: ignore[arg-type]
        self.lease_ms = lease_ms
        self.on_close: list[Any] = []  # called before the engine closes (a background checkpointer stops)
        self._connections = 0  # open tique connections (see get and release_connection)
        self._held = False  # taken by something other than a connection: closed only by close()
        # embedded: this process opened the kernel and checks its directory itself; over MAPI the server does
        self.storage = StorageGuard(url.path if url.kind == "embedded" else None, remote=url.kind == "server")
        conn = self.engine.connect()
        # embedded, not serving MAPI clients: which keys may have Cache rows (tique/cache_keys.py)
        self.cache_keys = cache_keys_of(conn)
        # otherwise (over MAPI, or serving MAPI clients): known from the commit records (tique/record_keys.py)
        self.record_keys = record_keys_for() if self.cache_keys is None else None
        # embedded: this kernel's reads kept apart from its appends (tique/append_guard.py)
        self.append_guard: AppendGuard | None = getattr(conn, "append_guard", None)
        try:
            self.owner = privileges.owns_tique(conn)
            self.user = str(conn.execute("SELECT CURRENT_USER").scalar())
            if isinstance(self.sequencer, CSequencer):
                self.sequencer.compiled_by_server = url.kind == "server"
            bootstrap.install(conn, self.sequencer, owner=self.owner)
            if isinstance(self.sequencer, CSequencer) and url.kind == "embedded" and self.owner:
                self.sequencer.local = udf.local_calls()  # this process loaded the module the kernel runs
            if url.kind == "embedded":  # over MAPI, ``tique serve`` recovered
                bootstrap.recover_and_view(conn, self.sequencer)
            if lease_ms is not None:
                self.apply_lease(conn, lease_ms)
            self.default_schema = str(conn.execute("SELECT CURRENT_SCHEMA").scalar())
            self.catalog.refresh(conn)
        finally:
            conn.close()

    def apply_lease(self, conn: RawConnection, lease_ms: int) -> None:
        """The lease lives in the engine, one per database: the last connection to set it wins."""
        if hasattr(self.sequencer, "set_lease"):
            self.sequencer.set_lease(conn, lease_ms)
        self.lease_ms = lease_ms

    def analytical_gate(self, slots: int | None) -> AbstractContextManager[Any]:
        """A turn to run an analytical read, shared by this process's connections with the same ``slots``."""
        if slots is None:
            return nullcontext()
        with _registry_lock:
            gate = self._gates.get(slots)
            if gate is None:
                gate = self._gates[slots] = _Gate(slots)
        return gate.slot()

    @contextlib.contextmanager
    def changing_catalog(self) -> Iterator[None]:
        """Around DDL: what is known of the tables' Cache rows no longer holds (cache_keys.py), nor the types of
        results read meanwhile (result_types.py)."""
        known = self.cache_keys or self.record_keys
        with known.changing() if known is not None else nullcontext(), self.ddl_clock.changing():
            yield

    def types_version(self) -> object:
        """What a result's types are kept under (result_types.py): this process's catalog, its DDL and the engine's
        catalog version, which DDL of any process bumps (read without a statement embedded, else as the last begin
        saw it); None while this process runs DDL."""
        ticks = self.ddl_clock.stamp()
        if ticks is None:
            return None
        local = getattr(self.sequencer, "local", None)
        return (self.catalog.version, ticks, local.catalog_version() if local is not None else self.catalog.seen)

    def connect_raw(self) -> RawConnection:
        return self.engine.connect()

    @classmethod
    def get(
        cls,
        url: str | EngineURL,
        sequencer_kind: str = "c",
        lease_ms: int | None = None,
        connection: bool = False,
        connect_timeout: float | None = None,
    ) -> Database:
        """The process's Database for ``url``, opened now if needed. A tique connection passes ``connection``
        and calls ``release_connection`` when it closes; any other caller holds the Database until close().
        ``connect_timeout``: pymonetdb's, for the server's sessions opened from now on (None: as before)."""
        parsed = parse_url(url) if isinstance(url, str) else url
        key = (parsed.redacted() + f"|{parsed.username}|{parsed.password}", sequencer_kind)
        with _registry_lock:
            db = _registry.get(key)
            if db is None:
                _one_sequencer(parsed, sequencer_kind)
                db = cls(parsed, sequencer_kind, lease_ms, connect_timeout)
                _registry[key] = db
            elif connect_timeout is not None and parsed.kind == "server":
                db.engine.connect_timeout = connect_timeout  # type: ignore[attr-defined]
            if connection:
                db._connections += 1
            else:
                db._held = True
            return db

    def release_connection(self) -> None:
        """A tique connection closed. After the last one, an embedded database directory is closed (under the
        registry lock, so no connection can open it meanwhile), which releases it to other processes."""
        with _registry_lock:
            self._connections -= 1
            if self._connections > 0 or self._held or self.url.kind != "embedded" or self.url.in_memory:
                return
            if self._unregister():
                self._shut()

    def _unregister(self) -> bool:
        """Take this Database out of the registry; False if it was not there (already closed). Lock held."""
        found = [key for key, db in _registry.items() if db is self]
        for key in found:
            del _registry[key]
        return bool(found)

    def _shut(self) -> None:
        for stop in self.on_close:
            stop()
        self.engine.close()

    def close(self) -> None:
        with _registry_lock:
            self._unregister()
        self._shut()


def _one_sequencer(url: EngineURL, kind: str) -> None:
    """An embedded database open in this process takes one sequencer: a second kind would hand out timestamps of
    its own, and opening it would run recovery, which aborts the commits the first one has in flight. Lock held."""
    if url.kind != "embedded":
        return
    for (_, other), db in _registry.items():
        if other != kind and db.url.redacted() == url.redacted():
            raise InterfaceError(
                f"{url.redacted()} is open in this process with sequencer={other!r}; a database takes one sequencer "
                f"at a time: connect with sequencer={other!r}, or close its connections first"
            )
