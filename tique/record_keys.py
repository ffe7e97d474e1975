"""Which keys may have a Cache row, known over MAPI from the commit records, so that a read by key of a key with
none reads Storage alone (as tique/cache_keys.py does embedded, where one process writes every Cache row).

Over MAPI other processes write the Cache, but every Cache row a snapshot can see belongs to a commit whose record
(``tique.commits``: one row per write-set hash, ``write_buffer.key_hash`` of (table, key)) is written before its
commit becomes visible. So a process keeps the set S of hashes of the records it read, and a snapshot ``s`` may
use S once S holds every record with a commit timestamp at or below ``s`` that existed when it was read:

- ``covered``: S was read by statements that each ran after a snapshot at or above ``covered`` was visible (all
  records at or below it were written); a transaction whose snapshot is newer first reads the records newer than
  ``covered`` (one statement, ``catch_up``). Every so often S is read whole again instead, so that it shrinks
  as the checkpointer trims records.
- A record the checkpointer trimmed before S was read: the checkpointer trims records only in a run that wrote the
  newest version at or below its horizon of every key with a Cache row below it into Storage, only below every
  Cache row its deletes left, and nothing of a commit above its horizon. So every committed Cache row has its
  record. A newer version of such a key that the snapshot sees has a record that was not trimmed, so it is in S;
  if there is none, Storage holds exactly the snapshot's version, and no later checkpoint changes it (a run
  rewrites only keys with Cache rows, whose records are in S: a rewrite deletes and then inserts the row, and
  Storage alone would miss it in between).

Records name a table by its name (``TableInfo.identity``), and RENAME TO moves a Cache with its rows: the rows of
commits made under another name have records under that name. So the hashes of a table's keys count only once the
keys of its Cache rows were read under the table entry in use (``tables``: one SELECT per table at its first use,
and again after each whole read of S and after any DDL), and only for a snapshot whose begin saw the same engine
catalog version as the transaction that read them (every DDL bumps it after its change and before it becomes
visible). A row made before that SELECT began is in it (or was moved to Storage by then). A row made after it
belongs to a commit newer than the reading transaction's snapshot, whose record S holds before a snapshot that sees
it asks; it names another table only if a DDL renamed the table after the SELECT began, and a snapshot that sees
the row sees that DDL (a writer that overlaps a DDL of its table fails its certification), so it began under a
newer catalog version.

The transaction's own writes are not here (their records do not exist before its commit): the transaction
answers for them itself. Anything unsure (a key value not an exact integer, part of a key, DDL running, too
many records) answers "may be cached", which only costs the Cache branch.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tique.cache_keys import eligible, key_select
from tique.catalog import TableInfo
from tique.engine.base import RawConnection
from tique.errors import DatabaseError
from tique.known_rows import Key
from tique.write_buffer import key_hash

if TYPE_CHECKING:
    from tique.snapshot_lease import SnapshotLease

MAX_HASHES = 200_000  # more records than this: every key "may be cached" until a later whole read fits
WHOLE_AFTER = 20_000  # hashes added since the last whole read of the records (at least): read them whole again
RETRY_TOO_MANY_S = 5.0  # after a read found too many records (or Cache rows), this long before trying again

# TIQUE_RECORD_KEYS=0: every key read over MAPI keeps its Cache branch (to measure what this saves)
ENABLED = os.environ.get("TIQUE_RECORD_KEYS", "1") != "0"


@dataclass(eq=False)
class _Hashes:
    """S and how far it reaches. Grown in place (under RecordKeys' lock, ``covered`` raised after the hashes it
    covers are in); a whole read installs a new one, so a reader holding the old one still has a valid set."""

    covered: int
    hashes: set[int]
    base: int  # hashes of its whole read
    added: int = 0  # hashes read since


@dataclass(eq=False)
class _Table:
    entry: tuple[Any, ...]  # the table entry its Cache keys were read under (_entry)
    catalog: int  # the engine's catalog version its reader's snapshot began with
    hashes: set[int] = field(default_factory=set)


def _entry(info: TableInfo) -> tuple[Any, ...]:
    return (info.identity, info.cache, info.table_id, info.key, info.key_types)


class RecordKeys:
    """S per process (see the module's docstring); asked through ``at``, a view with one transaction's snapshot."""

    def __init__(self, max_hashes: int = MAX_HASHES, whole_after: int = WHOLE_AFTER) -> None:
        self.max_hashes = max_hashes
        self.max_cache_rows = max_hashes  # a table's Cache rows read at most
        self.whole_after = whole_after
        self._lock = threading.Lock()
        self._hashes: _Hashes | None = None
        self._tables: dict[str, _Table] = {}  # per Cache name
        self._too_many_until = 0.0
        self._too_big: dict[str, float] = {}  # Cache tables with too many rows to read: not until this time
        self._ddl = 0  # this process's DDL running: every table "may be cached"
        self._generation = 0  # raised by this process's DDL and by whole reads: a table read before installs nothing

    def at(self, lease: SnapshotLease) -> SnapshotKeys:
        return SnapshotKeys(self, lease)

    # ---- readers -------------------------------------------------------------------------------------------

    def absent(self, info: TableInfo, keys: list[Key], conn: RawConnection, sts: int, catalog: int | None) -> bool:
        """True when no Cache row that snapshot ``sts`` sees has any of ``keys`` (whole keys, as the engine compares
        them) in ``info``; False when some may. ``catalog``: the engine's catalog version read with that snapshot
        (None: not known for it)."""
        if catalog is None or self._ddl or not keys or not eligible(info):
            return False
        if not all(type(v) is int for k in keys for v in k):
            return False
        wanted = [key_hash(info, key) for key in keys]
        # a hash already in the set answers "may be cached" whatever snapshot asks: no statement for hot keys
        hashes = self._hashes
        if hashes is not None and any(h in hashes.hashes for h in wanted):
            return False
        table = self._table(info, catalog)
        if table is not None and any(h in table.hashes for h in wanted):
            return False
        if hashes is None or hashes.covered < sts:
            hashes = self._catch_up(conn, sts)
            if hashes is None or any(h in hashes.hashes for h in wanted):
                return False
            table = self._table(info, catalog)  # read again: a whole read of the records drops the tables read before
        if table is None:
            table = self._read_table(info, conn, catalog)
            if table is None or any(h in table.hashes for h in wanted):
                return False
        return True

    def _table(self, info: TableInfo, catalog: int) -> _Table | None:
        table = self._tables.get(info.cache)
        return table if table is not None and table.entry == _entry(info) and table.catalog == catalog else None

    # ---- reading the records and the Cache -----------------------------------------------------------------

    def _catch_up(self, conn: RawConnection, sts: int) -> _Hashes | None:
        """S covering ``sts`` (read by this call if not yet), or None when it cannot be known now."""
        with self._lock:
            hashes = self._hashes
            if hashes is not None and hashes.covered >= sts:
                return hashes
            if hashes is None or hashes.added > max(self.whole_after, 2 * hashes.base):
                return self._read_whole(conn, sts)
            try:
                rows = conn.execute(f"SELECT DISTINCT h FROM tique.commits WHERE cts > {hashes.covered}").rows
            except DatabaseError:
                return None
            hashes.hashes.update(int(r[0]) for r in rows)
            hashes.added += len(rows)
            hashes.covered = sts  # after the hashes: a reader seeing it sees them
            return hashes

    def _read_whole(self, conn: RawConnection, sts: int) -> _Hashes | None:
        """Every record's hashes anew (under the lock): the checkpointer's trimmed records leave S."""
        if time.monotonic() < self._too_many_until:
            return None
        try:
            rows = conn.execute(f"SELECT DISTINCT h FROM tique.commits LIMIT {self.max_hashes + 1}").rows
        except DatabaseError:
            return None
        self._generation += 1
        self._tables = {}  # the Cache keys are read again, so that rows moved to Storage leave them too
        if len(rows) > self.max_hashes:
            self._hashes = None
            self._too_many_until = time.monotonic() + RETRY_TOO_MANY_S
            return None
        self._hashes = _Hashes(sts, {int(r[0]) for r in rows}, len(rows))
        return self._hashes

    def _read_table(self, info: TableInfo, conn: RawConnection, catalog: int) -> _Table | None:
        """The hashes of the keys of ``info``'s Cache rows, read now (see the module's docstring), installed unless
        DDL of this process or a whole read came meanwhile; None when they cannot be known."""
        generation = self._generation
        if time.monotonic() < self._too_big.get(info.cache, 0.0):
            return None
        try:
            rows = conn.execute(key_select(info, self.max_cache_rows + 1)).rows
        except DatabaseError:
            return None
        if len(rows) > self.max_cache_rows:  # not read at every key read: until the checkpointer has cleaned it
            self._too_big[info.cache] = time.monotonic() + RETRY_TOO_MANY_S
            return None
        try:
            # a stale entry may name a column of the table now under that name that holds no integers (or NULLs)
            table = _Table(_entry(info), catalog, {key_hash(info, tuple(int(v) for v in row)) for row in rows})
        except (TypeError, ValueError):
            return None
        with self._lock:
            if generation == self._generation and not self._ddl:
                self._tables[info.cache] = table
        return table

    # ---- this process's DDL --------------------------------------------------------------------------------

    @contextmanager
    def changing(self) -> Iterator[None]:
        """Around DDL of this process: tables may be renamed or re-created meanwhile; their Cache keys are read
        again after it."""
        self._forget_tables(+1)
        try:
            yield
        finally:
            self._forget_tables(-1)

    def _forget_tables(self, ddl: int) -> None:
        with self._lock:
            self._ddl += ddl
            self._generation += 1
            self._tables = {}


class SnapshotKeys:
    """RecordKeys asked for one transaction's snapshot (which a priority retry moves on), with the interface of
    CacheKeys the transaction uses. Only whole keys are answered."""

    def __init__(self, keys: RecordKeys, lease: SnapshotLease) -> None:
        self.keys = keys
        self.lease = lease

    def lacks(
        self, info: TableInfo, keys: Iterable[Key] | None, conn: RawConnection, positions: tuple[int, ...] = ()
    ) -> bool:
        if keys is None or (positions and positions != tuple(range(len(info.key)))):
            return False
        lease = self.lease
        catalog = lease.catalog_seen if lease.catalog_sts == lease.sts else None  # moved on since: not known
        return self.keys.absent(info, list(keys), conn, lease.sts, catalog)


def record_keys_for(enabled: bool = ENABLED) -> RecordKeys | None:
    return RecordKeys() if enabled else None
