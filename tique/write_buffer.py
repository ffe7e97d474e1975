"""The write buffer (the paper's client-side write-set): one transaction's written rows per table, kept in the
client until a read or COMMIT needs them in the Cache, the SQL that sends them there, and the hashes the commit
record holds (written keys, UNIQUE claims, foreign-key references). It sends nothing itself: the transaction
(tique/transaction.py) decides when, and what a failed send means."""

from __future__ import annotations

import decimal
import hashlib
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from tique.catalog import Catalog, TableInfo
from tique.names import quote
from tique.params import literal
from tique.rewrite.reads import PointKeys
from tique.rewrite.values import coerce, int_bound, key_value
from tique.zero_signs import ZeroRow, negative_zero

Key = tuple[Any, ...]
INSERT_BATCH = 500  # rows per INSERT statement when flushing


def _hash64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big", signed=True)


def key_hash(table: TableInfo, key: Key) -> int:
    """The write-set entry of a key: 64 bits of a hash of (table, key), as a signed BIGINT. The table counts by
    its (schema, name), which every process agrees on, not by its id, which a stale catalog may hold an old one
    of (a DROP and CREATE elsewhere is caught by the schema-hash check at commit, see catalog.py)."""
    digest = hashlib.blake2b(f"{table.identity}\x00{key!r}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def unique_hash(table: TableInfo, columns: tuple[str, ...], values: tuple[Any, ...]) -> int:
    """The write-set entry of a UNIQUE value: namespaced by table and constraint (a prefix no key hash has), so two
    transactions claiming one value conflict at certification as two writers of one key do."""
    return _hash64(f"\x02unique\x00{table.identity}\x00{columns!r}\x00{values!r}")


def ref_hash(parent: str, key: Key) -> int:
    """Recorded by a transaction that wrote a row referencing parent key ``key`` (``parent`` a table identity)."""
    return _hash64(f"\x03ref\x00{parent}\x00{key!r}")


def gone_hash(parent: str, key: Key) -> int:
    """Recorded by a transaction that deleted (or re-keyed) key ``key`` of a table foreign keys reference."""
    return _hash64(f"\x04gone\x00{parent}\x00{key!r}")


@dataclass(frozen=True)
class RowMarks:
    """What a written row claims besides its key: its UNIQUE values' hashes and the parent keys it references
    (as (parent table identity, key))."""

    claims: tuple[int, ...] = ()
    refs: tuple[tuple[str, Key], ...] = ()


@dataclass
class TableWrites:
    table: TableInfo
    pending: dict[Key, tuple[tuple[Any, ...] | None, int]] = field(default_factory=dict)  # key -> (row|None, seq)
    live: dict[Key, bool] = field(default_factory=dict)  # every key written: does it exist for this txn now?
    flushed: bool = False  # some rows already reached the Cache
    unchecked: set[Key] = field(default_factory=set)  # inserted keys not yet checked against the snapshot
    marks: dict[Key, RowMarks] = field(default_factory=dict)  # live rows' UNIQUE claims and references
    # the columns in which the pending versions may differ from what the engine shows this transaction of their
    # keys (updates in place only); None: rows may also appear or vanish (an insert, a delete, a key changed)
    touched: set[str] | None = field(default_factory=set)


@dataclass
class Savepoint:
    """One table's buffer state at the keys a statement changes, from before it: restore() undoes the statement."""

    buffer: WriteBuffer
    entry: TableWrites
    existed: bool
    before: dict[Key, tuple[Any, Any, Any]]
    fresh: set[Key]

    def restore(self) -> None:
        entry = self.entry
        for key, (pending, live, marks) in self.before.items():
            _restore(entry.pending, key, pending)
            _restore(entry.live, key, live)
            _restore(entry.marks, key, marks)
        entry.unchecked -= self.fresh
        if not self.existed and not entry.live and not entry.flushed:
            del self.buffer.writes[entry.table.qualified]


class WriteBuffer:
    """A transaction's writes, per table (by qualified name)."""

    def __init__(self, txid: int) -> None:
        self.txid = txid
        self.writes: dict[str, TableWrites] = {}
        self.seq = 0  # statements buffered: versions of one key keep their statements' order
        self.refs: set[int] = set()  # foreign-key entries of the commit record (record_set)
        self.probes: set[int] = set()

    @property
    def read_only(self) -> bool:
        """No key written (a write statement that matched no row writes nothing)."""
        return not any(entry.live for entry in self.writes.values())

    def entry(self, table: TableInfo) -> TableWrites:
        entry = self.writes.get(table.qualified)
        if entry is None:
            entry = self.writes[table.qualified] = TableWrites(table)
        elif entry.table is not table and entry.table != table and not entry.pending:
            # the transaction's own ALTER sent the rows of the old shape first (Connection._ddl): later rows have
            # the new one. Rows still pending keep the old, and their flush fails as another session's ALTER
            entry.table = table
        return entry

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def has_pending(self, tables: Iterable[str]) -> bool:
        return any(t in self.writes and self.writes[t].pending for t in tables)

    def pending(self, tables: Iterable[str] | None = None) -> list[TableWrites]:
        """The entries of the given tables (all when None) holding rows not yet in the Cache."""
        names = list(self.writes) if tables is None else [t for t in tables if t in self.writes]
        return [self.writes[n] for n in names if self.writes[n].pending]

    def to_flush(
        self, reads: Iterable[str], point_keys: PointKeys, params: dict[str, str], names: frozenset[str] | None = None
    ) -> list[str]:
        """The tables whose pending writes must reach the Cache before this read (or a write's read). ``names``:
        a SELECT that reads no column but these (names_read) need not see pending updates of other columns: the
        rows it would find are the same without them (Delivery's SUM(ol_amount) after its UPDATE of
        ol_delivery_d), and they go later, with more rows, in one statement."""
        pinned = dict(point_keys)
        return [
            t
            for t in reads
            if t in self.writes
            and self.writes[t].pending
            and (t not in pinned or self._pending_match(t, pinned[t], params))
            and (names is None or self.writes[t].touched is None or not names.isdisjoint(self.writes[t].touched))
        ]

    def in_cache(self) -> frozenset[str]:
        """Tables some of whose versions written by this transaction are in the Cache already."""
        return frozenset(n for n, e in self.writes.items() if e.flushed)

    def _pending_match(self, table: str, slots: tuple[str, ...], params: dict[str, str]) -> bool:
        """Could a pending write of ``table`` have the key values the read pins?"""
        # the key as the SQL literals the statement will compare, None where it pins no value
        wanted = tuple(params[s] if s else None for s in slots)
        entry = self.writes[table]
        # integer literals parsed once, not once per pending key (Delivery's order lines by order)
        pins = [(i, _int_literal(entry.table.key_types[i], w)) for i, w in enumerate(wanted) if w is not None]
        if pins and all(type(w) is int for _, w in pins):
            # integer key columns pinned to integer literals (their pending values are ints): every key column
            # pinned is the typed key, found by one lookup (a NewOrder's reads of stock); some, the pinned values
            # compared in C with each pending key's (Delivery's order lines by order)
            target = tuple(w for _, w in pins)
            if len(pins) == len(wanted):
                return target in entry.pending
            get = itemgetter(*(i for i, _ in pins))
            return (target if len(pins) > 1 else target[0]) in map(get, entry.pending)
        return any(all(_pin_may_equal(key[i], w) for i, w in pins) for key in entry.pending)

    def forget(self, name: str) -> None:
        """Drop table ``name``'s writes (the table was dropped by this session)."""
        self.writes.pop(name, None)

    # ---- staging one statement -----------------------------------------------------------------------------

    def savepoint(self, info: TableInfo, keys: Sequence[Key]) -> Savepoint:
        """The state of ``info``'s entry at ``keys`` before a statement changes them (see Savepoint)."""
        existed = info.qualified in self.writes
        entry = self.entry(info)
        before = {k: (entry.pending.get(k), entry.live.get(k), entry.marks.get(k)) for k in keys}
        return Savepoint(self, entry, existed, before, {k for k in keys if k not in entry.unchecked})

    def stage_inserted(self, entry: TableWrites, rows: Sequence[tuple[Key, tuple[Any, ...]]], marks: Any) -> None:
        seq = self.next_seq()
        for key, row in rows:
            entry.pending[key] = (row, seq)
            entry.live[key] = True
        if rows:
            entry.touched = None
        _mark(entry, marks)

    def stage_updated(
        self,
        entry: TableWrites,
        in_place: Sequence[tuple[Key, tuple[Any, ...]]],
        moved: Sequence[tuple[Key, Key, tuple[Any, ...]]],
        marks: dict[Key, RowMarks],
        columns: Iterable[str],
    ) -> None:
        """Rows updated with their key kept, and rows whose key changed (old key, new key, row): the old key
        gets a tombstone, the new one the row. ``columns``: those the UPDATE sets."""
        seq = self.next_seq()
        if moved:
            entry.touched = None
        elif in_place and entry.touched is not None:
            entry.touched.update(columns)
        for key, row in in_place:
            entry.pending[key] = (row, seq)
            entry.live[key] = True
        for old, _, _ in moved:
            entry.pending[old] = (None, seq)
            entry.live[old] = False
            entry.marks.pop(old, None)
        for _, new_key, row in moved:
            entry.pending[new_key] = (row, seq)
            entry.live[new_key] = True
        _mark(entry, marks)

    def stage_deleted(self, entry: TableWrites, keys: Sequence[Key]) -> None:
        seq = self.next_seq()
        if keys:
            entry.touched = None
        for key in keys:
            entry.pending[key] = (None, seq)
            entry.live[key] = False
            entry.marks.pop(key, None)

    # ---- flush SQL -----------------------------------------------------------------------------------------

    def cache_inserts(self, entry: TableWrites) -> Iterator[str]:
        """The INSERT statements that send ``entry``'s pending versions to its Cache table, in batches."""
        return self._inserts(entry.table, list(entry.pending.items()))

    def zeros_again(
        self, info: TableInfo, pending: dict[Key, tuple[tuple[Any, ...] | None, int]], keys: list[Key], seq: int
    ) -> list[str]:
        """INSERTs of the versions of ``keys`` in ``pending`` (a flush's), once more as versions of statement
        ``seq``: they outrank the first copies (see Transaction.zero_signs_checked)."""
        return list(self._inserts(info, [(key, (pending[key][0], seq)) for key in keys]))

    def _inserts(self, info: TableInfo, items: list[tuple[Key, tuple[tuple[Any, ...] | None, int]]]) -> Iterator[str]:
        cols = ", ".join(quote(c) for c in info.stored_names) + ", tq_txid, tq_seq, tq_deleted"
        for start in range(0, len(items), INSERT_BATCH):
            values = ", ".join(
                self._cache_row(info, key, row, seq) for key, (row, seq) in items[start : start + INSERT_BATCH]
            )
            yield f"INSERT INTO {info.cache} ({cols}) VALUES {values}"

    @staticmethod
    def negative_zero(entry: TableWrites) -> bool:
        """Does one of ``entry``'s pending versions hold a REAL or DOUBLE -0.0 (tique/zero_signs.py)?"""
        floats = entry.table.float_positions
        return bool(floats) and negative_zero(
            row[i] for row, _ in entry.pending.values() if row is not None for i in floats
        )

    def zeros(self, entry: TableWrites) -> tuple[int, list[tuple[Key, ZeroRow]]] | None:
        """The REAL and DOUBLE zeros of ``entry``'s pending versions, to check once they are in the Cache
        (tique/zero_signs.py: a zero written into a slot a deleted row left keeps that row's sign): the first
        pending statement (every version of the table sent before came from an earlier one), and each version
        holding a zero as a condition on its key with its zeros. None when they hold no zero."""
        info = entry.table
        floats = [(i, info.stored_names[i]) for i in info.float_positions]
        if not floats:
            return None
        rows: list[tuple[Key, ZeroRow]] = []
        for key, (row, _) in entry.pending.items():
            if row is None:
                continue
            zeros = {n: negative_zero((row[i],)) for i, n in floats if isinstance(row[i], float) and row[i] == 0.0}
            if zeros:
                match = " AND ".join(f"{quote(k)} = {literal(v)}" for k, v in zip(info.key, key))
                rows.append((key, (f"({match})", zeros)))
        if not rows:
            return None
        return min(seq for _, seq in entry.pending.values()), rows

    @staticmethod
    def sent(entry: TableWrites) -> None:
        """``entry``'s pending versions are in the Cache now."""
        entry.pending.clear()
        entry.touched = set()
        entry.flushed = True

    def _cache_row(self, info: TableInfo, key: Key, row: tuple[Any, ...] | None, seq: int) -> str:
        if row is None:  # a tombstone carries its key only
            values = [None] * len(info.stored_names)
            for k, v in zip(info.key, key):
                values[info.stored_names.index(k)] = v
            deleted = "TRUE"
        else:
            values = list(row)
            deleted = "FALSE"
        return "(" + ", ".join(literal(v) for v in values) + f", {self.txid}, {seq}, {deleted})"

    # ---- the commit record ---------------------------------------------------------------------------------

    def write_set(self) -> list[int]:
        """Every written key's hash and every live written row's UNIQUE claims (what a priority retry reserves)."""
        hashes = {key_hash(e.table, k) for e in self.writes.values() for k in e.live}
        hashes.update(h for e in self.writes.values() for k, m in e.marks.items() if e.live.get(k) for h in m.claims)
        return sorted(hashes)

    def reference_sets(self, catalog: Catalog) -> tuple[set[int], set[int]]:
        """The foreign-key entries of the commit record: (references, probes). A writer of a child row records
        ref_hash(parent key) and looks for gone_hash(parent key) in concurrent records; a deleter of a referenced
        key records gone_hash and looks for ref_hash. So a child insert and a concurrent parent delete cannot
        both commit, while concurrent children of one parent never conflict (references match only probes)."""
        refs: set[int] = set()
        probes: set[int] = set()
        deleted = any(not live for e in self.writes.values() for live in e.live.values())
        referenced = {(f.schema, f.table) for t in catalog.all() for f in t.foreign_keys} if deleted else set()
        for e in self.writes.values():
            for key, marks in e.marks.items():
                if e.live.get(key):
                    refs.update(ref_hash(p, k) for p, k in marks.refs)
                    probes.update(gone_hash(p, k) for p, k in marks.refs)
            if (e.table.schema, e.table.name) in referenced:
                for key, live in e.live.items():
                    if not live:
                        refs.add(gone_hash(e.table.identity, key))
                        probes.add(ref_hash(e.table.identity, key))
        return refs, probes

    def record_set(self, catalog: Catalog) -> list[int]:
        """The hashes the commit record holds: the write-set and the foreign-key entries (reference_sets)."""
        refs, self.probes = self.reference_sets(catalog)
        written = set(self.write_set())
        self.refs = refs - written  # recorded, but matched against others' probes only
        return sorted(written | refs)


def _mark(entry: TableWrites, marks: dict[Key, RowMarks]) -> None:
    for key, row_marks in marks.items():
        if row_marks.claims or row_marks.refs:
            entry.marks[key] = row_marks
        else:
            entry.marks.pop(key, None)


def _restore(state: dict[Key, Any], key: Key, value: Any) -> None:
    """Put back one key's state in a write buffer; None means the key was not there."""
    if value is None:
        state.pop(key, None)
    else:
        state[key] = value


def typed_key(info: TableInfo, values: Sequence[Any]) -> Key:
    """A key as the engine compares it: each value brought to its column's type (a DATE given as a datetime is
    that date, a DECIMAL has its scale, -0.0 is 0.0...), so equal keys hash and compare equal in Python too."""
    key = []
    for v, k, t in zip(values, info.key, info.key_types):
        if type(v) is int:  # most keys: what coerce would return, checked without it (a key is typed per row read)
            bound = int_bound(t)
            if -bound < v < bound:
                key.append(v)
                continue
        key.append(key_value(coerce(v, t, k)))
    return tuple(key)


def row_key(info: TableInfo, row: tuple[Any, ...]) -> Key:
    """The key of a stored row (``info.stored_names`` order)."""
    return typed_key(info, [row[i] for i in info.key_positions])


def show(info: TableInfo, key: Key) -> str:
    """A key as error messages name it: ``(k=1, j='a')``."""
    return "(" + ", ".join(f"{k}={v!r}" for k, v in zip(info.key, key)) + ")"


_INTEGER_LITERAL = re.compile(r"'?([+-]?[0-9]+)'?")


def _int_literal(sql_type: str, rendered: str) -> int | str:
    """An integer literal pinning an integer key column, as the int the engine compares; else the literal."""
    found = _INTEGER_LITERAL.fullmatch(rendered) if int_bound(sql_type) else None
    return int(found.group(1)) if found is not None else rendered


def _pin_may_equal(value: Any, pin: int | str) -> bool:
    """_may_equal, with an integer column's integer literal already parsed (exact, as Decimal compares it)."""
    if type(pin) is int and type(value) is int:
        return value == pin
    return _may_equal(value, str(pin))


def _may_equal(value: Any, rendered: str) -> bool:
    """Could the engine find key value ``value`` equal to the SQL literal ``rendered``? Exact for integer and
    string keys given as such; True (flush, to be safe) for anything else."""
    if isinstance(value, int) and not isinstance(value, bool):
        text = rendered.strip("'")
        if "e" in text.lower():
            return True  # a double: the engine compares in floating point, where distinct integers can be equal
        try:
            return decimal.Decimal(text) == value  # exact: a float would round big integers
        except decimal.InvalidOperation:
            return True
    if isinstance(value, str) and rendered.startswith("'") and "\\" not in rendered:  # an escape: spellings vary
        return literal(value) == rendered
    return True
