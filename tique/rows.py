"""Row building: the rows a write statement stores, as the engine would store them (defaults, generated keys,
sequence values, each value coerced to its column's type, NOT NULL), before any constraint check or buffering.
Built whole before anything is buffered: a statement is all or nothing."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

from tique.catalog import ROWID_BITS, SequenceDefault, TableInfo
from tique.database import Database
from tique.engine.base import RawConnection
from tique.errors import NotNullViolation, ProgrammingError
from tique.rewrite.values import coerce, key_value
from tique.rewrite.writes import DEFAULT
from tique.write_buffer import Key, row_key, typed_key

Row = tuple[Any, ...]
_rowids = itertools.count(1)  # hidden row ids of tables without a key: unique per process and transaction


def inserted_rows(
    db: Database, conn: RawConnection, info: TableInfo, columns: Sequence[str], source: Sequence[Row], txid: int
) -> tuple[list[tuple[Key, Row]], int | None]:
    """The stored rows of an INSERT of ``source`` (values for ``columns``), with their keys, and the first key
    the table's generated column took (None when none was generated: ``cursor.lastrowid``)."""
    positions = {c: i for i, c in enumerate(columns)}
    ids, first_id = _generated_ids(db, conn, info, positions, source)
    numbers = _sequence_values(conn, info, positions, source)
    rows: list[tuple[Key, Row]] = []
    for raw in source:
        full = []
        for col in info.columns:
            value = raw[positions[col.name]] if col.name in positions else col.default
            if value is DEFAULT:
                if col.default is None and col.name not in info.generated:  # as MonetDB: DEFAULT VALUES gives NULL
                    raise ProgrammingError(f"INSERT INTO: column {col.name!r} has no valid default value", "42000")
                value = col.default
            if value is None and col.name in info.generated:
                value = next(ids)
            if isinstance(value, SequenceDefault):
                value = next(numbers[col.name])
            value = coerce(value, col.sql_type, col.name, info.name)
            if value is None and col.not_null:
                raise NotNullViolation(f"NULL in column {col.name!r} of {info.name!r}, which is NOT NULL")
            full.append(value)
        if info.has_rowid:
            full.append((txid << ROWID_BITS) | next(_rowids) & ((1 << ROWID_BITS) - 1))
        row = _stored_key(info, tuple(full))
        rows.append((row_key(info, row), row))
    return rows, first_id


def updated_rows(info: TableInfo, selected: Sequence[Row]) -> tuple[list[tuple[Key, Row]], list[tuple[Key, Key, Row]]]:
    """The new rows of an UPDATE from its SELECT's rows (old key, then every column's new value): (rows keeping
    their key, (old key, new key, row) for rows whose key changes)."""
    nkey = len(info.key)
    in_place: list[tuple[Key, Row]] = []
    moved: list[tuple[Key, Key, Row]] = []
    for raw in selected:
        old_key = typed_key(info, raw[:nkey])
        new = list(raw[nkey:])
        for i, col in enumerate(info.columns):
            new[i] = coerce(new[i], col.sql_type, col.name, info.name)
            if new[i] is None and col.not_null:
                raise NotNullViolation(f"NULL in column {col.name!r} of {info.name!r}, which is NOT NULL")
        row = _stored_key(info, tuple(new))
        new_key = row_key(info, row)
        if new_key != old_key:
            moved.append((old_key, new_key, row))
        else:
            in_place.append((old_key, row))
    return in_place, moved


def _sequence_values(
    conn: RawConnection, info: TableInfo, positions: dict[str, int], source: Sequence[Row]
) -> dict[str, Iterator[int]]:
    """Per column with DEFAULT NEXT VALUE FOR s: the sequence's next values, one per row taking the default,
    fetched in one statement per 1000 (the engine evaluates NEXT VALUE FOR once per row)."""
    numbers: dict[str, Iterator[int]] = {}
    for col in info.columns:
        if not isinstance(col.default, SequenceDefault):
            continue
        at = positions.get(col.name)
        wanted = sum(1 for raw in source if at is None or raw[at] is DEFAULT)
        values: list[int] = []
        for start in range(0, wanted, 1000):
            rows = ", ".join("(0)" for _ in range(min(1000, wanted - start)))
            values += [int(r[0]) for r in conn.execute(f"SELECT {col.default} FROM (VALUES {rows}) AS tq_n(x)").rows]
        numbers[col.name] = iter(values)
    return numbers


def _generated_ids(
    db: Database, conn: RawConnection, info: TableInfo, positions: dict[str, int], source: Sequence[Row]
) -> tuple[Iterator[int], int | None]:
    """Values for the rows that leave the table's generated column out or NULL, from one counter call, and the
    first of them (``cursor.lastrowid``, as MySQL drivers report it)."""
    if not info.generated:
        return iter(()), None
    from tique.generated import allocate, raise_past

    column = info.generated[0]
    at = positions.get(column)
    explicit = [raw[at] for raw in source if at is not None and isinstance(raw[at], int)]
    if explicit:
        raise_past(conn, db.sequencer.kind, info, max(explicit))
    wanted = sum(1 for raw in source if at is None or raw[at] is None or raw[at] is DEFAULT)
    if not wanted:
        return iter(()), None
    ids = allocate(conn, db.sequencer.kind, info, column, wanted)
    return iter(ids), ids[0]


def _stored_key(info: TableInfo, row: Row) -> Row:
    """The row with its key columns as the engine compares them (-0.0 stored as 0.0): the snapshot's anti-join
    of Storage and Cache keys must never tell two equal keys apart (the soak found -0.0 and 0.0 both visible)."""
    names = info.stored_names
    positions = [names.index(k) for k in info.key]
    if not any(isinstance(row[i], float) and row[i] == 0.0 for i in positions):
        return row
    fixed = list(row)
    for i in positions:
        fixed[i] = key_value(fixed[i])
    return tuple(fixed)
