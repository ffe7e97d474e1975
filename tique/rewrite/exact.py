"""Results read exactly on both engines.

The embedded engine's C API hands TIME and TIMESTAMP values over in milliseconds (monetdbe_data_time has no
finer field) and a DECIMAL(p,0) as a plain integer. tique writes back what it reads (UPDATE, INSERT ... SELECT)
and compares keys it reads, so such values would silently change. Where tique knows an output's column type, the
output is rewritten to ``CAST(... AS VARCHAR)`` - MonetDB's own text of the value, exact to the microsecond - and
read back here as ``datetime``/``time``; a DECIMAL(p,0) integer becomes a Decimal. Outputs are typed from the
catalog: bare columns of tique tables (``*`` and ``t.*`` included), of subqueries and CTEs over them (typed the
same way, in turn), MIN/MAX of one (OVER a window too), NULLIF, a CASE or COALESCE whose branches agree, a TIME or
TIMESTAMP plus or minus an interval, and CAST to a temporal type; a UNION ALL's output when every branch types it
alike. An ORDER BY naming such an output (by name or position) sorts by its value, not the text (year 999 would
sort after 2000). Outputs whose cast could change the answer are left as they are (_left_as_they_are,
_grouped_by_output, _branches), as are other temporal expressions and a ``*`` over a plain table: they keep the
adapter's precision (milliseconds on the embedded engine).
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from sqlglot import exp

from tique.catalog import Lookup, TableInfo
from tique.engine.base import Column, Result
from tique.errors import DataError, NotSupportedError
from tique.gc_paused import paused
from tique.names import cte_names, ident, names_cte
from tique.rewrite.dialect import MonetDB
from tique.rewrite.values import parse_temporal, sql_type

TEXT = "VARCHAR(64)"


@dataclass(frozen=True)
class Decode:
    """Per result position, the SQL type of an output to bring back to its exact Python value."""

    columns: tuple[tuple[int, str], ...] = ()
    targets: tuple[str, ...] = ()  # per output of a write's SELECT, the column it is written to (for messages)

    def __bool__(self) -> bool:
        return bool(self.columns)


NOTHING = Decode()


def needs_text(type_text: str | None) -> bool:
    """A column type whose values the embedded engine cannot hand over exactly."""
    if type_text is None:
        return False
    try:
        return sql_type(type_text).base in ("TIME", "TIMESTAMP")
    except NotSupportedError:
        return False


def _needs_decode(type_text: str | None) -> bool:
    if type_text is None:
        return False
    try:
        kind = sql_type(type_text)
    except NotSupportedError:
        return False
    return kind.base in ("TIME", "TIMESTAMP") or (kind.base == "DECIMAL" and kind.scale == 0)


def as_text(node: exp.Expression, type_text: str, convert: bool = False) -> exp.Expression:
    """``CAST(node AS VARCHAR)``; with ``convert`` the value is first brought to the column's type by the engine."""
    inner = exp.Cast(this=node, to=exp.DataType.build(type_text, dialect=MonetDB)) if convert else node
    return exp.Cast(this=inner, to=exp.DataType.build(TEXT, dialect=MonetDB))


def text_sql(column_sql: str, type_text: str) -> str:
    """SQL text: a column, cast to text when its type needs it."""
    return f"CAST({column_sql} AS {TEXT})" if needs_text(type_text) else column_sql


def read_value(value: Any, type_text: str) -> Any:
    """An output value as its column type reads: parsed back from the engine's text, or a DECIMAL(p,0)."""
    return None if value is None else _reader(type_text)(value)


@lru_cache(maxsize=256)
def _reader(type_text: str) -> Callable[[Any], Any]:
    """read_value for one column type, the type looked at once (a result has many values of each column)."""
    kind = sql_type(type_text)
    if kind.base in ("TIME", "TIMESTAMP"):
        base = kind.base
        return lambda value: parse_temporal(value, base) if isinstance(value, str) else value
    if kind.base == "DECIMAL":
        return lambda value: decimal.Decimal(value) if isinstance(value, int) and not isinstance(value, bool) else value
    return lambda value: value


def _timestamps(values: Sequence[Any]) -> list[Any]:
    """A column of TIMESTAMP texts as datetimes (read_value's, in one loop: an analytical result may hold 100k).
    ``fromisoformat`` reads the engine's usual text exactly and refuses what it would misread (a year past 9999
    or before 1000, an hour 24, a second 60), which parse_temporal then reads as MonetDB means it."""
    fromiso = datetime.datetime.fromisoformat
    out: list[Any] = []
    append = out.append
    for v in values:
        if v.__class__ is str:
            try:
                append(fromiso(v))
                continue
            except ValueError:
                append(parse_temporal(v, "TIMESTAMP"))
        else:
            append(v)
    return out


def decode(result: Result, plan: Decode) -> Result:
    """Bring a result's rewritten outputs back to their types (values, and the names cursor.description shows)."""
    if not plan or not result.columns:
        return result
    with paused(len(result.rows)):
        return _decoded(result, plan)


def _decoded(result: Result, plan: Decode) -> Result:
    values = list(zip(*result.rows))  # by column: only the decoded ones are touched, in C for the rest
    columns = list(result.columns)
    for position, type_text in plan.columns:
        if values:
            read = _reader(type_text)
            try:
                if sql_type(type_text).base == "TIMESTAMP":
                    values[position] = _timestamps(values[position])  # type: ignore[call-overload]
                else:
                    values[position] = [None if v is None else read(v) for v in values[position]]  # type: ignore[call-overload]
            except DataError as exc:
                target = plan.targets[position] if position < len(plan.targets) else ""
                if not target:
                    raise
                raise DataError(f"value for column {target!r}: {exc}", exc.sqlstate) from None
        kind = sql_type(type_text)
        name = {"TIME": "time", "TIMESTAMP": "timestamp", "DECIMAL": "decimal"}[kind.base]
        columns[position] = Column(columns[position].name, name, kind.precision, kind.scale)
    return replace(result, columns=columns, rows=list(zip(*values)) if values else result.rows)


# ---- typing a SELECT's outputs from the catalog ------------------------------------------------------------


# A source's columns by name, in order, with their SQL types (None: not typed); None for a source not known at all.
Columns = dict[str, "str | None"]
Sources = dict[str, "Columns | None"]
_NULL = "NULL"  # a bare NULL output: typed as whatever the other branches of a UNION, CASE or COALESCE are


class _Unlisted(dict):  # type: ignore[type-arg]
    """A plain table's columns: MonetDB's own table, which a session outside tique may alter without tique
    knowing, so a ``*`` over it is left for the engine to spell out (a column added that way must not go missing)."""


def _table_columns(info: TableInfo) -> Columns:
    columns = {name: info.column(name).sql_type for name in info.column_names}
    return _Unlisted(columns) if info.kind == "plain" else columns


def _ctes(query: exp.Expression, lookup: Lookup, outer: dict[str, Columns | None]) -> dict[str, Columns | None]:
    """The columns of the CTEs ``query`` defines (each may read the ones before it), with ``outer``'s."""
    found = dict(outer)
    with_ = query.args.get("with") or query.args.get("with_")
    for cte in with_.expressions if with_ is not None else ():
        alias = cte.args.get("alias")
        if alias is not None:
            found[ident(alias.this)] = _renamed(_outputs(cte.this, lookup, found), alias)
    return found


def _renamed(outputs: list[tuple[str, str | None]] | None, alias: exp.Expression | None) -> Columns | None:
    """A derived table's or CTE's columns: its query's outputs, named by the alias's column list if it has one.
    None when two have one name (a ``*`` over it could not be spelled out by name)."""
    if outputs is None:
        return None
    names = [ident(c) for c in alias.args.get("columns") or []] if alias is not None else []
    if names:
        if len(names) != len(outputs):
            return None
        outputs = [(name, kind) for name, (_, kind) in zip(names, outputs)]
    columns = dict(outputs)
    return columns if len(columns) == len(outputs) else None  # a name twice: a reference to it is ambiguous


def _sources(select: exp.Select, lookup: Lookup, ctes: dict[str, Columns | None] | None = None) -> Sources:
    """The FROM and JOIN items of a SELECT by alias, with their columns: a tique table's, a subquery's or a CTE's
    outputs typed in turn; None for another item (a plain table, VALUES, a table function...)."""
    ctes = _ctes(select, lookup, ctes or {})
    items: list[exp.Expression] = []
    from_ = select.args.get("from") or select.args.get("from_")
    if from_ is not None:
        items.append(from_.this)
    items += [j.this for j in select.args.get("joins") or []]
    names = cte_names(select) | frozenset(ctes)
    out: Sources = {}
    for item in items:
        alias_node = item.args.get("alias")
        alias = ident(alias_node.this if alias_node is not None else item.this)
        if isinstance(item, exp.Table) and item.name and names_cte(item, names):
            out[alias] = _renamed(list(ctes[ident(item)].items()), alias_node) if ctes.get(ident(item)) else None
        elif isinstance(item, exp.Table) and item.name:
            info = lookup(ident(item.args.get("db")) or None, ident(item))
            out[alias] = None if info is None else _table_columns(info)
        elif isinstance(item, exp.Subquery):
            out[alias] = _renamed(_outputs(item.this, lookup, ctes), alias_node)
        else:
            out[alias] = None
    return out


def _outputs(
    query: exp.Expression, lookup: Lookup, ctes: dict[str, Columns | None]
) -> list[tuple[str, str | None]] | None:
    """A query's outputs in order, (name, SQL type or None), without changing it; None when they cannot be listed
    (a ``*`` over an unknown source)."""
    if isinstance(query, exp.Subquery):
        return _outputs(query.this, lookup, ctes)
    ctes = _ctes(query, lookup, ctes)
    if isinstance(query, exp.SetOperation):
        left, right = _outputs(query.this, lookup, ctes), _outputs(query.expression, lookup, ctes)
        if left is None or right is None or len(left) != len(right):
            return None
        return [(name, _common([a, b])) for (name, a), (_, b) in zip(left, right)]
    if not isinstance(query, exp.Select):
        return None
    sources = _sources(query, lookup, ctes)
    outputs: list[tuple[str, str | None]] = []
    for node in query.expressions:
        stars = _star_sources(node, query, sources)
        if stars is None:
            outputs.append((_output_name(node), _type_of(node, sources)))
            continue
        for alias in stars:
            columns = _spelled_out(alias, sources)
            if columns is None:
                return None
            outputs += list(columns.items())
    return outputs


def _spelled_out(alias: str, sources: Sources) -> Columns | None:
    """The columns a ``*`` over source ``alias`` spells out; None when tique cannot list them (an unknown source,
    a plain table)."""
    columns = sources.get(alias)
    return None if columns is None or isinstance(columns, _Unlisted) else columns


def _star_sources(node: exp.Expression, select: exp.Select, sources: Sources) -> list[str] | None:
    """The sources a ``*`` or ``t.*`` output spells out (every one for ``*``); None for another output."""
    if isinstance(node, exp.Star):
        if any(j.args.get("using") or j.args.get("method") for j in select.args.get("joins") or []):
            return [""]  # USING and NATURAL merge columns: an unknown source
        return list(sources)
    if isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
        return [_qualifier(node)]
    return None


def _qualifier(column: exp.Column) -> str:
    """The table a column names, as MonetDB folds it ("" if none)."""
    table = column.args.get("table")
    return ident(table) if table is not None else ""


def _owners(name: str, sources: Sources) -> list[str] | None:
    """The sources holding a column ``name``; None when an unknown source might hold it too."""
    if any(columns is None for columns in sources.values()):
        return None
    return [alias for alias, columns in sources.items() if columns is not None and name in columns]


def _column_type(column: exp.Column, sources: Sources) -> str | None:
    name = ident(column)
    if column.table:
        columns = sources.get(_qualifier(column))
        return None if columns is None else columns.get(name)
    owners = _owners(name, sources)
    if owners is None or len(owners) != 1:
        return None
    return sources[owners[0]].get(name)  # type: ignore[union-attr]


def _common(types: Sequence[str | None]) -> str | None:
    """The type of a value that is one of several (a CASE's branches, a COALESCE's arguments, a UNION's
    branches): theirs when all that are not a bare NULL have the same type, else not typed."""
    kinds = {t for t in types if t != _NULL}
    if len(kinds) != 1:
        return _NULL if not kinds else None
    return kinds.pop()


def _type_of(node: exp.Expression, sources: Sources) -> str | None:
    """An output's SQL type where it follows from the catalog; None when not known."""
    if isinstance(node, (exp.Alias, exp.Paren)):
        return _type_of(node.this, sources)
    if isinstance(node, exp.Null):
        return _NULL
    if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
        return _column_type(node, sources)
    if isinstance(node, (exp.Max, exp.Min, exp.Nullif)) or (
        isinstance(node, exp.Window) and isinstance(node.this, (exp.Max, exp.Min))
    ):
        return _type_of(node.this, sources)
    if isinstance(node, exp.Coalesce):
        return _common([_type_of(n, sources) for n in [node.this, *node.expressions]])
    if isinstance(node, exp.Case):
        branches = [i.args["true"] for i in node.args.get("ifs") or []]
        default = node.args.get("default")
        return _common([_type_of(n, sources) for n in [*branches, default if default is not None else exp.Null()]])
    if isinstance(node, (exp.Add, exp.Sub)):  # a TIME or TIMESTAMP moved by an interval keeps its type
        moved, by = (
            (node.expression, node.this) if isinstance(node.this, exp.Interval) else (node.this, node.expression)
        )
        kind = _type_of(moved, sources) if isinstance(by, exp.Interval) else None
        return kind if needs_text(kind) else None
    if isinstance(node, exp.Cast):
        text = node.to.sql(dialect=MonetDB)
        return text if needs_text(text) else None
    return None


def _expand_stars(select: exp.Select, sources: Sources) -> bool:
    """Spell out ``*`` / ``t.*`` (so each output can be typed); False if one cannot be."""
    outputs: list[exp.Expression] = []
    for node in select.expressions:
        of = _star_sources(node, select, sources)
        if of is None:
            outputs.append(node)
            continue
        for alias in of:
            columns = _spelled_out(alias, sources)
            if columns is None or "" in columns:
                return False
            outputs += [exp.column(c, table=alias, quoted=True) for c in columns]
    select.set("expressions", outputs)
    return True


def _has_star(select: exp.Select) -> bool:
    return any(
        isinstance(n, exp.Star) or (isinstance(n, exp.Column) and isinstance(n.this, exp.Star))
        for n in select.expressions
    )


def exact_read(tree: exp.Expression, lookup: Lookup) -> Decode:
    """Rewrite a user query (in place, before its tables become snapshots) so that every output typed as TIME or
    TIMESTAMP comes as the engine's text; the Decode that reads them back."""
    if isinstance(tree, exp.SetOperation):
        return _exact_set_operation(tree, lookup)
    if not isinstance(tree, exp.Select):
        return Decode()
    sources = _sources(tree, lookup)
    if _has_star(tree) and not (_may_decode(sources) and _expand_stars(tree, sources)):
        return Decode()
    left = _left_as_they_are(tree)
    if left is None:
        return Decode()
    left |= _grouped_by_output(tree)
    types = [None if p in left else _type_of(node, sources) for p, node in enumerate(tree.expressions)]
    originals = {
        position: _qualified(node.this if isinstance(node, exp.Alias) else node, sources).copy()
        for position, (node, type_text) in enumerate(zip(tree.expressions, types))
        if needs_text(type_text)
    }
    names = {_output_name(tree.expressions[p]): p for p in originals if _output_name(tree.expressions[p])}
    decode = wrap_outputs(tree, types)
    _order_by_values(tree, originals, names)
    return decode


def _may_decode(sources: Sources) -> bool:
    """Could a ``*`` over these sources spell out an output to decode?"""
    return any(columns is None or any(map(_needs_decode, columns.values())) for columns in sources.values())


def _left_as_they_are(select: exp.Select) -> set[int] | None:
    """The outputs of a SELECT with an ORDER BY that must not become text: None for all of them (it sorts by a
    parameter, which may be a position). Also those whose name another output has (_named_twice), and a window
    function's its ORDER BY names (the window's own ORDER BY cannot be repeated there)."""
    order = select.args.get("order")
    if order is None:
        return set()
    if order.find(exp.Placeholder):
        return None
    outputs = select.expressions
    left = _named_twice(select)
    named = {_output_name(node): p for p, node in enumerate(outputs) if _output_name(node)}
    for item in order.expressions:
        position = _position(_key(item), named)
        if position is not None and position < len(outputs) and outputs[position].find(exp.Window):
            left.add(position)
    return left


def _named_twice(select: exp.Select) -> set[int]:
    """The outputs whose name another output has: under an ORDER BY, MonetDB 11.41 gives every output of a name
    given twice by AS the last one's values, and a cast output keeps its name by AS."""
    names = [_output_name(node) for node in select.expressions]
    return {p for p, name in enumerate(names) if name and names.count(name) > 1}


def _grouped_by_output(select: exp.Select) -> set[int]:
    """The outputs GROUP BY names by their alias (anywhere in it: GROUPING SETS, ROLLUP, CUBE) or position. The
    engine groups by the output, so it would group the text, and HAVING and ORDER BY would compare that."""
    group = select.args.get("group")
    if group is None:
        return set()
    aliases = {ident(node.args["alias"]): p for p, node in enumerate(select.expressions) if isinstance(node, exp.Alias)}
    grouped = {aliases[ident(c)] for c in group.find_all(exp.Column) if not c.table and ident(c) in aliases}
    positions = (_key(g) for g in group.expressions)
    grouped |= {int(k.this) - 1 for k in positions if isinstance(k, exp.Literal) and _names_an_output(k)}
    return grouped


def _exact_set_operation(tree: exp.SetOperation, lookup: Lookup) -> Decode:
    """exact_read of a UNION ALL: an output is read as text when every branch types it alike (or as a bare NULL),
    cast in each branch. Not one the set operation's ORDER BY names (it would sort the text), nor
    any when the ORDER BY sorts by something else than an output's name or position."""
    branches = _branches(tree)
    if branches is None:
        return Decode()
    order = tree.args.get("order")
    keys = [_key(item) for item in order.expressions] if order is not None else []
    if not all(_names_an_output(k) for k in keys):
        return Decode()
    ctes = _ctes(tree, lookup, {})
    typed: list[list[str | None]] = []
    for select in branches:
        sources = _sources(select, lookup, ctes)
        if _has_star(select) and not (_may_decode(sources) and _expand_stars(select, sources)):
            return Decode()
        twice = _named_twice(select) if keys else set()
        typed.append([None if p in twice else _type_of(node, sources) for p, node in enumerate(select.expressions)])
    if len({len(t) for t in typed}) != 1:
        return Decode()
    common = [_common(column) for column in zip(*typed)]
    named = {_output_name(n): p for p, n in enumerate(branches[0].expressions) if _output_name(n)}
    for key in keys:
        position = _position(key, named)
        if position is not None and position < len(common):
            common[position] = None
    wanted = [t if needs_text(t) else None for t in common]
    if not any(wanted):
        return Decode()
    decodes = [wrap_outputs(select, wanted) for select in branches]
    return decodes[0]


def _branches(tree: exp.Expression) -> list[exp.Select] | None:
    """The SELECTs a UNION ALL combines, left to right; None when one is something else, or a set operation
    compares rows (UNION, EXCEPT, INTERSECT): equal values of two precisions are two texts."""
    if isinstance(tree, exp.Subquery) and not tree.args.get("alias"):
        return _branches(tree.this)
    if isinstance(tree, exp.SetOperation):
        if not isinstance(tree, exp.Union) or tree.args.get("distinct") is not False:
            return None
        left, right = _branches(tree.this), _branches(tree.expression)
        return None if left is None or right is None else left + right
    if not isinstance(tree, exp.Select) or any(tree.args.get(a) for a in ("with", "with_", "order", "limit", "offset")):
        return None  # a branch's own WITH, or its ORDER BY (which could name a cast output): left as it is
    return [tree]


def _key(item: exp.Expression) -> exp.Expression:
    """What an ORDER BY or GROUP BY item sorts or groups by, outside its parentheses."""
    key = item.this if isinstance(item, exp.Ordered) else item
    while isinstance(key, exp.Paren):
        key = key.this
    return key


def _names_an_output(key: exp.Expression) -> bool:
    """Is an ORDER BY item a position or a bare name (not an expression, a parameter or a qualified column)?"""
    if isinstance(key, exp.Literal):
        return not key.is_string and key.this.isdigit()
    return isinstance(key, exp.Column) and not key.table and not isinstance(key.this, exp.Star)


def _position(key: exp.Expression, named: dict[str, int]) -> int | None:
    """The output an ORDER BY item names: by position (``ORDER BY 2``) or by name; None for an expression."""
    if not _names_an_output(key):
        return None
    return int(key.this) - 1 if isinstance(key, exp.Literal) else named.get(ident(key))


def _qualified(node: exp.Expression, sources: Sources) -> exp.Expression:
    """A bare column qualified with its table, so that it cannot mean the output of the same name."""
    if not isinstance(node, exp.Column) or node.table:
        return node
    owners = _owners(ident(node), sources)
    if owners is None or len(owners) != 1:
        return node
    return exp.column(node.this.copy(), table=exp.to_identifier(owners[0], quoted=True))


def _order_by_values(select: exp.Select, originals: dict[int, exp.Expression], names: dict[str, int]) -> None:
    """ORDER BY an output (by name or position) would sort the text the output became: sort by its value."""
    order = select.args.get("order")
    if order is None or not originals:
        return
    for item in order.expressions:
        key = _key(item)
        position = _position(key, names)
        if position is not None and position in originals:
            key.replace(originals[position].copy())


def _output_name(node: exp.Expression) -> str:
    """The name MonetDB gives an output: its alias or column name, folded as unquoted names are ("" if none)."""
    if isinstance(node, exp.Alias):
        return ident(node.args["alias"])
    return ident(node) if isinstance(node, exp.Column) else ""


def wrap_outputs(select: exp.Select, types: Sequence[str | None], convert: bool = False) -> Decode:
    """Cast the outputs of ``select`` whose type needs it to text (keeping their names); the Decode for them."""
    outputs = list(select.expressions)
    wanted: list[tuple[int, str]] = []
    for position, (node, type_text) in enumerate(zip(outputs, types)):
        if not _needs_decode(type_text):
            continue
        assert type_text is not None
        wanted.append((position, type_text))
        if not needs_text(type_text):
            continue
        inner = node.this if isinstance(node, exp.Alias) else node
        name = _output_name(node)
        cast = as_text(inner.copy(), type_text, convert)
        outputs[position] = exp.alias_(cast, name, quoted=True) if name else cast
    select.set("expressions", outputs)
    return Decode(tuple(wanted))
