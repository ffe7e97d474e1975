"""The embedded MonetDB kernel (the monetdbe wheel), driven through its C API directly.

We call libmonetdbe through the wheel's compiled cffi module rather than its Python DB-API layer, which
prepares every statement (so some DDL fails), keeps one process-wide "active" connection, returns None from
``fetchone`` after a cursor is re-executed and cannot read HUGEINT results. Each ``connect()`` here is one
``monetdbe_open`` session; the C calls release the GIL, so threads run queries in parallel. A session's C calls
run on a stack of its own (session_stack.py), as the kernel's stack check requires.

A process can open one database (one directory, or memory); several connections share it. With
``mapi_port`` the first open also starts MonetDB's MAPI listener, which ``tique serve`` uses.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import re
import threading
import time
import warnings
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tique.append_guard import AppendGuard
from tique.cache_keys import CacheKeys
from tique.engine.base import Result, in_one_transaction
from tique.engine.heap_repair import missing_files, repair, short_heaps
from tique.engine.monetdbe_values import HELD_FETCH_ROWS, read_result
from tique.engine.session_stack import KernelCalls, as_int32, kernel_calls, lowlevel
from tique.engine.url import EngineURL
from tique.errors import DataError, InterfaceError, OperationalError, StorageFull, from_monetdb

_state_lock = threading.Lock()
_open_path: str | None = None  # the database this process has open ("" for memory), None if none
_open_count = 0
_connections: weakref.WeakSet[EmbeddedConnection] = weakref.WeakSet()
# Sessions of connections collected while _state_lock was taken: a garbage collection runs a __del__ wherever it
# happens, also inside _open, which holds the lock, and closing there waited for the thread's own lock for good
# (found as a hang of a CI run). Closed at the next connection's open or close, or at exit.
_orphans: list[tuple[Any, KernelCalls]] = []
# the keys that may have Cache rows, for the kernel open now (cache_keys.py); None while it listens to MAPI clients
_cache_keys: CacheKeys | None = None
_append_guard: AppendGuard | None = None  # this kernel's appends and reads kept apart (append_guard.py)


# statements whose count of rows written the C API reports: writes, and EXEC of a prepared one (tique prepares
# queries and writes only)
_COUNTS_ROWS = re.compile(r"(?:\s+|--[^\n]*\n|/\*.*?\*/)*(?:INSERT|UPDATE|DELETE|MERGE|COPY|EXEC)\b", re.I | re.S)


class EmbeddedEngine:
    """A database directory (or memory) opened by this process."""

    kind = "embedded"

    def __init__(
        self,
        url: EngineURL,
        *,
        load_udf: bool = True,
        mapi_port: int | None = None,
        mapi_usock: str | None = None,
        nr_threads: int = 0,
        create: bool = True,
    ) -> None:
        self.url = url
        self.path = url.path
        self.mapi_port = mapi_port
        self.mapi_usock = mapi_usock
        self.nr_threads = nr_threads
        if self.path is not None:
            parent = Path(self.path).parent
            if not parent.is_dir():
                raise OperationalError(
                    f"cannot create the database {self.path}: its parent directory {parent} does not exist; "
                    "create it first or choose another path"
                )
            if not create and not Path(self.path).is_dir():
                raise OperationalError(f"database directory {self.path} does not exist (create=False)")
        if load_udf:
            from tique.engine import udf

            udf.load()
            if self.path is not None:  # commits are refused while this directory's disk is nearly full
                from tique.storage import min_free_bytes

                udf.watch_storage(self.path, min_free_bytes())
        self._closed = False
        self._own: weakref.WeakSet[EmbeddedConnection] = weakref.WeakSet()
        self._keeper: EmbeddedConnection | None = None

    def describe(self) -> str:
        return self.url.redacted()

    def connect(self) -> EmbeddedConnection:
        if self._closed:
            raise InterfaceError(f"engine {self.describe()} is closed")
        if self._keeper is None:
            # Keep one session open for the engine's lifetime: closing the last session shuts the kernel down,
            # and reopening costs a start-up (and replays the log) every time.
            self._keeper = EmbeddedConnection(self)
        conn = EmbeddedConnection(self)
        self._own.add(conn)
        return conn

    def close(self) -> None:
        """Close every connection this engine opened; the kernel shuts down when the last one closes."""
        self._closed = True
        for conn in list(self._own):
            conn.close()
        if self._keeper is not None:
            self._keeper.close()
            self._keeper = None


def _open(engine: EmbeddedEngine, kernel: KernelCalls) -> Any:
    """One monetdbe_open on the engine's database, with the process-wide one-database rule checked."""
    global _open_path, _open_count, _cache_keys, _append_guard
    ffi, lib = lowlevel()
    key = engine.path or ""
    with _state_lock:
        if _open_path is not None and _open_path != key:
            where = _open_path or "memory"
            raise OperationalError(
                f"this process already has the embedded database {where} open; MonetDB's embedded kernel "
                f"holds one database per process. Close it first, or reach {engine.describe()} through "
                "'tique serve' over MAPI"
            )
        handle = ffi.new("monetdbe_database *")
        opts = ffi.new("monetdbe_options *")
        opts.nr_threads = engine.nr_threads
        keep: list[Any] = []
        if _open_count == 0 and (engine.mapi_port is not None or engine.mapi_usock):
            # The wheel's cffi declaration of monetdbe_mapi_server does not match libmonetdbe 11.41's struct
            # { const char *port; const char *usock; }, which monetdbe_options points to: build that by hand.
            port = ffi.new("char[]", str(engine.mapi_port).encode()) if engine.mapi_port is not None else ffi.NULL
            usock = ffi.new("char[]", engine.mapi_usock.encode()) if engine.mapi_usock else ffi.NULL
            server = ffi.new("char *[2]", [port, usock])
            keep += [port, usock, server]
            opts.mapi_server = ffi.cast("monetdbe_mapi_server *", server)
        if _open_count == 0 and engine.path:
            _repair_before_start(engine.path)
        path = ffi.new("char[]", engine.path.encode()) if engine.path else ffi.NULL
        try:
            rc = as_int32(kernel.c("monetdbe_open", handle, path, opts))
        except BaseException:
            # Ctrl-C is raised as the call returns (on a session stack it runs on this thread): a session it opened
            # is closed here, or it would keep the kernel up (the directory locked) with no connection to close it
            if handle[0] != ffi.NULL:
                opened = lib.monetdbe_error(handle[0]) == ffi.NULL
                _close_session(handle[0], kernel, last=opened and _open_count == 0 and bool(key))
            raise
        if rc != 0:
            detail = ffi.string(lib.monetdbe_error(handle[0])).decode() if handle[0] != ffi.NULL else f"code {rc}"
            if handle[0] != ffi.NULL:
                kernel.c("monetdbe_close", handle[0])
            raise _open_error(engine, detail)
        if _open_count == 0:
            _publish_version()
            # a kernel opened anew may find Cache rows another process wrote meanwhile: nothing is known of them
            _cache_keys = None if engine.mapi_port is not None or engine.mapi_usock else CacheKeys()
            # TIQUE_APPEND_GUARD=0: without it, to measure what it prevents (benchmarks/string_race.py)
            _append_guard = AppendGuard() if os.environ.get("TIQUE_APPEND_GUARD", "1") != "0" else None
        _open_path = key
        _open_count += 1
        return handle[0]


def _publish_version() -> None:
    """The embedded kernel leaves ``monet_version`` out of ``sys.environment``, where mserver5 has it and
    clients look for it (SQLAlchemy's MonetDB dialect reads its server version there): add it."""
    import ctypes

    from tique.engine import udf

    try:
        libbat = udf.libbat()
        libbat.GDKversion.restype = ctypes.c_char_p
        libbat.GDKgetenv.restype = ctypes.c_char_p
        libbat.GDKgetenv.argtypes = [ctypes.c_char_p]
        libbat.GDKsetenv.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        if libbat.GDKgetenv(b"monet_version") is None:
            libbat.GDKsetenv(b"monet_version", libbat.GDKversion())
    except (OSError, AttributeError):  # an engine build without these symbols: nothing to add
        pass


def _open_error(engine: EmbeddedEngine, detail: str) -> OperationalError:
    holder = _lock_holder(engine.path) if engine.path else None
    if holder is not None:
        return OperationalError(
            f"cannot open {engine.describe()}: the directory is locked by another process{holder} (an embedded "
            "database can be opened by one process only). Stop that process, or connect to it over MAPI if it is "
            f"'tique serve'. Engine said: {detail}"
        )
    if "Failed to initialize client" in detail:
        return OperationalError(
            f"cannot open another session on {engine.describe()}: the embedded kernel admits 64 client sessions "
            "per process (tique keeps one for itself) and all are open. Close connections you no longer use "
            f"(conn.close()), or share fewer among threads. Engine said: {detail}"
        )
    if engine.mapi_port is not None and ("bind" in detail.lower() or "port" in detail.lower()):
        return OperationalError(f"cannot listen on port {engine.mapi_port}: {detail}. Choose another --port")
    full = _disk_full(engine)
    if full:
        return StorageFull(
            f"cannot open {engine.describe()}: {full}; opening replays the engine's log, which needs space: free "
            f"space on that disk or grow it, then open it again (nothing committed is lost). Engine said: {detail}"
        )
    shorts = short_heaps(engine.path) if engine.path else []
    damaged = [short.describe() for short in shorts if not short.rows_whole]
    if damaged:
        return OperationalError(
            f"cannot open {engine.describe()}: the kernel's files disagree with its catalog in a way tique cannot "
            f"repair safely ({'; '.join(damaged)}): rows committed before the last flush point into the missing "
            f"bytes. Restore the directory from a backup. Engine said: {detail}"
        )
    missing = missing_files(engine.path) if engine.path else []
    if missing:
        return OperationalError(
            f"cannot open {engine.describe()}: the kernel's catalog counts rows in files that are missing or short "
            f"({'; '.join(missing[:5])}{'; ...' if len(missing) > 5 else ''}). A crash during the kernel's flush can "
            "leave a directory so (a defect of MonetDB 11.41's store: plain MonetDB cannot open it either), and those "
            f"rows cannot be rebuilt. Restore the directory from a backup. Engine said: {detail}"
        )
    trace = _trace_tail(engine.path) if engine.path else ""
    if trace:
        detail += f"; the kernel's trace log ({Path(engine.path or '', TRACE_LOG)}) ends: {trace}"
    return OperationalError(f"cannot open {engine.describe()}: {detail}")


GDK_LOCK = ".gdk_lock"  # the kernel holds byte 4 of this file locked (lockf) while it has the directory open
TRACE_LOG = "mdbtrace.log"  # where the kernel writes why it could not start


@contextlib.contextmanager
def _directory_lock(path: str) -> Iterator[bool | None]:
    """The directory's lock, as the kernel takes it: True while held, False when another process holds it, None
    when there is no lock file (a new database). A POSIX lock is the process's, and closing any descriptor of
    the file drops it: use only while this process has no session on the directory."""
    try:
        fd = os.open(Path(path, GDK_LOCK), os.O_RDWR)
    except OSError:
        yield None
        return
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 4)
        except OSError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, 4)
    finally:
        os.close(fd)


def _repair_before_start(path: str) -> None:
    """Repair the heap files a flush racing with appends left short (heap_repair.py), while no process has the
    directory open: holding its lock, as the kernel does. A kernel that failed to start cannot start again in the
    same process, so this runs before every first open, not after a failure (a few ms: one read of BBP.dir)."""
    with _directory_lock(path) as held:
        if not held:
            return  # a new database, or open elsewhere (the open fails as locked)
        found = short_heaps(path)
        if found and all(short.rows_whole for short in found):
            repair(found)
            warnings.warn(
                f"tique repaired {path} before opening it: {len(found)} string heap file(s) were shorter than the "
                f"kernel's catalog records ({'; '.join(short.describe() for short in found)}), left so by a flush "
                "that raced with appends and was not followed by another before the kernel stopped. The missing "
                "bytes belonged to no committed row; the log replays the rest",
                RuntimeWarning,
                stacklevel=2,
            )


def _lock_holder(path: str) -> str | None:
    """ " (pid N)" or "" if another process holds the directory's lock, None if none does (called only when the
    open failed and this process has no session on the directory)."""
    with _directory_lock(path) as held:
        if held is not False:
            return None
    try:
        said = Path(path, GDK_LOCK).read_text(errors="replace").split()
    except OSError:
        said = []
    pid = next((word.removeprefix("PID=") for word in said if word.startswith("PID=")), "")
    return f" (pid {pid})" if pid else ""


def _trace_tail(path: str, lines: int = 6) -> str:
    try:
        text = Path(path, TRACE_LOG).read_text(errors="replace")
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])


def _disk_full(engine: EmbeddedEngine) -> str | None:
    """Why an open may have failed for want of space, or None (MonetDB then says "Catalogue not available")."""
    from tique.storage import free_bytes, min_free_bytes

    free = free_bytes(engine.path) if engine.path is not None else None
    if free is None or free >= min_free_bytes():
        return None
    return f"the disk holding it has {free >> 20} MB free, under the {min_free_bytes() >> 20} MB tique keeps free"


STORE_MANAGER_SLEEP_S = 0.1  # the kernel's store manager wakes up every 100 ms


def _close_handle(handle: Any, kernel: KernelCalls) -> None:
    """monetdbe_close, made safe for the last session of the process (which shuts the kernel down).

    In 11.41 the store manager thread sleeps 100 ms, then reads the store before it checks whether the kernel
    is exiting; shutdown frees the store first and sets "exiting" only later, so a wake-up in between reads
    freed memory and the process dies of SIGSEGV. We set "exiting" first and give the manager one wake-up to
    leave its loop before the kernel goes down.
    """
    with _state_lock:
        last = _open_count == 1 and bool(_open_path)
    _close_session(handle, kernel, last)


def _close_session(handle: Any, kernel: KernelCalls, last: bool) -> None:
    """monetdbe_close; ``last``: the handle is the last session on a database directory (see _close_handle)."""
    if last:
        wait = 2 * STORE_MANAGER_SLEEP_S + 0.05
        ready: float | None = None
        try:
            _prepare_exit()
            ready = time.monotonic() + wait
            time.sleep(wait)
        finally:
            # interrupted (Ctrl-C) too, the kernel must go down, or it holds the directory for good: not before
            # "exiting" is set and the store manager has had its wake-up
            if ready is None:
                _prepare_exit()
                ready = time.monotonic() + wait
            time.sleep(max(0.0, ready - time.monotonic()))
            kernel.c("monetdbe_close", handle)
        return
    kernel.c("monetdbe_close", handle)


def _prepare_exit() -> None:
    from tique.engine import udf

    udf.libbat().GDKprepareExit()


def _closed_one() -> None:
    global _open_path, _open_count
    with _state_lock:
        _open_count -= 1
        if _open_count == 0:
            _open_path = None


class EmbeddedConnection:
    """One session on the embedded kernel, autocommit. Not for concurrent use by several threads."""

    def __init__(self, engine: EmbeddedEngine) -> None:
        _close_orphans()
        self.engine = engine
        self._kernel = kernel_calls()
        try:
            self._handle = self._kernel.around(lambda: _open(engine, self._kernel))
        except BaseException:
            self._kernel.close()
            raise
        self.cache_keys = _cache_keys  # of the kernel this session is on (cache_keys.cache_keys_of)
        self.append_guard = _append_guard
        self._lock = threading.Lock()
        _connections.add(self)

    @property
    def closed(self) -> bool:
        return self._handle is None

    def execute(self, sql: str) -> Result:
        with self._lock:
            if self._handle is None:
                raise InterfaceError("connection is closed", "08003")
            return self._kernel.around(lambda: self._execute(sql))  # type: ignore[no-any-return]

    def execute_atomically(self, statements: Sequence[str]) -> None:
        with self._lock:
            if self._handle is None:
                raise InterfaceError("connection is closed", "08003")
            self._kernel.around(lambda: in_one_transaction(self._execute, statements))

    def _execute(self, sql: str) -> Result:
        ffi, lib = lowlevel()
        result_p = ffi.new("monetdbe_result **")
        affected = ffi.new("monetdbe_cnt *")
        try:
            err = self._kernel.c("monetdbe_query", self._handle, sql.encode(), result_p, affected)
        except BaseException:
            # Ctrl-C is raised as the call returns (on a session stack it runs on this thread): the result it made
            # is still ours to free, or the kernel holds it (its BATs) until the session closes
            if result_p[0] != ffi.NULL:
                self._kernel.c("monetdbe_cleanup_result", self._handle, result_p[0])
            raise
        if err:
            raise from_monetdb(ffi.string(ffi.cast("char *", err)).decode())
        res = result_p[0]
        # the C API leaves the last write's count in place for a statement that writes no rows (SET, DDL, TRUNCATE)
        counted = int(affected[0]) if _COUNTS_ROWS.match(sql) else -1
        if res == ffi.NULL:
            return Result(rowcount=counted)
        try:
            if res.ncols == 0:
                return Result(rowcount=counted)
            return read_result(ffi, lib, res)
        except (ValueError, OverflowError) as exc:  # a year past 9999, a TIME of 24:00...
            raise DataError(f"a value of the result cannot be read in Python: {exc}", "22008") from None
        finally:  # a small result's cleanup returns at once: the GIL is kept (session_stack.OnSessionStack.c)
            self._kernel.c("monetdbe_cleanup_result", self._handle, res, held=res.nrows <= HELD_FETCH_ROWS)

    def close(self) -> None:
        with self._lock:
            if self._handle is None:
                return
            handle, self._handle = self._handle, None
            _close_session_of(handle, self._kernel)
        _close_orphans()

    def __del__(self) -> None:  # a forgotten connection must not keep the kernel open at exit
        handle, self._handle = getattr(self, "_handle", None), None
        if handle is None:
            return
        if not _state_lock.acquire(blocking=False):  # maybe taken by this very thread, inside _open: later
            _orphans.append((handle, self._kernel))
            return
        _state_lock.release()
        try:
            _close_session_of(handle, self._kernel)
        except Exception:
            pass


def _close_session_of(handle: Any, kernel: KernelCalls) -> None:
    try:
        kernel.around(lambda: _close_handle(handle, kernel))
    finally:  # interrupted (Ctrl-C) as well: the session is closed by now (or closing on its worker)
        try:
            kernel.close()
        finally:  # counted as closed even if interrupted as kernel.close returns: the count decides the kernel's end
            _closed_one()


def _close_orphans() -> None:
    """Close the sessions of connections collected while _state_lock was taken (EmbeddedConnection.__del__)."""
    while _orphans:
        try:
            handle, kernel = _orphans.pop()
        except IndexError:  # another thread took the last one
            return
        try:
            _close_session_of(handle, kernel)
        except Exception:
            pass


@atexit.register
def _close_all() -> None:
    """Close what is still open: the kernel can crash the interpreter at exit if threads left sessions open."""
    for conn in list(_connections):
        try:
            conn.close()
        except Exception:
            pass
    _close_orphans()
