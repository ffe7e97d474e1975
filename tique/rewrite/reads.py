"""Reads: every reference to a transactional table becomes its snapshot, as a subquery under the same name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from sqlglot import exp

from tique.catalog import Lookup, TableInfo
from tique.names import cte_names, ident, names_cte, source_name
from tique.rewrite.lists import MAX_PUSHED_VALUES, is_lifted
from tique.rewrite.ordering import nulls_order_under_limits
from tique.rewrite.snapshot import snapshot_tree
from tique.rewrite.template import slot_name
from tique.rewrite.views import expand_views

# Per table read by key equality on parameters: (table, the parameter slot of each key column in key order, ""
# for a column no parameter pins). A transaction need not flush pending writes of such a table before the read
# unless one has those values in the pinned columns.
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
    schema: str | None = None  # the session's current schema (SET SCHEMA) for unqualified names; None: the default
    cached: bool = True  # False: point reads of Storage alone, for keys no Cache row has (tique/cache_keys.py)
    stored: frozenset[str] = frozenset()  # tables no Cache row has at all: read as their Storage rows alone
    temporary: frozenset[str] = frozenset()  # the session's temporary tables: an unqualified name is one of them
    # True: the query's filters stay above each snapshot, behind its LIMIT, so the engine evaluates them on the
    # snapshot's rows alone; by default they also filter Storage rows before the anti-join removes overridden
    # ones, which is faster but evaluates them on rows no longer in the snapshot (a CAST may fail on those)
    exact_filters: bool = False
    # False: outputs are left as the engine types them (an export: the engine writes them, nothing reads them back)
    exact_outputs: bool = True

    def owns(self, table: str) -> bool:
        """Does a snapshot of ``table`` (schema.name) include the transaction's own Cache versions?"""
        return self.own is None or table in self.own


def _is_value(node: exp.Expression) -> bool:
    """A literal, a parameter slot, or an expression of those only (no columns, no subqueries)."""
    if isinstance(node, (exp.Column, exp.Subquery, exp.Select)):
        return False
    return all(not isinstance(n, (exp.Column, exp.Select)) for n in node.walk())


def where_conjuncts(where: exp.Expression | None) -> list[exp.Expression]:
    """The conjuncts of a WHERE as key_predicates reads them (a parenthesised one stays whole)."""
    if where is None:
        return []
    node = where.this if isinstance(where, exp.Where) else where
    return list(node.flatten()) if isinstance(node, exp.And) else [node]


def names_read(tree: exp.Expression, lookup: Lookup) -> frozenset[str] | None:
    """Every name a user statement spells (before rewriting), when the columns it reads are among them: None when
    it reads some it does not name (a star other than COUNT(*)'s, a NATURAL JOIN) or names a source whose columns
    are not in its text (a view, a CTE, a plain or system table). A read need not wait for the transaction's
    pending updates of columns it does not read (WriteBuffer.to_flush)."""
    for star in tree.find_all(exp.Star):
        if not isinstance(star.parent, exp.Count):
            return None
    if any(join.args.get("method") for join in tree.find_all(exp.Join)):
        return None
    for table in tree.find_all(exp.Table):
        info = lookup(ident(table.args.get("db")) or None, ident(table)) if table.name else None
        if info is None or info.kind != "tx" or info.has_rowid:
            return None
    return frozenset(ident(node) for node in tree.find_all(exp.Identifier))


def _sources(select: exp.Select) -> list[exp.Expression]:
    """The tables and subqueries of a SELECT's FROM and JOINs."""
    from_ = select.args.get("from_") or select.args.get("from")
    return ([from_.this] if from_ else []) + [j.this for j in select.args.get("joins") or []]


def _long_list(pred: exp.Expression) -> bool:
    """Does ``pred`` hold an IN list too long to copy into a snapshot's branches? Each copy is printed and parsed
    again (a 200k-value list took 71 s to plan); the query's own WHERE still filters by it."""
    return any(len(n.expressions) > MAX_PUSHED_VALUES or is_lifted(n) for n in pred.find_all(exp.In))


def _called(table: exp.Table) -> str:
    """The name a statement's columns qualify this table by, as MonetDB folds it (its alias, or else its name)."""
    return ident(source_name(table))


def _qualifier(col: exp.Column) -> str:
    """The table name a column is qualified by, as MonetDB folds it ("" if none): ``X.a`` is x's, ``"X".a`` is
    not."""
    return ident(col.args.get("table"))


def key_predicates(table: exp.Table, info: TableInfo) -> list[exp.Expression]:
    """Conjuncts of the enclosing SELECT's WHERE that constrain only this table's key columns by values."""
    select = table.find_ancestor(exp.Select)
    if select is None or table.find_ancestor(exp.Join, exp.From) is None:
        return []
    alias = _called(table)
    single_source = len(_sources(select)) == 1
    key = set(info.key)
    found: list[exp.Expression] = []
    for pred in where_conjuncts(select.args.get("where")):
        if isinstance(pred, exp.EQ):
            col, val = (
                (pred.this, pred.expression) if isinstance(pred.this, exp.Column) else (pred.expression, pred.this)
            )
            candidates = [col] if isinstance(col, exp.Column) and _is_value(val) else []
        elif isinstance(pred, exp.In) and isinstance(pred.this, exp.Column) and pred.expressions:
            pushable = not _long_list(pred) and all(_is_value(v) for v in pred.expressions)
            candidates = [pred.this] if pushable else []
        else:
            candidates = []
        for col in candidates:
            owner = _qualifier(col)
            if ident(col) in key and (owner == alias or (not owner and single_source)):
                found.append(pred)
    return found


_UNSAFE = (exp.Subquery, exp.Select, exp.AggFunc, exp.Window, exp.Rand, exp.Star)


def _owner(col: exp.Column, alias: str, info: TableInfo, others: list[TableInfo | None]) -> bool:
    """Does ``col`` name a column of this table (qualified by its alias, or unqualified and no other source of
    the same SELECT can have it)?"""
    name = ident(col).lower()
    if name not in {c.lower() for c in info.column_names}:
        return False
    if col.table:
        return _qualifier(col) == alias
    return all(o is not None and name not in {c.lower() for c in o.column_names} for o in others)


def _filters(table: exp.Table, lookup: Lookup) -> tuple[list[exp.Expression], list[TableInfo | None]]:
    """Conjuncts that may filter this table's rows before the rest of the query (of the WHERE unless an outer join
    may NULL-extend the table, and of the table's own inner or LEFT JOIN's ON), and what the SELECT's other
    sources are (None: not a tique table)."""
    if not isinstance(table.parent, (exp.From, exp.Join)) or not isinstance(table.parent.parent, exp.Select):
        return [], []
    select = table.parent.parent
    others: list[TableInfo | None] = []
    for src in _sources(select):
        if src is table:
            continue
        known = lookup(ident(src.args.get("db")) or None, ident(src)) if isinstance(src, exp.Table) else None
        others.append(known)
    joins = select.args.get("joins") or []
    sides = {str(j.args.get("side") or "").upper() for j in joins}
    own_join = table.parent if isinstance(table.parent, exp.Join) else None
    own_side = str(own_join.args.get("side") or "").upper() if own_join else ""
    candidates: list[exp.Expression] = []
    if not (sides & {"RIGHT", "FULL"}) and own_side not in ("LEFT", "FULL"):
        candidates += where_conjuncts(select.args.get("where"))
    if own_join is not None and own_side in ("", "LEFT") and own_join.args.get("on") is not None:
        candidates += where_conjuncts(own_join.args["on"])
    return candidates, others


def row_predicates(table: exp.Table, info: TableInfo, lookup: Lookup) -> list[exp.Expression]:
    """Conjuncts that filter this table's rows alone and may also filter them before the rest of the query (see
    _filters). Only for the analytical formulation, where they filter Storage before the anti-join (see
    snapshot.py)."""
    candidates, others = _filters(table, lookup)
    alias = _called(table)

    def alone(pred: exp.Expression) -> bool:
        cols = list(pred.find_all(exp.Column))
        if not cols or _long_list(pred) or any(isinstance(n, _UNSAFE) for n in pred.walk()):
            return False
        return all(_owner(c, alias, info, others) for c in cols)

    return [p for p in candidates if alone(p)]


# what may make a subquery's answer differ between two evaluations in one statement, or need the outer query
_VOLATILE = (exp.Rand, exp.Anonymous, exp.Limit, exp.Offset, exp.TableSample, exp.With, exp.Window)


def _self_contained(query: exp.Expression, lookup: Lookup, ctes: frozenset[str]) -> bool:
    """Is ``query`` one SELECT over tique tables that names only their columns (no correlation with the outer
    query, no nested subquery) and answers the same each time it is evaluated in a statement?"""
    if not isinstance(query, exp.Select) or any(isinstance(n, _VOLATILE) for n in query.walk()):
        return False
    if any(isinstance(n, (exp.Select, exp.Subquery)) for n in query.walk() if n is not query):
        return False
    sources = _sources(query)
    infos: dict[str, TableInfo] = {}
    for src in sources:
        if not isinstance(src, exp.Table) or not src.name or names_cte(src, ctes):
            return False
        info = lookup(ident(src.args.get("db")) or None, ident(src))
        if info is None:  # MonetDB's own table: its columns are not known here
            return False
        infos[_called(src)] = info
    if len(infos) != len(sources):  # two sources under one name
        return False
    names = {c.lower() for info in infos.values() for c in info.column_names}
    for col in query.find_all(exp.Column):
        if isinstance(col.this, exp.Star):
            return False
        qualifier = _qualifier(col)
        if qualifier and (qualifier not in infos or col.args.get("db")):
            return False
        if not qualifier and ident(col).lower() not in names:
            return False
    return True


def semi_predicates(table: exp.Table, info: TableInfo, lookup: Lookup, ctes: frozenset[str]) -> list[exp.Expression]:
    """Conjuncts ``col IN (SELECT ...)`` on a column of this table whose subquery is self-contained (see
    _self_contained): for the analytical formulation, they may filter Storage rows before the anti-join, as the
    row filters do (the anti-join removes whole keys, and the query still applies them to every row), so that
    only the Storage rows the subquery admits are matched against the Cache (CH's Q20: a few hundred of 400k
    stock rows). Returned as they are: the caller copies them before any table in them becomes a snapshot."""
    candidates, others = _filters(table, lookup)
    alias = _called(table)
    found = []
    for pred in candidates:
        if not isinstance(pred, exp.In) or not isinstance(pred.this, exp.Column) or pred.expressions:
            continue
        query = pred.args.get("query")
        query = query.this if isinstance(query, exp.Subquery) else query
        if query is not None and _owner(pred.this, alias, info, others) and _self_contained(query, lookup, ctes):
            found.append(pred)
    return found


def _point_slots(info: TableInfo, preds: list[exp.Expression]) -> tuple[str, ...] | None:
    """The parameter slot each key column is equal to ("" when none), when the predicates pin some that way."""
    slots: dict[str, str] = {}
    for pred in preds:
        if not isinstance(pred, exp.EQ):
            continue
        col, val = (pred.this, pred.expression) if isinstance(pred.this, exp.Column) else (pred.expression, pred.this)
        name = slot_name(val)
        if isinstance(col, exp.Column) and name and name not in ("sts", "txid"):
            slots[ident(col)] = name
    if any(k in slots for k in info.key):
        return tuple(slots.get(k, "") for k in info.key)
    return None


def _column_uses(tree: exp.Expression) -> tuple[set[tuple[str, str]], set[str]] | None:
    """Every (qualifier, column) the statement names, lower-cased ("" when unqualified), and the qualifiers of its
    ``alias.*``; None when it may use any column of any table (``SELECT *``, NATURAL JOIN)."""
    named: set[tuple[str, str]] = set()
    starred: set[str] = set()
    for node in tree.walk():
        if isinstance(node, exp.Star) and not isinstance(node.parent, (exp.Column, exp.AggFunc)):
            return None
        if isinstance(node, exp.Join):
            if str(node.args.get("method") or "").upper() == "NATURAL":
                return None
            named.update(("", ident(u).lower()) for u in node.args.get("using") or [])
        elif isinstance(node, exp.Column):
            if isinstance(node.this, exp.Star):
                starred.add(node.table.lower())
            else:
                named.add((node.table.lower(), ident(node).lower()))
    return named, starred


def _needed(info: TableInfo, alias: str, uses: tuple[set[tuple[str, str]], set[str]] | None) -> tuple[str, ...] | None:
    """The columns of ``info`` the statement may read through ``alias``, over-approximated (any unqualified name
    counts): the snapshot carries only those, which MonetDB's short pipeline does not prune by itself."""
    if uses is None or alias.lower() in uses[1]:
        return None
    named = uses[0]
    return tuple(c for c in info.column_names if (alias.lower(), c.lower()) in named or ("", c.lower()) in named)


def _in_subquery_predicate(table: exp.Table) -> bool:
    """Is ``table`` read inside the subquery of an IN or EXISTS? MonetDB 11.41 answers such a predicate wrongly
    when its subquery returns no rows and holds an anti-join (NOT EXISTS), as the analytical snapshot does:
    ``x NOT IN (...)`` is false for every row, ``EXISTS (...)`` in a select list true. These snapshots remove
    overridden rows by a LEFT JOIN instead (see snapshot_tree)."""
    node: exp.Expression | None = table
    while node is not None:
        parent = node.parent
        if isinstance(parent, exp.Exists) or (isinstance(parent, exp.In) and node is parent.args.get("query")):
            return True
        node = parent
    return False


class _Found(NamedTuple):
    """A table the statement reads, and how its snapshot is built."""

    table: exp.Table
    info: TableInfo
    formulation: str
    preds: list[exp.Expression]
    row_preds: list[exp.Expression]
    semi: list[exp.Expression]
    filtered: bool  # the query filters this table (row_preds or semi, whether or not they are pushed)


def snapshot_reads(tree: exp.Expression, lookup: Lookup, options: ReadOptions) -> Reads:
    """Replace every transactional table in ``tree`` by its snapshot. Returns the tree, the tables read, whether
    any got the analytical formulation, and which are read by key values (see PointKeys)."""
    tree = expand_views(tree, lookup)  # tique's views become their SELECTs, read like any query
    tree = nulls_order_under_limits(tree)
    analytical = False
    point: dict[str, tuple[str, ...] | None] = {}
    ctes = cte_names(tree)
    read: set[str] = set()
    uses = _column_uses(tree)  # before any snapshot adds columns and sources of its own
    # MonetDB also answers wrongly when the EXISTS/IN subquery's snapshot is fine but another snapshot of the same
    # statement holds the NOT EXISTS (seed 59 of the differential run): then every snapshot uses the LEFT JOIN
    subquery_predicates = any(_in_subquery_predicate(t) for t in tree.find_all(exp.Table))
    # a statement whose only source is one table has no join MonetDB could push into its snapshot's union, so the
    # LIMIT that keeps joins out (see snapshot_tree) would only cost; any other table, CTE reference, table
    # function or VALUES counts as a source that might be joined
    lone = len(list(tree.find_all(exp.Table))) == 1 and tree.find(exp.Values, exp.Unnest, exp.Lateral) is None

    def collect(root: exp.Expression) -> list[_Found]:
        out = []
        for table in list(root.find_all(exp.Table)):
            if not table.name or names_cte(table, ctes):
                continue
            if isinstance(table.parent, (exp.Insert, exp.Update, exp.Delete, exp.Create, exp.Schema)) or (
                isinstance(table.parent, exp.Merge) and table.arg_key == "this"
            ):
                continue  # a write's or DDL's target, not a read
            info = lookup(ident(table.args.get("db")) or None, ident(table))
            if info is None or info.kind != "tx":
                continue
            preds = key_predicates(table, info)
            formulation = options.formulation
            if formulation == "auto":
                formulation = "point" if preds else "analytical"
            wide = formulation == "analytical"
            row_preds = row_predicates(table, info, lookup) if wide else []
            # copied now, while their tables are still tables: each copy's tables get snapshots of their own
            semi = [p.copy() for p in semi_predicates(table, info, lookup, ctes)] if wide else []
            filtered = bool(row_preds or semi)
            if options.exact_filters:
                row_preds, semi = [], []
            out.append(_Found(table, info, formulation, preds, row_preds, semi, filtered))
        return out

    found = collect(tree)
    inner = [entry for outer in found for pred in outer.semi for entry in collect(pred)]
    numbered = [*enumerate(found, start=1), *enumerate(inner, start=len(found) + 1)]
    # the copies' tables first: a semi-join is copied into its table's snapshot with its subquery's snapshots in it
    for number, (table, info, formulation, preds, row_preds, semi, filtered) in (
        numbered[len(found) :] + numbered[: len(found)]
    ):
        analytical = analytical or formulation == "analytical"
        pinned = _point_slots(info, preds) if formulation == "point" else None
        point[info.qualified] = pinned if info.qualified not in point else None  # read twice: no shortcut
        alias = table.alias_or_name
        snap = snapshot_tree(
            info,
            formulation,
            preds,
            row_preds=row_preds,
            expose_rowid=info.qualified in options.expose_rowid,
            latest=options.latest,
            own=options.owns(info.qualified),
            columns=_needed(info, alias, uses),
            tag=f"_{number}",
            left_anti_join=subquery_predicates,
            barrier=not lone or (options.exact_filters and filtered),
            semi=semi,
            cached=(options.cached or formulation != "point") and info.qualified not in options.stored,
        )
        name = source_name(table)  # kept as the user quoted it ("Q" is not q)
        replacement = exp.Subquery(this=snap, alias=exp.TableAlias(this=name))
        # in ``(a JOIN b ON ...)`` the join hangs off the table a: it stays with the snapshot (b's own snapshot
        # is, or will be, put in its place inside it), or the join would vanish from the statement
        joins = table.args.get("joins")
        if joins:
            table.set("joins", None)
            replacement.set("joins", joins)
        table.replace(replacement)
        read.add(info.qualified)
    keys = tuple((name, slots) for name, slots in point.items() if slots is not None)
    return Reads(tree, read, analytical, keys)
