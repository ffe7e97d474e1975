"""Reads: every reference to a transactional table becomes its snapshot, as a subquery under the same name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from tique.catalog import TableInfo
from tique.rewrite.snapshot import snapshot_tree
from tique.rewrite.template import slot_name

Lookup = Callable[[str | None, str], TableInfo | None]
# Per table read by key equality on parameters only: (table, the parameter slot of each key column, in key
# order). A transaction need not flush pending writes of such a table before the read unless one has that key.
PointKeys = tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class Reads:
    tree: exp.Expression
    reads: set[str]
    analytical: bool  # some table got the analytical formulation
    point_keys: PointKeys


@dataclass(frozen=True)
class ReadOptions:
    formulation: str = "auto"  # auto | point | analytical
    latest: bool = False  # negative control: no snapshot bound
    expose_rowid: frozenset[str] = frozenset()  # tables whose hidden row id the statement needs (writes)
    own: frozenset[str] | None = None  # tables the transaction has written (None: assume all of them)


def _ident(node: exp.Expression | None) -> str:
    from tique.rewrite.writes import ident

    return ident(node)


def _is_value(node: exp.Expression) -> bool:
    """A literal, a parameter slot, or an expression of those only (no columns, no subqueries)."""
    if isinstance(node, (exp.Column, exp.Subquery, exp.Select)):
        return False
    return all(not isinstance(n, (exp.Column, exp.Select)) for n in node.walk())


def _conjuncts(where: exp.Expression | None) -> list[exp.Expression]:
    if where is None:
        return []
    node = where.this if isinstance(where, exp.Where) else where
    return list(node.flatten()) if isinstance(node, exp.And) else [node]


def key_predicates(table: exp.Table, info: TableInfo) -> list[exp.Expression]:
    """Conjuncts of the enclosing SELECT's WHERE that constrain only this table's key columns by values."""
    select = table.find_ancestor(exp.Select)
    if select is None or table.find_ancestor(exp.Join, exp.From) is None:
        return []
    alias = table.alias_or_name
    from_ = select.args.get("from_") or select.args.get("from")
    sources = ([from_.this] if from_ else []) + [j.this for j in select.args.get("joins") or []]
    single_source = len(sources) == 1
    key = set(info.key)
    found: list[exp.Expression] = []
    for pred in _conjuncts(select.args.get("where")):
        if isinstance(pred, exp.EQ):
            col, val = (
                (pred.this, pred.expression) if isinstance(pred.this, exp.Column) else (pred.expression, pred.this)
            )
            candidates = [col] if isinstance(col, exp.Column) and _is_value(val) else []
        elif isinstance(pred, exp.In) and isinstance(pred.this, exp.Column) and pred.expressions:
            candidates = [pred.this] if all(_is_value(v) for v in pred.expressions) else []
        else:
            candidates = []
        for col in candidates:
            owner = col.table
            if _ident(col) in key and (owner == alias or (not owner and single_source)):
                found.append(pred)
    return found


def _point_slots(info: TableInfo, preds: list[exp.Expression]) -> tuple[str, ...] | None:
    """The parameter slot each key column is equal to, when the predicates pin every one that way."""
    slots: dict[str, str] = {}
    for pred in preds:
        if not isinstance(pred, exp.EQ):
            continue
        col, val = (pred.this, pred.expression) if isinstance(pred.this, exp.Column) else (pred.expression, pred.this)
        name = slot_name(val)
        if isinstance(col, exp.Column) and name and name not in ("sts", "txid"):
            slots[_ident(col)] = name
    if all(k in slots for k in info.key):
        return tuple(slots[k] for k in info.key)
    return None


def snapshot_reads(tree: exp.Expression, lookup: Lookup, options: ReadOptions) -> Reads:
    """Replace every transactional table in ``tree`` by its snapshot. Returns the tree, the tables read, whether
    any got the analytical formulation, and which are read by their full key (see PointKeys)."""
    analytical = False
    point: dict[str, tuple[str, ...] | None] = {}
    cte_names = {cte.alias for cte in tree.find_all(exp.CTE)}
    read: set[str] = set()
    for table in list(tree.find_all(exp.Table)):
        if not table.name or (not table.db and table.name in cte_names):
            continue
        if isinstance(table.parent, (exp.Insert, exp.Update, exp.Delete, exp.Create, exp.Schema)):
            continue  # a write's or DDL's target, not a read
        info = lookup(_ident(table.args.get("db")) or None, _ident(table))
        if info is None or info.kind != "tx":
            continue
        preds = key_predicates(table, info)
        formulation = options.formulation
        if formulation == "auto":
            formulation = "point" if preds else "analytical"
        analytical = analytical or formulation == "analytical"
        pinned = _point_slots(info, preds) if formulation == "point" else None
        point[info.name] = pinned if info.name not in point else None  # read twice: no shortcut
        own = options.own is None or info.name in options.own
        snap = snapshot_tree(
            info, formulation, preds, expose_rowid=info.name in options.expose_rowid, latest=options.latest, own=own
        )
        alias = table.alias_or_name
        table.replace(exp.Subquery(this=snap, alias=exp.TableAlias(this=exp.to_identifier(alias))))
        read.add(info.name)
    keys = tuple((name, slots) for name, slots in point.items() if slots is not None)
    return Reads(tree, read, analytical, keys)
