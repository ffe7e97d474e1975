"""Statements a transaction may run on a row it already holds, with no engine call: a SELECT of plain columns and
an UPDATE of simple assignments, each of one table by its whole key.

A transaction's snapshot never changes under it, so a row it has read whole, or written itself, is the row every
later statement of the transaction would find (transaction.py keeps them: KnownRows). The shapes here are the
ones tique can answer exactly as the engine would: the key pinned by parameters (compared as the engine
compares them, see ``natural``), plain columns out, and new values that are a parameter, a literal, another
column, or an integer or DECIMAL column plus or minus a number (Python's integers and decimals are exact, and
values.coerce rounds and refuses as MonetDB does). Anything else runs in the engine, as before.

Nothing here touches the engine.
"""

from __future__ import annotations

import datetime
import decimal
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from sqlglot import exp

from tique.catalog import Lookup, TableInfo
from tique.names import column_ref, ident, source_name
from tique.rewrite.exact import Decode, wrap_outputs
from tique.rewrite.reads import ReadOptions, key_predicates, snapshot_reads, where_conjuncts
from tique.rewrite.snapshot import snapshot_tree
from tique.rewrite.template import STS, TXID, Template, slot_name
from tique.rewrite.values import DECIMALS, int_bound, python_value, sql_type

# An operand: ("s", parameter slot) or ("v", a literal's Python value)
Item = tuple[str, Any]

_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT", "HUGEINT")


MAX_KEYS = 1000  # keys a read may name (the product of its IN lists) to be answered from held rows


class CacheFirst:
    """How often a read's Cache statement answered all its keys lately (a moving average, about the last ten
    tries). A miss costs the Cache statement and then the union, more than the union alone, and a hit saves about
    as much as a miss costs: below one hit in two the read goes to the union straight away, and tries the Cache
    again once in 16. Threads race on it harmlessly: it only chooses between two correct forms."""

    def __init__(self) -> None:
        self.rate = 1.0
        self.skipped = 0

    def worth_trying(self) -> bool:
        if self.rate >= 0.5:
            return True
        self.skipped += 1
        return self.skipped % 16 == 0

    def count(self, hit: bool) -> None:
        self.rate = 0.9 * self.rate + (0.1 if hit else 0.0)


@dataclass(frozen=True)
class KeyRead:
    """A SELECT of plain columns of one table by its whole key: each key column equal to a parameter, or IN a
    list of parameters (the keys read are every combination)."""

    table: TableInfo
    key_slots: tuple[tuple[str, ...], ...]  # per key column (in key order), the parameters it is compared with
    outputs: tuple[int, ...]  # per output, its column's position in ``table.stored_names``
    full_decode: Decode
    every_decode: Decode
    # instead of ``full`` when not None: every visible version of the keys, ranked by the client (newest_versions)
    versions: Template | None = None
    versions_decode: Decode | None = None
    # as ``versions``, for keys no Cache row has (tique/cache_keys.py): their Storage rows alone, one per key, with
    # no version columns (nothing to rank)
    stored: Template | None = None
    # as ``versions``, the visible Cache versions alone: a key with one needs no Storage row; with
    # ``versions_decode`` (Transaction._cache_first)
    cached: Template | None = None
    # ``full`` and ``every_part`` before they become snapshots: made when first used (most plans never use them, and
    # each costs milliseconds to print; an UPDATE's or DELETE's plan carries a KeyRead too)
    full_tree: exp.Select | None = field(default=None, repr=False, compare=False)
    every_tree: exp.Select | None = field(default=None, repr=False, compare=False)
    options: ReadOptions = field(default_factory=ReadOptions, repr=False, compare=False)
    cache_first: CacheFirst = field(default_factory=lambda: CacheFirst(), repr=False, compare=False)

    @cached_property
    def full(self) -> Template:
        """Every stored column of the same rows, read exactly, ranked by the engine: the rows, to keep."""
        assert self.full_tree is not None
        return Template.from_tree(snapshot_reads(self.full_tree.copy(), self._lookup, self.options).tree)

    def every_part(self, offset: int, rows: int) -> Template:
        """Every stored column of ``rows`` rows from ``offset`` on, in key order, read exactly: a quiet table read
        whole a part per transaction (shared_rows.py), so that no one transaction waits for all of it; only read by
        a transaction that wrote none of the table."""
        assert self.every_tree is not None
        tree = self.every_tree.copy()
        source = source_name(tree.find(exp.From).this)  # type: ignore[union-attr]
        tree = tree.order_by(*[column_ref(c, source) for c in self.table.key]).limit(rows).offset(offset)
        options = replace(self.options, own=frozenset())
        return Template.from_tree(snapshot_reads(tree, self._lookup, options).tree)

    @cached_property
    def held_slots(self) -> tuple[str, ...]:
        """Every parameter a key column is compared with: their values, as given, find the rows held."""
        return tuple(s for slots in self.key_slots for s in slots)

    def _lookup(self, _schema: str | None, _name: str) -> TableInfo:
        return self.table  # the one table the trees read

    @property
    def whole_row(self) -> bool:
        """Does the SELECT itself read every stored column?"""
        return set(self.outputs) == set(range(len(self.table.stored_names)))

    def stored_row(self, output: Sequence[Any]) -> tuple[Any, ...]:
        """A result row of a ``whole_row`` read, in stored column order."""
        row: list[Any] = [None] * len(self.table.stored_names)
        for value, position in zip(output, self.outputs):
            row[position] = value
        return tuple(row)


@dataclass(frozen=True)
class Assign:
    """A stored column's new value: ``keep`` it, ``set`` it to an item, ``copy`` another column (``source``), or
    ``add`` ``sign`` times an item to a number column (``source``)."""

    kind: str
    item: Item | None = None
    source: int = -1
    sign: int = 1


@dataclass(frozen=True)
class KeyUpdate:
    """An UPDATE of one row by its whole key whose new values tique can compute from the row."""

    key_slots: tuple[str, ...]  # the parameter each key column equals
    assigns: tuple[Assign, ...]  # per column of ``table.stored_names``


def _conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    """The conjuncts of a WHERE, through parentheses, in order (without recursion: a chain of 2,000 ANDs nests
    2,000 deep)."""
    found: list[exp.Expression] = []
    todo = [] if node is None else [node.this if isinstance(node, exp.Where) else node]
    while todo:
        node = todo.pop()
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.And):
            todo += (node.expression, node.this)
        else:
            found.append(node)
    return found


def _own_column(node: exp.Expression, alias: str, info: TableInfo) -> str | None:
    """The stored name of a column of ``info`` that ``node`` names (bare or qualified by ``alias``), else None."""
    if not isinstance(node, exp.Column) or isinstance(node.this, exp.Star) or node.args.get("db"):
        return None
    if node.table and ident(node.args.get("table")) != alias:
        return None
    name = ident(node)
    return name if name in info.column_names else None


def _parameters(nodes: Sequence[exp.Expression]) -> tuple[str, ...] | None:
    names = tuple(slot_name(n) for n in nodes)
    return None if any(n is None or n in (STS, TXID) for n in names) else names  # type: ignore[return-value]


def key_slots(
    where: exp.Expression | None, alias: str, info: TableInfo, lists: bool = False
) -> tuple[tuple[str, ...], ...] | None:
    """Per key column, the parameters it is compared with, when the WHERE is exactly that: an equality with a
    parameter (or with ``lists``, IN a list of parameters) per key column, nothing else."""
    slots: dict[str, tuple[str, ...]] = {}
    for pred in _conjuncts(where):
        found: list[tuple[str | None, tuple[str, ...] | None]] = []
        if isinstance(pred, exp.EQ):
            found = [
                (_own_column(c, alias, info), _parameters([v]))
                for c, v in [(pred.this, pred.expression), (pred.expression, pred.this)]
            ]
        elif lists and isinstance(pred, exp.In) and not pred.args.get("query") and pred.expressions:
            found = [(_own_column(pred.this, alias, info), _parameters(pred.expressions))]
        name, params = next(((n, p) for n, p in found if n and p), (None, None))
        if name is None or params is None or name not in info.key or name in slots:
            return None
        slots[name] = params
    if set(slots) != set(info.key):
        return None
    return tuple(slots[k] for k in info.key)


def _only(node: exp.Expression, allowed: set[str]) -> bool:
    """Does ``node`` set no clause but ``allowed`` ones?"""
    return all(key in allowed or value in (None, [], False) for key, value in node.args.items())


def _single_table(select: exp.Select, lookup: Lookup) -> tuple[exp.Table, TableInfo] | None:
    from_ = select.args.get("from_") or select.args.get("from")
    table = from_.this if from_ is not None else None
    if not isinstance(table, exp.Table) or not table.name or not _only(table, {"this", "db", "alias"}):
        return None
    info = lookup(ident(table.args.get("db")) or None, ident(table))
    if info is None or info.kind != "tx" or info.has_rowid:
        return None
    return table, info


def key_read(select: exp.Expression, lookup: Lookup, options: ReadOptions) -> KeyRead | None:
    """The KeyRead of a user SELECT (before its tables become snapshots), if it has that shape."""
    if not isinstance(select, exp.Select) or not _only(select, {"expressions", "from", "from_", "where"}):
        return None
    found = _single_table(select, lookup)
    if found is None:
        return None
    table, info = found
    alias = ident(source_name(table))
    slots = key_slots(select.args.get("where"), alias, info, lists=True)
    if slots is None or math.prod(len(s) for s in slots) > MAX_KEYS:
        return None
    names = list(info.stored_names)
    outputs: list[int] = []
    for node in select.expressions:
        if isinstance(node, exp.Star):
            outputs += [names.index(c) for c in info.column_names]
            continue
        inner = node.this if isinstance(node, exp.Alias) else node
        column = _own_column(inner, alias, info)
        if column is None:
            return None
        outputs.append(names.index(column))
    every = exp.select(*[column_ref(c, source_name(table)) for c in names]).from_(table.copy())
    full = every.copy()
    full.set("where", select.args["where"].copy())
    types = [info.column(c).sql_type for c in names]
    decode, every_decode = wrap_outputs(full, types), wrap_outputs(every, types)
    one_key = all(len(s) == 1 for s in slots)  # no IN list: the newest version alone (``_versions``)
    versions = _versions(full, info, options, one_key=one_key)
    versions_decode = None if versions is None else wrap_outputs(versions, [*types, None, None, None])
    stored = _versions(full, info, options, cached=False)
    if stored is not None:
        wrap_outputs(stored, types)  # the stored columns of ``versions``, read the same way (versions_decode)
    cached = _versions(full, info, options, stored=False, one_key=one_key)
    if cached is not None:
        wrap_outputs(cached, [*types, None, None, None])  # as ``versions``
    return KeyRead(
        info, slots, tuple(outputs), decode, every_decode, None if versions is None else Template.from_tree(versions),
        versions_decode, None if stored is None else Template.from_tree(stored),
        None if cached is None else Template.from_tree(cached), full, every, options,
    )  # fmt: skip


def _versions(
    full: exp.Select,
    info: TableInfo,
    options: ReadOptions,
    cached: bool = True,
    stored: bool = True,
    one_key: bool = False,
) -> exp.Select | None:
    """Every visible version of the keys ``full`` reads, for the client to rank: MonetDB's ROW_NUMBER over the
    few versions of a key cost a quarter to a third of a wide point read (17 columns: 4.0-5.8 against 2.7-4.7 ms
    without it, measured on a busy machine). Only when every key column is an integer, so that Python groups
    versions by key exactly as the engine partitions them, and when every condition of the WHERE is a key
    predicate the snapshot's branches filter by (a long IN list is not copied into them: then the versions of
    every key would come back). ``one_key`` (no IN list) with the Cache's versions: the newest alone, by the same
    order the client ranks with (a top-1 sort, unlike a window over every key)."""
    if options.formulation not in ("auto", "point") or not all(int_bound(t) for t in info.key_types):
        return None
    table = full.find(exp.Table)
    if table is None:
        return None
    preds = key_predicates(table, info)
    conjuncts = where_conjuncts(full.args.get("where"))
    if len(preds) != len(conjuncts) or any(all(p is not c for p in preds) for c in conjuncts):
        return None
    own = options.owns(info.qualified)
    tree = snapshot_tree(
        info,
        "point",
        preds,
        latest=options.latest,
        own=own,
        tag="_1",
        ranked=False,
        cached=cached,
        stored=stored,
        alone=True,
    )
    if cached and one_key:
        # the newest alone, ranked by the engine as the client would (newest_by_key): a hot row's versions pile up
        # between checkpoints (TPC-C's warehouse: 27 on average, one warehouse at scale 0.1, one client, a checkpoint
        # a second), each one sent, decoded and compared for nothing. Neither column is NULL here (the transaction's
        # own versions carry the largest cts), so MonetDB's own NULL placement: its top-N with DESC NULLS FIRST
        # picks wrong rows (rewrite/ordering.py)
        order = [exp.Ordered(this=exp.column(c), desc=True, nulls_first=False) for c in ("tq_cts", "tq_seq")]
        tree = tree.order_by(*order).limit(1)
    return tree


def newest_versions(info: TableInfo, rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """Per key, the newest of its versions (as ``_versions`` reads them: the stored columns, then tq_deleted,
    tq_cts and tq_seq), unless it is a tombstone."""
    return [row for row in newest_by_key(info, rows).values() if row is not None]


def newest_by_key(info: TableInfo, rows: Sequence[Sequence[Any]]) -> dict[tuple[Any, ...], tuple[Any, ...] | None]:
    """Per key with a version in ``rows``, the stored columns of its newest (None: a tombstone); the engine's
    ranking (snapshot.py, ``_newest``) done here: newest commit first, then the later statement, NULL before any
    value. A Storage row ranks as commit 0, below every Cache version."""
    width = len(info.stored_names)
    newest: dict[tuple[Any, ...], tuple[tuple[Any, ...], Sequence[Any]]] = {}
    for row in rows:
        key = tuple(row[i] for i in info.key_positions)
        cts, seq = row[width + 1], row[width + 2]
        order = (cts is None, cts or 0, seq is None, seq or 0)
        kept = newest.get(key)
        if kept is None or order > kept[0]:
            newest[key] = (order, row)
    return {key: None if row[width] else tuple(row[:width]) for key, (_, row) in newest.items()}


def _item(node: exp.Expression) -> Item | None:
    while isinstance(node, exp.Paren):
        node = node.this
    name = slot_name(node)
    if name is not None:
        return None if name in (STS, TXID) else ("s", name)
    try:
        return ("v", python_value(node))
    except Exception:
        return None


def _family(sql_type_text: str) -> str:
    base = sql_type(sql_type_text).base
    return "NUMBER" if base in (*_INTEGERS, "DECIMAL") else "FLOAT" if base in ("DOUBLE", "REAL") else base


def _assign(value: exp.Expression, alias: str, info: TableInfo, target: str) -> Assign | None:
    while isinstance(value, exp.Paren):
        value = value.this
    names = list(info.stored_names)
    column = _own_column(value, alias, info)
    if column is not None:
        # across families the engine converts by its own rules (a DOUBLE becomes the text 1e+10, a string a number
        # or an error), which values.coerce does not follow: such a copy runs in the engine
        if _family(info.column(column).sql_type) != _family(info.column(target).sql_type):
            return None
        return Assign("copy", source=names.index(column))
    if isinstance(value, (exp.Add, exp.Sub)):
        left = _own_column(value.this, alias, info)
        right = _item(value.expression)
        if left is None or right is None:
            return None
        return Assign("add", right, names.index(left), 1 if isinstance(value, exp.Add) else -1)
    item = _item(value)
    return Assign("set", item) if item is not None else None


def key_update(tree: exp.Update, info: TableInfo) -> KeyUpdate | None:
    """The KeyUpdate of a user UPDATE of ``info``, if it has that shape (no FROM, no key column assigned)."""
    if not _only(tree, {"this", "expressions", "where"}) or info.has_rowid:
        return None
    target = tree.this
    if not isinstance(target, exp.Table) or not _only(target, {"this", "db", "alias"}):
        return None
    alias = ident(source_name(target))
    slots = key_slots(tree.args.get("where"), alias, info)
    if slots is None:
        return None
    assigns = {name: Assign("keep") for name in info.stored_names}
    for eq in tree.expressions:
        name = _own_column(eq.this, alias, info) if isinstance(eq, exp.EQ) else None
        if name is None or name in info.key:
            return None
        assign = _assign(eq.expression, alias, info, name)
        if assign is None:
            return None
        assigns[name] = assign
    return KeyUpdate(tuple(p for (p,) in slots), tuple(assigns[n] for n in info.stored_names))


# ---- running them on a row -----------------------------------------------------------------------------------


def natural(value: Any, sql_type_text: str) -> bool:
    """Is ``value`` of the Python type the column's values read as (None included)? Only such values are compared
    and stored by tique itself: a value of another type is converted by the engine, whose rules stay there."""
    if value is None:
        return True
    base = sql_type(sql_type_text).base
    kind = type(value)
    if base in _INTEGERS:
        return kind is int
    if base == "DECIMAL":
        return kind is int or (kind is decimal.Decimal and value.is_finite())
    if base == "DOUBLE":
        # isinstance: a float parameter is a values.ParameterFloat; NaN and infinity do not even parse in the engine
        return isinstance(value, float) and math.isfinite(value)
    if base == "BOOLEAN":
        return kind is bool
    if base == "VARCHAR":
        return kind is str and "\x00" not in value  # the engine refuses the statement as it parses it
    if base == "DATE":
        return kind is datetime.date
    if base == "TIME":
        return kind is datetime.time and value.tzinfo is None
    if base == "TIMESTAMP":
        return kind is datetime.datetime and value.tzinfo is None
    return False  # REAL (32 bits), BLOB


def _value(item: Item, values: dict[str, Any]) -> Any:
    return values[item[1]] if item[0] == "s" else item[1]


def computable(update: KeyUpdate, info: TableInfo, values: dict[str, Any]) -> bool:
    """Are the UPDATE's parameters and literals all of their columns' Python types? Otherwise the engine converts
    them - and may refuse the statement whether or not it finds a row."""
    for assign, name in zip(update.assigns, info.stored_names):
        if assign.kind == "set":
            assert assign.item is not None
            if not natural(_value(assign.item, values), info.column(name).sql_type):
                return False
        elif assign.kind == "add":
            assert assign.item is not None
            operand = _value(assign.item, values)
            kind = sql_type(info.column(info.stored_names[assign.source]).sql_type)
            if kind.base not in (*_INTEGERS, "DECIMAL"):
                return False
            if not (operand is None or type(operand) is int or (kind.base == "DECIMAL" and _finite_decimal(operand))):
                return False
            if _finite_decimal(operand) and -operand.as_tuple().exponent > kind.scale:
                # the engine brings the column to the operand's scale in the column's own width: near the top of
                # the column's range that overflows there, though the exact sum rounds back into the column
                return False
    return True


def _finite_decimal(value: Any) -> bool:
    return type(value) is decimal.Decimal and value.is_finite()


def new_values(update: KeyUpdate, info: TableInfo, row: Sequence[Any], values: dict[str, Any]) -> list[Any] | None:
    """The row's new stored values (before values.coerce, as the engine's would be), for a ``computable``
    UPDATE; None when a sum would overflow the engine's arithmetic, which then says how."""
    out: list[Any] = []
    for assign in update.assigns:
        if assign.kind == "keep":
            out.append(row[len(out)])
        elif assign.kind == "copy":
            out.append(row[assign.source])
        elif assign.kind == "set":
            assert assign.item is not None
            out.append(_value(assign.item, values))
        else:
            assert assign.item is not None
            total = _sum(assign, row[assign.source], _value(assign.item, values))
            if total is _OVERFLOW:
                return None
            out.append(total)
    return out


_OVERFLOW = object()
_HUGE = 2**127  # MonetDB computes in at most 128 bits (HUGEINT; a DECIMAL as a scaled integer)


def _sum(assign: Assign, old: Any, operand: Any) -> Any:
    """``old + sign * operand`` of an integer or DECIMAL column, exactly (``computable`` checked the types);
    _OVERFLOW when the sum (a DECIMAL's at the larger scale of its operands) leaves the engine's 128 bits: the
    engine then fails the statement in its own words."""
    if old is None or operand is None:
        return None
    if isinstance(old, decimal.Decimal) or isinstance(operand, decimal.Decimal):
        left, right = decimal.Decimal(old), decimal.Decimal(operand)
        # in 100 digits (Python's default context keeps 28: a DECIMAL(38) sum would be rounded)
        total = DECIMALS.add(left, DECIMALS.multiply(assign.sign, right))
        scale = max(0, -left.as_tuple().exponent, -right.as_tuple().exponent)  # type: ignore[operator]
        if abs(DECIMALS.scaleb(total, scale)) >= _HUGE or abs(DECIMALS.scaleb(left, scale)) >= _HUGE:
            return _OVERFLOW
        return total
    total = old + assign.sign * operand
    return _OVERFLOW if abs(total) >= _HUGE else total
