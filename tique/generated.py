"""Generated keys: AUTO_INCREMENT, SERIAL / BIGSERIAL, GENERATED ... AS IDENTITY.

A column declared so takes the next value of its table's counter when an INSERT leaves it out or gives NULL.
The counters live in tique's C module (``tique.next_ids``), one per table, shared by every connection of the
engine, and hand out blocks under a mutex: concurrent inserters never get the same value. They are never
MonetDB SEQUENCEs (concurrent ``NEXT VALUE FOR`` corrupts MonetDB 11.41's write-ahead log).

A counter the engine has not seen since it started (a restart, a new table) is set past the largest value the
column holds in Storage or Cache - every version, committed or not, so no value a crashed transaction may have
used comes back. Values are unique and increase in the order they are handed out; an aborted transaction
leaves a gap. An explicit value is stored as given and moves the counter past it (as MySQL and SQLite do), so
later generated values do not collide with it. (One race remains: a counter not yet used since the engine
started is set from the stored values, which do not include an explicit row still buffered in another client;
such a collision is refused as a duplicate key, never stored.)
"""

from __future__ import annotations

from tique.catalog import TableInfo
from tique.engine.base import RawConnection
from tique.errors import NotSupportedError
from tique.names import quote


def allocate(conn: RawConnection, sequencer_kind: str, info: TableInfo, column: str, n: int) -> range:
    """``n`` fresh values for ``info``'s generated ``column``."""
    if sequencer_kind != "c":
        raise NotSupportedError(
            f"generated keys of {info.name!r} need tique's C module (sequencer='c'): the SQL sequencer has no "
            "safe counter (MonetDB's SEQUENCEs are unsafe under concurrency); give the key explicitly"
        )
    last = int(conn.execute(f"SELECT tique.next_ids({info.table_id}, {n}, -1)").scalar())
    if last == 0:  # the engine does not know this counter yet: start past every value the column holds
        lowest = conn.execute(
            f"SELECT MAX(m) FROM (SELECT MAX({quote(column)}) AS m FROM {info.storage} "
            f"UNION ALL SELECT MAX({quote(column)}) AS m FROM {info.cache}) AS tq_g"
        ).scalar()
        last = int(conn.execute(f"SELECT tique.next_ids({info.table_id}, {n}, {max(int(lowest or 0), 0)})").scalar())
    return range(last - n + 1, last + 1)


def after_bulk_load(conn: RawConnection, sequencer_kind: str, info: TableInfo) -> None:
    """Rows loaded straight into Storage carry their own keys: later generated values start after them."""
    if info.generated and sequencer_kind == "c":
        top = conn.execute(f"SELECT MAX({quote(info.generated[0])}) FROM {info.storage}").scalar()
        if top is not None:
            raise_past(conn, sequencer_kind, info, int(top))


def raise_past(conn: RawConnection, sequencer_kind: str, info: TableInfo, value: int) -> None:
    """An explicit ``value`` was inserted: later generated values start after it (a counter the engine does not
    know yet starts past the stored values anyway)."""
    if sequencer_kind == "c":
        conn.execute(f"SELECT tique.next_ids({info.table_id}, 0, {int(value)})")
