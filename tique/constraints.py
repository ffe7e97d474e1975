"""Constraint checks of one transaction's writes, against its snapshot and its own buffered writes (the engine
checks none: tique's tables carry no constraints, see docs/INTERNALS.md): PRIMARY KEY duplicates, UNIQUE values
and FOREIGN KEYs (NO ACTION). Each check runs before a statement's rows are buffered, so a refused statement
leaves nothing behind; what certification must still catch (a concurrent writer) goes into the write-set as
RowMarks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import sqlglot

from tique.append_guard import cache_of, storage_of
from tique.catalog import TableInfo
from tique.engine.base import RawConnection
from tique.errors import ForeignKeyViolation, UniqueViolation
from tique.names import quote
from tique.params import literal
from tique.rewrite.dialect import MonetDB
from tique.rewrite.exact import read_value, text_sql
from tique.rewrite.snapshot import snapshot_sql
from tique.rewrite.template import Template
from tique.rewrite.values import coerce, key_value
from tique.write_buffer import Key, RowMarks, WriteBuffer, show, typed_key, unique_hash

if TYPE_CHECKING:
    from tique.append_guard import AppendGuard
    from tique.cache_keys import CacheKeys
    from tique.catalog import Catalog, ForeignKey
    from tique.record_keys import SnapshotKeys

CHECK_BATCH = 1000  # values per query checking UNIQUE and FOREIGN KEY constraints


class Constraints:
    """The checks of one transaction: ``slots`` gives its snapshot's slot values, ``flush`` sends a table's
    pending writes to the Cache (a check that reads the snapshot must see the transaction's own rows)."""

    def __init__(
        self,
        catalog: Catalog,
        conn: RawConnection,
        buffer: WriteBuffer,
        slots: Callable[[], dict[str, str]],
        flush: Callable[[list[str]], None],
        insert_check: str,
        cache_keys: CacheKeys | SnapshotKeys | None = None,
        append_guard: AppendGuard | None = None,
    ) -> None:
        self.catalog = catalog
        self.cache_keys = cache_keys
        self.append_guard = append_guard
        self.conn = conn
        self.buffer = buffer
        self.slots = slots
        self.flush = flush
        self.insert_check = insert_check

    def _rows(self, tables: Sequence[TableInfo], sql: str) -> list[tuple[Any, ...]]:
        """A check's read, kept from this process's appends to the tables whose strings it reads (append_guard.py):
        a check of integer keys reads no string."""
        rendered = Template.from_sql(sql).render(self.slots())
        read = [info.qualified for info in tables if info.names_strings(sql)]
        strings = [part(name) for name in read for part in (storage_of, cache_of)]
        if self.append_guard is None or not strings:
            return self.conn.execute(rendered).rows
        return self.append_guard.reading(strings, lambda: self.conn.execute(rendered).rows)

    # ---- PRIMARY KEY ---------------------------------------------------------------------------------------

    def check_new_keys(self, info: TableInfo, keys: Sequence[Key]) -> None:
        """An inserted key must not exist: neither in this transaction's writes nor in its snapshot."""
        if info.has_rowid or not keys:
            return
        if len(set(keys)) != len(keys):
            raise UniqueViolation(f"duplicate key in the rows inserted into {info.name!r}")
        entry = self.buffer.writes.get(info.qualified)
        unknown = []
        for key in keys:
            state = entry.live.get(key) if entry else None
            if state:
                raise UniqueViolation(f"duplicate key {show(info, key)} in table {info.name!r}")
            if state is None:
                unknown.append(key)
        if not unknown:
            return
        if self.insert_check == "flush":
            self.buffer.entry(info).unchecked.update(unknown)  # checked in one query when the rows are sent
            return
        self.check_absent(info, unknown)

    def _present(self, info: TableInfo, keys: Sequence[Key], tag: str = "", as_text: bool = False) -> str:
        """SQL for the snapshot's rows among ``keys`` (key columns only). Keys this transaction wrote are decided by
        its own records, so its own Cache versions are left out; the IN lists over-approximate."""
        preds = []
        for i, col in enumerate(info.key):
            values = ", ".join(literal(v) for v in sorted({k[i] for k in keys}, key=repr))
            preds.append(f"{{t}}{quote(col)} IN ({values})")
        # as_text: keys Python reads back, exactly (see exact.py); otherwise compared in SQL by the caller
        cols = ", ".join(text_sql(quote(k), info.stored_type(k)) if as_text else quote(k) for k in info.key)
        if self.cache_keys is not None and self.cache_keys.lacks(info, keys, self.conn):
            # no Cache row has any of them: Storage alone has the snapshot's (tique/cache_keys.py)
            snapshot = snapshot_sql(info, "point", preds, columns=info.key, tag=tag, cached=False, ranked=False)
        else:
            snapshot = snapshot_sql(info, "point", preds, own=False, columns=info.key, tag=tag)
        return f"SELECT {cols} FROM ({snapshot}) AS tq_dup{tag}"

    def _found(self, info: TableInfo, keys: Sequence[Key]) -> set[Key]:
        """Which of ``keys`` (none of which this transaction wrote) exist in the snapshot."""
        sql = self._present(info, keys, as_text=True)
        rows = self._rows([info], sql)
        found = {typed_key(info, [read_value(v, info.stored_type(k)) for v, k in zip(r, info.key)]) for r in rows}
        return found & set(keys)

    def check_absent(self, info: TableInfo, keys: Sequence[Key]) -> None:
        """None of ``keys`` exists in the snapshot (Python filters the over-approximation exactly)."""
        found = self._found(info, keys)
        clash = [k for k in keys if k in found]
        if clash:
            raise UniqueViolation(f"duplicate key {show(info, clash[0])} in table {info.name!r}")

    def check_all_absent(self, checks: Sequence[tuple[TableInfo, Sequence[Key]]]) -> None:
        """``check_absent`` for several tables in one query that counts exact matches per table; a table with
        one is checked again alone, to name the key."""
        if len(checks) == 1:
            self.check_absent(*checks[0])
            return
        branches = []
        for i, (info, keys) in enumerate(checks):
            exact = " OR ".join(
                "(" + " AND ".join(f"{quote(c)} = {literal(v)}" for c, v in zip(info.key, key)) + ")" for key in keys
            )
            present = self._present(info, keys, f"_{i}")  # distinct aliases per snapshot (see snapshot_tree)
            branches.append(f"SELECT {i} AS tq_t, COUNT(*) AS tq_n FROM ({present}) AS d{i} WHERE {exact}")
        counts = self._rows([info for info, _ in checks], " UNION ALL ".join(branches))
        for i, n in counts:
            if n:
                self.check_absent(*checks[int(i)])

    # ---- UNIQUE and FOREIGN KEY ----------------------------------------------------------------------------

    def constrain(
        self,
        info: TableInfo,
        rows: Sequence[tuple[Key, tuple[Any, ...]]],
        touched: Sequence[Key],
        gone: Sequence[Key],
        assigned: Sequence[str] | None = None,
    ) -> dict[Key, RowMarks]:
        """Check one statement's effect on ``info`` against its UNIQUE and FOREIGN KEY constraints: ``rows`` are
        the versions it writes, ``touched`` every key it changes, ``gone`` the keys it deletes or re-keys,
        ``assigned`` the columns an UPDATE sets (None: an INSERT; a constraint on columns it keeps needs no
        query: those values were checked when written). Raises IntegrityError before anything is buffered;
        returns each written row's marks for the write-set."""
        children = self.catalog.children(info) if gone else []
        if not children and (not rows or not (info.uniques or info.foreign_keys)):
            return {}
        changed = (lambda cols: True) if assigned is None else (lambda cols: bool(set(assigned) & set(cols)))
        claims = self._check_unique(info, rows, set(touched), changed)
        refs = self._check_references(info, rows, set(touched), set(gone), changed)
        if children:
            self._check_unreferenced(info, children, set(touched), set(gone))
        return {key: RowMarks(tuple(claims.get(key, ())), tuple(refs.get(key, ()))) for key, _ in rows}

    def _values(self, info: TableInfo, columns: Sequence[str], values: Sequence[Any]) -> tuple[Any, ...]:
        """Column values as the engine compares them (see typed_key)."""
        return tuple(key_value(coerce(v, info.stored_type(c), c)) for v, c in zip(values, columns))

    def _visible_rows(
        self, info: TableInfo, wanted: Sequence[tuple[tuple[str, ...], set[tuple[Any, ...]]]]
    ) -> list[tuple[Key, dict[str, Any]]]:
        """Rows of the snapshot, this transaction's writes included, whose ``columns`` may hold one of the given
        values (per (columns, values) pair; an over-approximation, filtered exactly by the caller): their key
        and those columns' values (only the columns of the pairs one query asked about: at most
        ``CHECK_BATCH`` values go into one query)."""
        if sum(len(vals) for _, vals in wanted) > CHECK_BATCH:
            found: list[tuple[Key, dict[str, Any]]] = []
            for cols, vals in wanted:
                ordered = sorted(vals, key=repr)
                for start in range(0, len(ordered), CHECK_BATCH):
                    found += self._visible_rows(info, [(cols, set(ordered[start : start + CHECK_BATCH]))])
            return found
        columns = list(dict.fromkeys(c for cols, vals in wanted if vals for c in cols))
        alternatives = []
        for cols, vals in wanted:
            if vals:
                alternatives.append(
                    " AND ".join(
                        f"{quote(c)} IN ({', '.join(literal(v) for v in sorted({t[i] for t in vals}, key=repr))})"
                        for i, c in enumerate(cols)
                    )
                )
        if not alternatives:
            return []
        if self.buffer.has_pending([info.qualified]):
            self.flush([info.qualified])  # its own earlier rows count too
        own = info.qualified in self.buffer.in_cache()
        # not a key predicate: it may filter Storage and the newest versions only, never below the ranking (an
        # older version holding the value must not win over a newer one that changed it)
        where = sqlglot.parse_one(" OR ".join(f"({a})" for a in alternatives), read=MonetDB)  # columns: per branch
        snapshot = snapshot_sql(info, "analytical", row_preds=[where], own=own, columns=columns, expose_rowid=True)
        names = list(info.key) + columns
        outputs = ", ".join(text_sql(quote(c), info.stored_type(c)) for c in names)
        sql = f"SELECT {outputs} FROM ({snapshot}) AS tq_uq"
        found = []
        for r in self._rows([info], sql):
            values = [read_value(v, info.stored_type(c)) for v, c in zip(r, names)]
            key = typed_key(info, values[: len(info.key)])
            found.append((key, dict(zip(columns, values[len(info.key) :]))))
        return found

    def _check_unique(
        self,
        info: TableInfo,
        rows: Sequence[tuple[Key, tuple[Any, ...]]],
        touched: set[Key],
        changed: Callable[[Sequence[str]], bool],
    ) -> dict[Key, list[int]]:
        """No written row's UNIQUE value (all columns non-NULL) is held by another row: one of the statement's, or
        one the snapshot and this transaction's writes show outside the keys the statement changes."""
        if not info.uniques or not rows:
            return {}
        names = info.stored_names
        claims: dict[Key, list[int]] = {}
        wanted: list[tuple[tuple[str, ...], set[tuple[Any, ...]]]] = []
        for cols in info.uniques:
            seen: dict[tuple[Any, ...], Key] = {}
            for key, row in rows:
                raw = [row[names.index(c)] for c in cols]
                if any(v is None for v in raw):
                    continue  # NULL is never equal to anything: no conflict (as MonetDB)
                value = self._values(info, cols, raw)
                if value in seen:
                    raise UniqueViolation(_unique_message(info, cols, value, "the rows this statement writes"))
                seen[value] = key
                claims.setdefault(key, []).append(unique_hash(info, cols, value))
            if changed(cols):
                wanted.append((cols, set(seen)))
        for key, held in self._visible_rows(info, wanted):
            if key in touched:
                continue  # the statement replaces or deletes this row
            for cols, values in wanted:
                if any(c not in held for c in cols):
                    continue  # the row came from a query about another constraint
                value = self._values(info, cols, [held[c] for c in cols])
                if value in values:
                    raise UniqueViolation(_unique_message(info, cols, value, f"row {show(info, key)}"))
        return claims

    def _check_references(
        self,
        info: TableInfo,
        rows: Sequence[tuple[Key, tuple[Any, ...]]],
        touched: set[Key],
        gone: set[Key],
        changed: Callable[[Sequence[str]], bool],
    ) -> dict[Key, list[tuple[str, Key]]]:
        """Each written row's non-NULL foreign key names a parent row that exists for this transaction."""
        refs: dict[Key, list[tuple[str, Key]]] = {}
        if not info.foreign_keys or not rows:
            return refs
        names = info.stored_names
        for fk in info.foreign_keys:
            own = (fk.schema, fk.table) == (info.schema, info.name)
            parent = info if own else self.catalog.get(fk.schema, fk.table)
            if parent is None:
                raise ForeignKeyViolation(f"FOREIGN KEY of {info.name!r}: table {fk.schema}.{fk.table} is gone")
            needed: dict[Key, Key] = {}
            for key, row in rows:
                raw = [row[names.index(c)] for c in fk.columns]
                if any(v is None for v in raw):
                    continue
                pkey = typed_key(parent, raw)
                refs.setdefault(key, []).append((parent.identity, pkey))
                if changed(fk.columns) or (parent is info and pkey in gone):
                    needed.setdefault(pkey, key)
            entry = self.buffer.writes.get(parent.qualified)
            state: dict[Key, bool | None] = {k: entry.live.get(k) if entry else None for k in needed}
            if parent is info:  # a self-reference: the statement's own rows count as they will be
                state.update({k: True for k, _ in rows if k in state})
                state.update({k: False for k in gone if k in state})
            unknown = [k for k, v in state.items() if v is None]
            found = self._found(parent, unknown) if unknown else set()
            missing = [k for k, v in state.items() if v is False or (v is None and k not in found)]
            if missing:
                raise ForeignKeyViolation(
                    f"FOREIGN KEY ({', '.join(fk.columns)}) of {info.name!r}: no row {show(parent, missing[0])} in "
                    f"{parent.name!r} (the row referencing it is {show(info, needed[missing[0]])}); insert the "
                    "referenced row first",
                )
        return refs

    def _check_unreferenced(
        self, info: TableInfo, children: Sequence[tuple[TableInfo, ForeignKey]], touched: set[Key], gone: set[Key]
    ) -> None:
        """No row (of the snapshot and this transaction's writes) references a key the statement deletes or
        re-keys: NO ACTION."""
        for child, fk in children:
            wanted = [(fk.columns, set(gone))]
            for key, held in self._visible_rows(child, wanted):
                if child is info and key in touched:
                    continue  # this very statement rewrites or deletes the referencing row (checked as a child)
                pkey = typed_key(info, [held[c] for c in fk.columns])
                if pkey in gone:
                    raise ForeignKeyViolation(
                        f"cannot delete or change the key of row {show(info, pkey)} of {info.name!r}: row "
                        f"{show(child, key)} of {child.name!r} references it (FOREIGN KEY ({', '.join(fk.columns)})); "
                        "delete or change the referencing rows first",
                    )


def _unique_message(info: TableInfo, columns: tuple[str, ...], value: tuple[Any, ...], holder: str) -> str:
    shown = ", ".join(f"{c}={v!r}" for c, v in zip(columns, value))
    return f"duplicate value ({shown}) for UNIQUE ({', '.join(columns)}) of table {info.name!r}: {holder} holds it"
