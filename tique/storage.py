"""Free space: a full disk must stop writes before the engine's write-ahead log breaks.

Measured on MonetDB 11.41 (tests/adversarial/test_disk_full.py, a 30 MB tmpfs): once a log append fails for
want of space, the engine reports "concurrency conflicts" or "Append failed", then acknowledges later commits
it does not keep, and after a restart the database may not open at all. So tique keeps a minimum free
(``TIQUE_MIN_FREE_MB``, default 64 MB) on the database's file system and refuses writes under it:

- the C module refuses commit timestamps (SQLSTATE 53100) under the minimum, for every client of the kernel
  (embedded or over MAPI): no commit record, so no acknowledged commit, is written on a nearly full disk;
- the process that opened the kernel also checks before any buffered row is sent (one statvfs, about 1 us);
- an engine error that looks like a failed write becomes StorageFull too, and this process stops sending
  writes (fail-stop) until a check finds space again: remote clients ask the C module (``tique.storage_ok()``,
  one round trip, only while stopped).
"""

from __future__ import annotations

import os
import re

from tique.engine.base import RawConnection
from tique.errors import DatabaseError, SerializationFailure, StorageFull

MIN_FREE_ENV = "TIQUE_MIN_FREE_MB"
DEFAULT_MIN_FREE_MB = 64

# MonetDB's words when a write failed for want of space (a failed log append surfaces as "Append failed")
_WRITE_FAILED = re.compile(r"append failed|no space left|disk (is )?full|could not extend", re.I)


def min_free_bytes() -> int:
    """The free space tique keeps on the database's file system, from TIQUE_MIN_FREE_MB (0 turns it off)."""
    raw = os.environ.get(MIN_FREE_ENV, "").strip()
    try:
        mb = float(raw) if raw else DEFAULT_MIN_FREE_MB
    except ValueError:
        mb = DEFAULT_MIN_FREE_MB
    return max(0, int(mb * (1 << 20)))


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


class StorageGuard:
    """Per database and process: is there room to write? Fail-stop once a write failed for want of space."""

    def __init__(self, directory: str | None, remote: bool) -> None:
        self.directory = directory  # the kernel's directory when this process opened it: checked here
        self.remote = remote  # over MAPI: the C module in the server checks
        self.min_free = min_free_bytes()
        self.stopped: str | None = None  # why writes stopped; cleared by a check that finds space

    def check(self, conn: RawConnection, ask: bool = False) -> None:
        """Before writes reach the engine: raise StorageFull while there is no room. A remote client asks the
        engine only while stopped (or when ``ask``): its commits are checked there anyway."""
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

    def classify(self, exc: DatabaseError, conn: RawConnection) -> DatabaseError:
        """An engine error raised by a write: StorageFull when the write failed for want of space. MonetDB's
        "concurrency conflicts" is ambiguous (tique's appends never conflict, but a failed log write reads the
        same): it is a storage error when the disk is under the minimum."""
        if isinstance(exc, StorageFull):
            return self.stop(exc)
        failed = _WRITE_FAILED.search(str(exc)) is not None
        if not failed and not (isinstance(exc, SerializationFailure) and exc.sqlstate == "40000"):
            return exc
        try:
            self.check(conn, ask=True)
        except StorageFull as full:
            return full
        except DatabaseError:
            pass  # the engine cannot even answer: report what it said first
        if not failed:
            return exc
        return self.stop(
            StorageFull(
                f"the engine could not write ({exc}); the disk holding the database may be full: writes are "
                "refused (reads are still served) until space returns: free space on that disk or grow it, then "
                "run the transaction again"
            )
        )
