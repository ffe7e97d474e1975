"""Rows of tables nobody writes, kept by a process across its transactions (a client result cache with exact
invalidation, like Oracle's client result cache).

A transaction answers a read by the whole key from rows it holds (known_rows.py); those die with it. Tables that
are read by key all the time and written rarely (TPC-C's item: 10 reads per NewOrder, never written) would cost
an engine call per read in every transaction. Here a row read whole in one transaction answers later ones, as
long as no commit wrote its table in between, which the engine tells at each begin at no extra call:

- Each commit raises its tables' *write marks* to its commit timestamp inside its record statement, before it
  can be published (C ``tique.wrote``). So for a snapshot s taken before the marks are read, every commit that
  wrote table T and is visible at s has a timestamp <= T's mark.
- The begin statement reads the marks of the tables tracked here (``tique.last_write``, after the snapshot).
- Per table, the rows kept are valid for every snapshot in [lo, hi]: each was read at a snapshot in that range,
  and no commit with a timestamp in (lo, hi] wrote the table. A begin at snapshot s' whose mark m is <= hi shows
  that no commit in (hi, s'] wrote it either: hi becomes s'. A mark > hi drops the table's rows: lo = hi = s'.
- A transaction at snapshot s uses a row only when lo <= s <= hi, and adds one only if it read it at such an s
  and has written nothing to the table (its own versions are not the snapshot's).
- DDL and bulk loads bump the engine's catalog version; rows are kept per version, so any of them drops them all.
  A restart of the engine raises every mark to the last timestamp (the floor, C ``reset``).

Rows are shared only for tables found *quiet* (no begin saw a new write for QUIET_S seconds): a table written all
the time (TPC-C's stock, customer, warehouse) would only pay for fetching whole rows that no other transaction can
use - measured: with quiet meaning "two begins in a row", TPC-C's Payment read whole customer rows (21 columns)
between two writes and the mix got 6% slower. A quiet table that
keeps missing (WHOLE_AFTER reads found no shared row since it was last written) is read whole, once, if it fits:
then every key, and every absent one, is answered here until the next write (TPC-C's 100,000 items are read at
random: rows read one by one would take most of a run to cover them). It is read a part (WHOLE_PART rows, in key
order) per transaction: read at once, one transaction of each process waited for all of it (TPC-C's item over
MAPI: 1.1-1.5 s alone, about 3 s under load, the NewOrder p99 of a run with clients as processes). The parts are
kept until the last one comes, as long as the table's rows cover each part's snapshot: no commit wrote the table
between them.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tique.catalog import TableInfo
from tique.known_rows import MISSING, Key, Row

TRACKED = 32  # tables whose marks a begin reads (the most recently read by key)
QUIET_S = 1.0  # seconds with no write seen before a table's rows are shared
WHOLE_AFTER = 512  # misses of a quiet table, since its last write, before it is read whole
WHOLE_PART = 10_000  # rows of a quiet table read whole by one transaction


@dataclass
class _Table:
    info: TableInfo
    lo: int = -1
    hi: int = -2  # lo > hi: no snapshot is covered yet
    written_at: float = field(default_factory=time.monotonic)  # when a begin last saw a new write
    misses: int = 0
    whole: bool = False  # every row of the table is in ``rows``: a key not there has none
    too_big: bool = False  # read whole once, it did not fit: never again (tables seldom shrink)
    reading: bool = False  # a transaction of the process is reading a part of it whole: the others need not
    parts: list[tuple[Key, Row]] = field(default_factory=list)  # the parts of a whole read so far, in key order
    rows: OrderedDict[Key, Row | None] = field(default_factory=OrderedDict)


def _give_up_whole(table: _Table) -> None:
    """The table does not fit in the rows kept: it is never read whole again (called under SharedRows' lock)."""
    table.too_big, table.parts, table.misses = True, [], 0


class SharedRows:
    def __init__(self, max_rows: int) -> None:
        self.max_rows = max_rows  # per table, least recently used dropped first
        self._lock = threading.Lock()
        self._tables: dict[int, _Table] = {}
        self._order: OrderedDict[int, None] = OrderedDict()  # tracked table ids, least recently read first
        self._version: int | None = None  # the engine's catalog version the rows belong to
        self.hits = 0  # reads answered from here (for tests and benchmarks)

    def tracked(self) -> tuple[int, ...]:
        """The table ids whose write marks the next begin should read, in a stable order."""
        with self._lock:
            return tuple(sorted(self._order))

    def track(self, info: TableInfo) -> None:
        """A transaction read ``info`` by key: follow its writes from the next begin on."""
        with self._lock:
            if info.table_id in self._order:
                self._order.move_to_end(info.table_id)
                if self._tables[info.table_id].info != info:  # its spec changed (ALTER TABLE): start again
                    self._tables[info.table_id] = _Table(info)
                return
            self._order[info.table_id] = None
            self._tables[info.table_id] = _Table(info)
            while len(self._order) > TRACKED:
                dropped, _ = self._order.popitem(last=False)
                self._tables.pop(dropped, None)

    def validate(self, sts: int, version: int, marks: Mapping[int, int]) -> None:
        """A begin took snapshot ``sts`` under catalog ``version``, then read these tables' write ``marks``."""
        with self._lock:
            if version != self._version:
                self._drop_all(version)
            for table_id, mark in marks.items():
                table = self._tables.get(table_id)
                if table is None:
                    continue
                if table.lo <= table.hi and mark <= table.hi:
                    table.hi = max(table.hi, sts)
                else:
                    self._forget(table)
                    table.lo = table.hi = sts

    def shares(self, info: TableInfo, sts: int, version: int) -> bool:
        """May a transaction at ``sts`` use or add rows of ``info`` (the rows cover its snapshot)?"""
        table = self._tables.get(info.table_id)
        return (
            table is not None
            and version == self._version
            and table.info.columns == info.columns
            and table.lo <= sts <= table.hi
        )

    def quiet(self, info: TableInfo, sts: int, version: int) -> bool:
        """Is ``info`` quiet, so that a key read should fetch whole rows to share?"""
        table = self._tables.get(info.table_id)
        return (
            self.max_rows > 0
            and table is not None
            and time.monotonic() - table.written_at >= QUIET_S
            and self.shares(info, sts, version)
        )

    def get(self, info: TableInfo, key: Key, sts: int, version: int) -> Row | None:
        """The row of ``key`` at snapshot ``sts`` (None: there is none), or MISSING."""
        with self._lock:
            if not self.shares(info, sts, version):
                return MISSING  # type: ignore[no-any-return]
            table = self._tables[info.table_id]
            row = table.rows.get(key, None if table.whole else MISSING)
            if row is MISSING:
                table.misses += 1
                return row
            if key in table.rows:
                table.rows.move_to_end(key)
            self.hits += 1
            return row

    def wants_whole(self, info: TableInfo, sts: int, version: int) -> int | None:
        """Should a transaction at ``sts`` read a part of the quiet table ``info`` whole (it keeps missing)? The
        offset of the part it should read, in key order, or None. Yes to one transaction at a time, which must call
        ``end_whole`` after: the client threads of a process all miss at once: in a 4-client TPC-C run all four
        read item whole, 5.6-9.1 s each, where one read alone took 2.6 s."""
        with self._lock:
            table = self._tables.get(info.table_id)
            wanted = (
                table is not None
                and not table.whole
                and not table.too_big
                and not table.reading
                and table.misses >= WHOLE_AFTER
                and self.quiet(info, sts, version)
            )
            if not wanted:
                return None
            table.reading = True  # type: ignore[union-attr]
            return len(table.parts)  # type: ignore[union-attr]

    def refuse_whole(self, info: TableInfo) -> None:
        """The quiet table ``wants_whole`` offered holds more rows than are kept (its Storage does, less its Cache's
        rows): never read it whole (each part of a 1M-row table sorted it: 11 parts of 45-135 ms before the twelfth
        did not fit)."""
        with self._lock:
            table = self._tables.get(info.table_id)
            if table is not None:
                _give_up_whole(table)

    def end_whole(self, info: TableInfo) -> None:
        """The read ``wants_whole`` asked for is over (kept by ``put_part``, refused or failed)."""
        with self._lock:
            table = self._tables.get(info.table_id)
            if table is not None:
                table.reading = False

    def put_part(
        self, info: TableInfo, offset: int, found: Sequence[tuple[Key, Row]], last: bool, sts: int, version: int
    ) -> None:
        """The part of a whole read ``wants_whole`` asked for: rows ``offset`` on, in key order, at snapshot
        ``sts`` (``last``: the table has no more). Kept while every part's snapshot is covered by the table's rows
        (a write seen in between drops them: ``_forget``); the whole of them is kept by ``put_whole``."""
        with self._lock:
            table = self._tables.get(info.table_id)
            if table is None or not self.shares(info, sts, version) or offset != len(table.parts):
                return
            table.parts.extend(found)
            if len(table.parts) > self.max_rows:
                _give_up_whole(table)
                return
            if not last:
                return
            whole, table.parts = table.parts, []
        self.put_whole(info, whole, sts, version)

    def put_whole(self, info: TableInfo, found: Sequence[tuple[Key, Row]], sts: int, version: int) -> None:
        """Every row of ``info`` at snapshot ``sts``; kept only if they fit (a table that does not is not read
        whole again)."""
        with self._lock:
            if not self.shares(info, sts, version):
                return
            table = self._tables[info.table_id]
            table.misses = 0
            if len(found) > self.max_rows:
                table.too_big = True
                return
            table.rows = OrderedDict(found)
            table.whole = True

    def put(self, info: TableInfo, found: Sequence[tuple[Key, Row | None]], sts: int, version: int) -> None:
        """Rows a transaction at ``sts`` read whole (None: no row), with nothing of its own in the table."""
        with self._lock:
            if self.max_rows <= 0 or not self.shares(info, sts, version):
                return
            table = self._tables[info.table_id]
            for key, row in found:
                table.rows[key] = row
                table.rows.move_to_end(key)
            while len(table.rows) > self.max_rows:
                table.rows.popitem(last=False)
                table.whole = False

    def clear(self) -> None:
        """Forget every row (this process loaded rows into Storage)."""
        with self._lock:
            self._drop_all(self._version)

    def _drop_all(self, version: int | None) -> None:
        self._version = version
        for table in self._tables.values():
            self._forget(table)
            table.lo, table.hi = -1, -2

    @staticmethod
    def _forget(table: _Table) -> None:
        table.rows.clear()
        table.parts = []
        table.whole = False
        table.misses = 0
        table.written_at = time.monotonic()
