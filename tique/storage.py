"""Free space: a full disk must stop writes before the engine's write-ahead log breaks.

Measured on MonetDB 11.41 (tests/adversarial/test_disk_full.py, a 30 MB tmpfs): once a log append fails for
want of space, the engine reports "concurrency conflicts" or "Append failed", then acknowledges later commits
it does not keep (lost after a restart), and the database does not open again until space is freed. So tique
keeps a minimum free (``TIQUE_MIN_FREE_MB``, default 64 MB) on the database's file system and refuses writes
under it:

- the C module refuses commit timestamps (SQLSTATE 53100) under the minimum, for every client of the kernel
  (embedded or over MAPI): no commit record, so no acknowledged commit, is written on a nearly full disk;
- the process that opened the kernel also checks before any buffered row is sent (one statvfs, about 3 us);
- this process stops sending writes (fail-stop) after a StorageFull until a check finds space again: remote
  clients ask the C module (``tique.storage_ok()``, one round trip, only while stopped);
- an engine error that is a failed write (for want of space) becomes StorageFull too, and then the engine's log
  may miss a write it acknowledged: commits are refused by every client until the database is opened again
  (``tique.storage_failed()`` tells the C module; recovery at the next open replays the log);
- so is one raised by a large write outside a commit's flush (a bulk load, DDL, the checkpointer's batches):
  its failed log append gives its space back, so its "concurrency conflicts" counts within a slack of the
  minimum sized by the write (``StorageGuard.raise_if_large_write_failed``; a failed checkpoint or CREATE TABLE
  AS was followed by acknowledged commits the engine lost). Each refusal a write retries is judged before the
  retry (engine.base.retried_on_conflict's ``judge``); over MAPI the C module tells the room over the minimum
  (``tique.storage_room()``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from tique.engine.base import RawConnection
from tique.errors import DatabaseError, SerializationFailure, StorageFull, engine_write_failed

MIN_FREE_ENV = "TIQUE_MIN_FREE_MB"
DEFAULT_MIN_FREE_MB = 64
LOW_FLOOR = 1 << 20  # the least minimum: under 1 MB free a failed write is taken for a full disk
# A write outside a commit's flush (a checkpoint's batch into Storage, a bulk load, CREATE TABLE AS, DDL) may be
# large: when its log append fails for want of space the engine says "concurrency conflicts" and gives the space
# back, so the disk may be above the minimum again when the error is judged. Such a conflict counts as a full disk
# within this much of the minimum.
LARGE_WRITE_SLACK = 64 << 20

# MonetDB's words when a write failed for want of space (a failed log append surfaces as "Append failed")


def min_free_bytes() -> int:
    """The free space tique keeps on the database's file system: TIQUE_MIN_FREE_MB, at least LOW_FLOOR."""
    raw = os.environ.get(MIN_FREE_ENV, "").strip()
    try:
        mb = float(raw) if raw else DEFAULT_MIN_FREE_MB
    except ValueError:
        mb = DEFAULT_MIN_FREE_MB
    return max(LOW_FLOOR, int(mb * (1 << 20)))


def free_bytes(directory: str) -> int | None:
    """Free space for unprivileged writers on ``directory``'s file system (None if it cannot be asked)."""
    try:
        fs = os.statvfs(directory)
    except OSError:
        return None
    return fs.f_bavail * fs.f_frsize


def full_message(directory: str, free: int, min_free: int) -> str:
    return (
        f"the disk holding the database is full: {free >> 20} MB free in {directory}, under the {min_free >> 20} MB "
        "tique keeps free so the engine's log stays intact; writes are refused (reads are still served) until "
        "space returns: free space on that disk or grow it, then run the transaction again"
    )


BROKEN = (
    "the engine failed to write for want of disk space ({error}), so its log may miss that write: writes are "
    "refused (reads are still served) until the database is opened again; free space on its disk, then restart "
    "it (close every connection, or restart tique serve): recovery replays the log"
)


class StorageGuard:
    """Per database and process: is there room to write? Fail-stop once a write failed for want of space."""

    def __init__(self, directory: str | None, remote: bool) -> None:
        self.directory = directory  # the kernel's directory when this process opened it: checked here
        self.remote = remote  # over MAPI: the C module in the server checks
        self.min_free = min_free_bytes()
        self.stopped: str | None = None  # why writes stopped; cleared by a check that finds space
        self.broken: str | None = None  # the engine itself failed a write: stopped until the database reopens

    def check(self, conn: RawConnection, ask: bool = False) -> None:
        """Before writes reach the engine: raise StorageFull while there is no room. A remote client asks the
        engine only while stopped (or when ``ask``): its commits are checked there anyway."""
        if self.broken is not None and not self.remote:
            raise StorageFull(self.broken)
        if self.directory is not None:
            free = free_bytes(self.directory)
            if free is not None and free < self.min_free:
                raise self.stop(StorageFull(full_message(self.directory, free, self.min_free)))
            self.stopped = None
        elif self.remote and (ask or self.stopped is not None):
            self._ask_engine(conn)
            self.stopped = None

    def _ask_engine(self, conn: RawConnection) -> None:
        try:
            conn.execute("SELECT tique.storage_ok()")
        except StorageFull as exc:
            raise self.stop(exc) from None
        except DatabaseError:
            pass  # no C module (sequencer='sql'): the engine's own errors are all there is

    def stop(self, exc: StorageFull) -> StorageFull:
        self.stopped = str(exc)
        return exc

    def _low(self, conn: RawConnection, slack: int = 0) -> bool:
        """Is the disk under the minimum free (plus ``slack``) now? Over MAPI the engine's C module tells."""
        if self.directory is not None:
            free = free_bytes(self.directory)
            return free is not None and free < self.min_free + slack
        try:
            return int(conn.execute("SELECT tique.storage_room()").scalar()) < slack
        except DatabaseError:
            pass  # no C module (sequencer='sql'): the engine's minimum, if it can tell
        try:
            self.check(conn, ask=True)
        except StorageFull:
            return True
        except DatabaseError:
            pass  # the engine cannot even answer: judge by its first error
        return False

    def classify(self, exc: DatabaseError, conn: RawConnection) -> DatabaseError:
        """An engine error raised by a write: StorageFull when the write failed for want of space. MonetDB's
        "concurrency conflicts" is ambiguous (tique's appends never conflict, but a failed log write reads the
        same): it is a storage failure when the disk is (nearly) full. Then the engine's log may miss the write,
        so writes stop until the database is opened again (every client of it: the C module refuses commits)."""
        if isinstance(exc, StorageFull):
            return self.stop(exc)
        conflict = isinstance(exc, SerializationFailure) and exc.sqlstate == "40000"
        if not engine_write_failed(exc) and not (conflict and self._low(conn)):
            return exc
        return self.failed(exc, conn)

    def raise_if_large_write_failed(self, exc: DatabaseError, conn: RawConnection, conflict_slack: int = 0) -> None:
        """Raise StorageFull when ``exc``, from a large write outside a commit's flush (DDL, a bulk load, a
        checkpoint's batch), is a write the engine failed for want of space; the engine is then told to refuse
        commits until the database reopens, since a commit it acknowledged later could be lost with its log. Only
        MonetDB's own words count, opening its message ("Append failed"...); its "Could not allocate space" when
        the disk is within LARGE_WRITE_SLACK of the minimum (the failed write gave its space back); its
        "concurrency conflicts" within ``conflict_slack``: give one only for a write that cannot really conflict
        (a session's own staging table, a new table), or as large as the write, since a real conflict taken for a
        full disk stops every writer. Over MAPI the engine is asked, without the slack."""
        if isinstance(exc, StorageFull):
            raise self.stop(exc)
        # a write retried on every conflict (engine.base.retried_on_conflict) ends on the last one
        conflict = any(isinstance(e, SerializationFailure) and e.sqlstate == "40000" for e in (exc, exc.__cause__))
        if (
            engine_write_failed(exc, opening=True)
            or (_NO_ROOM.match(str(exc)) and self._low(conn, LARGE_WRITE_SLACK))
            or (conflict and self._low(conn, conflict_slack))
        ):
            raise self.failed(exc, conn) from exc

    def failed(self, exc: DatabaseError, conn: RawConnection) -> StorageFull:
        """The engine failed a write for want of space: writes stop until the database is opened again, here and
        (through the C module) for every client of the kernel."""
        self.broken = BROKEN.format(error=exc)
        try:
            conn.execute("SELECT tique.storage_failed()")  # every other client of the kernel stops too
        except DatabaseError:
            pass  # no C module, or the engine cannot answer: this process stops at least
        return self.stop(StorageFull(self.broken))


_NO_ROOM = re.compile(r"\s*could not allocate space", re.I)  # a heap that cannot grow, on disk or in memory


def refusal_judge(conn: RawConnection, slack: int) -> Callable[[Exception], None]:
    """For engine.base.retried_on_conflict: each refusal of a large write on ``conn`` judged before its retry
    (StorageGuard.raise_if_large_write_failed within ``slack``), since a failed log write reads as a conflict."""
    guard = guard_of(conn)

    def judge(exc: Exception) -> None:
        if isinstance(exc, DatabaseError):
            guard.raise_if_large_write_failed(exc, conn, slack)

    return judge


def guard_of(conn: RawConnection) -> StorageGuard:
    """A StorageGuard for a raw connection used outside a Database (the checkpointer): it watches the kernel's
    directory when the session is on an embedded kernel, else asks the engine."""
    engine = getattr(conn, "engine", None) or getattr(getattr(conn, "raw", None), "engine", None)
    directory = getattr(engine, "path", None)
    return StorageGuard(directory, remote=directory is None)
