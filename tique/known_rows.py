"""The rows one transaction holds whole, and what each key read has learned.

A transaction's snapshot never changes under it, so the newest version of a key it has seen - a row it read
whole, a row it wrote, or the absence of the key - is what any later statement of the transaction finds there.
The transaction answers a KeyRead from such a row and computes a KeyUpdate on it with no engine call
(tique/rewrite/point.py). Rows are kept in ``TableInfo.stored_names`` order, with the values reads return.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tique.catalog import TableInfo
from tique.engine.base import Column

Key = tuple[Any, ...]
Row = tuple[Any, ...]
MISSING: Any = object()  # no version of the key is known (None: the key is known to hold no row)


@dataclass
class Learned:
    """What running one key read (a cached plan, shared by every transaction of the process) has shown:
    ``columns``, the result columns it returns (so a row held in the client can answer it); ``whole``, that an
    UPDATE of the row it read followed, so the read fetches every column (the UPDATE then needs no read)."""

    columns: list[Column] | None = None
    whole: bool = False


@dataclass
class KnownRows:
    _rows: dict[str, tuple[TableInfo, dict[Key, Row | None]]] = field(default_factory=dict)
    _readers: dict[tuple[str, Key], Learned] = field(default_factory=dict)
    _version: int | None = None  # the process's catalog version the rows were held under

    def at(self, version: int) -> KnownRows:
        """These rows, forgotten if DDL ran in the process since (a new catalog ``version``): it takes effect at once,
        and may change a table's data and leave its definition as it was (a column dropped and added again, two
        columns swapped by renames)."""
        if version != self._version:
            self.clear()
            self._version = version
        return self

    def get(self, info: TableInfo, key: Key) -> Row | None:
        """The row of ``key`` (None: no row), or MISSING. A row kept for an older definition of the table (DDL
        since) is not the table's row any more."""
        held = self._rows.get(info.qualified)
        if held is None or not _same_definition(held[0], info):
            return MISSING  # type: ignore[no-any-return]
        return held[1].get(key, MISSING)

    def put(self, info: TableInfo, key: Key, row: Row | None) -> None:
        held = self._rows.get(info.qualified)
        if held is None or not _same_definition(held[0], info):
            held = self._rows[info.qualified] = (info, {})
        held[1][key] = row

    def read_by(self, info: TableInfo, key: Key, learned: Learned) -> None:
        """A key read ran in the engine for ``key`` (see Learned.whole)."""
        self._readers[(info.qualified, key)] = learned

    def reader(self, info: TableInfo, key: Key) -> Learned | None:
        return self._readers.get((info.qualified, key))

    def clear(self) -> None:
        """Forget everything: the snapshot moved (a priority retry), or this session ran DDL."""
        self._rows.clear()
        self._readers.clear()


def _same_definition(held: TableInfo, info: TableInfo) -> bool:
    return held is info or (held.table_id == info.table_id and held.columns == info.columns)
