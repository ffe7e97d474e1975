"""Which keys of a table may have a row in its Cache table, kept by the one process that has an embedded database
open, so that a read by key of a key with none needs no Cache branch, and a read of a table with none at all is a
read of its Storage table alone (no Cache branch, no anti-join: MonetDB plans it as it would the bare table).

A snapshot read by key is Storage UNION ALL the key's visible Cache versions; each branch projects every column
whether or not it finds a row, so the Cache branch costs about as much as the Storage probe (a 17-column read of
TPC-C's stock at scale 1.0: 0.8 ms each). Most keys read have no Cache row at all: the checkpointer moves a
version to Storage within a second and deletes it from the Cache. For such a key the snapshot *is* its Storage
row, for every snapshot a running transaction can have:

- A version visible to snapshot s committed before s was taken, and its Cache row was written before its commit
  timestamp was taken (flush, then commit). That row stays until the checkpointer deletes it, which it does only
  after writing the key's newest version at or below its horizon to Storage; a running transaction's snapshot is
  at or above that horizon, so Storage then holds what the snapshot sees.
- The checkpointer changes a key's Storage row only while the version it moves is still in the Cache (it reads
  it, writes Storage, then deletes it), so a key with no Cache row has a Storage row no step is changing.

So the set kept here only has to be a superset of the keys with Cache rows. Keys are added before their rows are
sent (``sending``), and taken out only by a rebuild from the Cache table itself (``rebuild``: after the
checkpointer cleaned the table, or at a table's first read): a rebuild keeps every key whose rows were being
sent while it read (they may commit after its SELECT began). A set answers only for the table entry it was read
by (its id and key): a Cache table's name outlives its table, and an entry read before DDL (a checkpointer's run) may
read the table now under that name. Anything unsure (a table not built yet, DDL running, a Cache too large to read)
answers "may be cached", which costs only the Cache branch.

Only the process itself writes an embedded database's Cache rows when the kernel listens to no MAPI clients
(``tique serve`` does: then there is no CacheKeys). A table qualifies when every key column is an integer (keys
compare as the engine compares them, exactly) and it has a real key (not the hidden row id).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tique.catalog import TableInfo
from tique.engine.base import RawConnection
from tique.errors import DatabaseError
from tique.known_rows import Key
from tique.rewrite.values import int_bound

MAX_KEYS = 200_000  # a Cache with more rows than this is not read: its table answers "may be cached"


def eligible(info: TableInfo) -> bool:
    return not info.has_rowid and all(int_bound(t) for t in info.key_types)


def _identity(info: TableInfo) -> tuple[Any, ...]:
    """The table a set was read for. A Cache table's name outlives its table (DROP then CREATE, RENAME TO): an
    entry read before such DDL (a checkpointer's run, a plan) reads the table now under that name by its own key
    columns, which may be others, so its set answers only for that same entry."""
    return (info.table_id, info.key, info.key_types)


class _KeySet:
    """A table's keys that may have a Cache row, and the same keys projected on the key columns that reads pin
    (Delivery's order lines by order: the first three of four), each projection made at its first use and grown
    with the keys. Changed only under CacheKeys' lock; looked up without it."""

    def __init__(self, keys: set[Key]) -> None:
        self.keys = keys
        self._projections: dict[tuple[int, ...], set[Key]] = {}

    def add(self, keys: list[Key]) -> None:
        self.keys.update(keys)
        for positions, projected in self._projections.items():
            projected.update(tuple(k[i] for i in positions) for k in keys)

    def projection(self, positions: tuple[int, ...], lock: threading.Lock) -> set[Key]:
        found = self._projections.get(positions)
        if found is None:
            with lock:  # keys are added under the lock: none is missed while the projection is made
                found = self._projections.get(positions)
                if found is None:
                    found = self._projections[positions] = {tuple(k[i] for i in positions) for k in self.keys}
        return found


@dataclass(eq=False)  # each rebuild's own window: found in the list by identity (two with equal keys are two)
class _Building:
    added: set[Key] = field(default_factory=set)  # keys sent since the rebuild began


class CacheKeys:
    """The keys per Cache table (``TableInfo.cache``) that may have a row there; see the module's docstring."""

    def __init__(self, max_keys: int = MAX_KEYS) -> None:
        self.max_keys = max_keys
        self._lock = threading.Lock()
        self._keys: dict[str, tuple[tuple[Any, ...], _KeySet]] = {}  # built tables only: (_identity, keys)
        self._too_big: set[str] = set()  # tables whose Cache had too many rows at their last rebuild
        self._building: dict[str, list[_Building]] = {}
        self._sending: dict[str, Counter[Key]] = {}  # keys of rows being sent now (a multiset: several senders)
        self._generation = 0  # raised by DDL: a rebuild begun before it installs nothing
        self._ddl = 0  # DDL statements running: every table "may be cached"

    # ---- readers -------------------------------------------------------------------------------------------

    def absent(self, info: TableInfo, keys: Iterable[Key] | None, positions: tuple[int, ...] = ()) -> bool | None:
        """True: no Cache row of ``info`` has any of ``keys`` (``None``: no Cache row at all). False: some may.
        None: not known yet (the table was never built, or DDL changed it since): ``rebuild`` it to know.
        ``positions``: ``keys`` give the values of these key columns only (a read pinning part of the key), and
        a Cache row counts when its key has those values there."""
        if self._ddl:
            return False
        built = self._built(info)
        if built is None:
            return False if info.cache in self._too_big else None
        if keys is None:
            return not built.keys
        known = built.projection(positions, self._lock) if positions else built.keys
        return not any(k in known for k in keys)

    def _built(self, info: TableInfo) -> _KeySet | None:
        """The set read for this very table entry, if one is installed (a dict read: atomic under the GIL)."""
        built = self._keys.get(info.cache)
        return built[1] if built is not None and built[0] == _identity(info) else None

    # ---- writers -------------------------------------------------------------------------------------------

    @contextmanager
    def sending(self, rows: Iterable[tuple[TableInfo, Iterable[Key]]]) -> Iterator[None]:
        """Around a statement that writes Cache rows of these tables and keys: they count as cached from before it
        runs, and stay so (only a rebuild takes keys out)."""
        batch = [(info.cache, list(keys)) for info, keys in rows if eligible(info)]
        with self._lock:
            for name, keys in batch:
                built = self._keys.get(name)
                if built is not None:  # whatever table it was read for: more keys only cost a Cache branch
                    built[1].add(keys)
                for building in self._building.get(name, ()):
                    building.added.update(keys)
                self._sending.setdefault(name, Counter()).update(keys)
        try:
            yield
        except DatabaseError:
            self._sent(batch)
            raise
        # an interrupt: the statement may still run to its end in the engine, so its keys stay "being sent" for good
        else:
            self._sent(batch)

    def _sent(self, batch: list[tuple[str, list[Key]]]) -> None:
        with self._lock:
            for name, keys in batch:
                sending = self._sending[name]
                sending.subtract(keys)
                for k in keys:
                    if sending[k] <= 0:
                        del sending[k]

    @contextmanager
    def changing(self) -> Iterator[None]:
        """Around DDL: tables may be dropped, renamed or re-created under a Cache name meanwhile, so every set is
        forgotten, and no rebuild that began before it ends is installed."""
        self._forget_all(+1)
        try:
            yield
        finally:
            self._forget_all(-1)

    def _forget_all(self, ddl: int) -> None:
        with self._lock:
            self._ddl += ddl
            self._generation += 1
            self._keys.clear()
            self._too_big.clear()

    def rebuild(self, info: TableInfo, read_keys: Callable[[int], list[tuple[Any, ...]]]) -> bool:
        """Build ``info``'s set anew from ``read_keys(limit)`` (at most ``limit`` key tuples of its Cache rows, as
        the engine returns them). False when it was not installed: too many rows, or DDL meanwhile."""
        if not eligible(info):
            return False
        name = info.cache
        building = _Building()
        with self._lock:
            generation = self._generation
            building.added.update(self._sending.get(name, ()))  # sent before, maybe committed after the SELECT began
            self._building.setdefault(name, []).append(building)
        try:
            rows = read_keys(self.max_keys + 1)
            # a stale entry may name a column of the table now under the name that holds no integers (or NULLs)
            keys = {tuple(int(v) for v in row) for row in rows}
        except BaseException as exc:
            with self._lock:
                self._stop_building(name, building)
            if isinstance(exc, (TypeError, ValueError)):
                return False
            raise
        with self._lock:
            # in the same critical section as the install: a key sent after this would go to the old set
            self._stop_building(name, building)
            if generation != self._generation:
                return False
            if len(rows) > self.max_keys:
                self._keys.pop(name, None)
                self._too_big.add(name)  # until the checkpointer has cleaned it: not read at every key read
                return False
            self._keys[name] = (_identity(info), _KeySet(keys | building.added))
            self._too_big.discard(name)
            return True

    def _stop_building(self, name: str, building: _Building) -> None:
        self._building[name].remove(building)
        if not self._building[name]:
            del self._building[name]

    def lacks(
        self, info: TableInfo, keys: Iterable[Key] | None, conn: RawConnection, positions: tuple[int, ...] = ()
    ) -> bool:
        """``absent``, building the table's set through ``conn`` at its first use (or since DDL); False when the
        set cannot be known (the rebuild failed or found too many rows)."""
        keys = None if keys is None else list(keys)
        absent = self.absent(info, keys, positions)
        if absent is None:
            try:
                self.rebuild_from(info, conn)
            except DatabaseError:
                return False
            absent = self.absent(info, keys, positions)
        return bool(absent)

    def rebuild_from(self, info: TableInfo, conn: RawConnection) -> bool:
        """``rebuild``, reading the Cache table through ``conn``."""
        return self.rebuild(info, lambda limit: conn.execute(key_select(info, limit)).rows)

    def tracked(self, info: TableInfo) -> bool:
        """Has a rebuild of ``info`` run (since the last DDL)? The checkpointer rebuilds those it cleaned."""
        return self._built(info) is not None or info.cache in self._too_big


def cache_keys_of(conn: Any) -> CacheKeys | None:
    """The CacheKeys of the embedded kernel a raw connection is a session of; None over MAPI, or when the kernel
    also serves MAPI clients (their Cache writes are not seen here)."""
    return getattr(conn, "cache_keys", None)


def key_select(info: TableInfo, limit: int) -> str:
    """The statement a rebuild reads keys with: every Cache row's key (any transaction's, any outcome)."""
    cols = ", ".join(info.typed_sql(k) for k in info.key)
    return f"SELECT {cols} FROM {info.cache} LIMIT {limit}"
