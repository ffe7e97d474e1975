"""Results read exactly on both engines.

The embedded engine's C API hands TIME and TIMESTAMP values over in milliseconds (monetdbe_data_time has no
finer field) and a DECIMAL(p,0) as a plain integer. tique writes back what it reads (UPDATE, INSERT ... SELECT)
and compares keys it reads, so such values would silently change. Where tique knows an output's column type, the
output is rewritten to ``CAST(... AS VARCHAR)`` - MonetDB's own text of the value, exact to the microsecond - and
read back here as ``datetime``/``time``; a DECIMAL(p,0) integer becomes a Decimal. Outputs are typed from the
catalog: bare columns of tique tables (``*`` and ``t.*`` included), MIN/MAX of one and CAST to a temporal type.
Other temporal expressions keep the adapter's precision (milliseconds on the embedded engine).
"""

from __future__ import annotations

import decimal
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from sqlglot import exp

from tique.catalog import Lookup, TableInfo
from tique.engine.base import Column, Result
from tique.errors import DataError, NotSupportedError
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


def decode(result: Result, plan: Decode) -> Result:
    """Bring a result's rewritten outputs back to their types (values, and the names cursor.description shows)."""
    if not plan or not result.columns:
        return result
    values = list(zip(*result.rows))  # by column: only the decoded ones are touched, in C for the rest
    columns = list(result.columns)
    for position, type_text in plan.columns:
        if values:
            read = _reader(type_text)
            try:
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


def _sources(select: exp.Select, lookup: Lookup) -> dict[str, TableInfo | None]:
    """The FROM and JOIN items of a SELECT by alias: a tique table's info, or None (a subquery, a CTE...)."""
    items: list[exp.Expression] = []
    from_ = select.args.get("from") or select.args.get("from_")
    if from_ is not None:
        items.append(from_.this)
    items += [j.this for j in select.args.get("joins") or []]
    ctes = cte_names(select)
    out: dict[str, TableInfo | None] = {}
    for item in items:
        alias_node = item.args.get("alias")
        alias = ident(alias_node.this if alias_node is not None else item.this)
        if isinstance(item, exp.Table) and item.name and not names_cte(item, ctes):
            out[alias] = lookup(ident(item.args.get("db")) or None, ident(item))
        else:
            out[alias] = None
    return out


def _qualifier(column: exp.Column) -> str:
    """The table a column names, as MonetDB folds it ("" if none)."""
    table = column.args.get("table")
    return ident(table) if table is not None else ""


def _column_type(column: exp.Column, sources: dict[str, TableInfo | None]) -> str | None:
    name = ident(column)
    if column.table:
        infos = [sources.get(_qualifier(column))]
    else:
        if any(info is None for info in sources.values()):
            return None  # a subquery's column of the same name could be meant
        infos = [info for info in sources.values() if info is not None and name in info.column_names]
        if len(infos) != 1:
            return None
    info = infos[0]
    if info is None or name not in info.column_names:
        return None
    return info.column(name).sql_type


def _type_of(node: exp.Expression, sources: dict[str, TableInfo | None]) -> str | None:
    if isinstance(node, exp.Alias):
        return _type_of(node.this, sources)
    if isinstance(node, exp.Paren):
        return _type_of(node.this, sources)
    if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
        return _column_type(node, sources)
    if isinstance(node, (exp.Max, exp.Min)):
        return _type_of(node.this, sources)
    if isinstance(node, exp.Cast):
        text = node.to.sql(dialect=MonetDB)
        return text if needs_text(text) else None
    return None


def _expand_stars(select: exp.Select, sources: dict[str, TableInfo | None]) -> bool:
    """Spell out ``*`` / ``t.*`` over tique tables (so each output can be typed); False if one cannot be."""
    outputs: list[exp.Expression] = []
    for node in select.expressions:
        if isinstance(node, exp.Star):
            if any(j.args.get("using") or j.args.get("method") for j in select.args.get("joins") or []):
                return False  # USING and NATURAL merge columns
            of = list(sources)
        elif isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
            of = [_qualifier(node)]
        else:
            outputs.append(node)
            continue
        for alias in of:
            info = sources.get(alias)
            if info is None:
                return False
            outputs += [exp.column(c, table=alias, quoted=True) for c in info.column_names]
    select.set("expressions", outputs)
    return True


def exact_read(tree: exp.Expression, lookup: Lookup) -> Decode:
    """Rewrite a user SELECT (in place, before its tables become snapshots) so that every output typed as TIME or
    TIMESTAMP comes as the engine's text; the Decode that reads them back."""
    if not isinstance(tree, exp.Select):
        return Decode()
    sources = _sources(tree, lookup)
    types = [_type_of(node, sources) for node in tree.expressions]
    if any(
        isinstance(n, exp.Star) or (isinstance(n, exp.Column) and isinstance(n.this, exp.Star))
        for n in tree.expressions
    ):
        if not any(
            info is not None and any(_needs_decode(c.sql_type) for c in info.columns) for info in sources.values()
        ):
            return Decode()
        if not _expand_stars(tree, sources):
            return Decode()
        types = [_type_of(node, sources) for node in tree.expressions]
    originals = {
        _output_name(node): _qualified(node.this if isinstance(node, exp.Alias) else node, sources).copy()
        for node, type_text in zip(tree.expressions, types)
        if needs_text(type_text) and _output_name(node)
    }
    decode = wrap_outputs(tree, types)
    _order_by_values(tree, originals)
    return decode


def _qualified(node: exp.Expression, sources: dict[str, TableInfo | None]) -> exp.Expression:
    """A bare column qualified with its table, so that it cannot mean the output of the same name."""
    if not isinstance(node, exp.Column) or node.table:
        return node
    owners = [a for a, info in sources.items() if info is not None and ident(node) in info.column_names]
    return exp.column(node.this.copy(), table=exp.to_identifier(owners[0], quoted=True)) if len(owners) == 1 else node


def _order_by_values(select: exp.Select, originals: dict[str, exp.Expression]) -> None:
    """ORDER BY an output name would sort the text the output became: sort by the original value instead."""
    order = select.args.get("order")
    if order is None or not originals:
        return
    for item in order.expressions:
        key = item.this if isinstance(item, exp.Ordered) else item
        if isinstance(key, exp.Column) and not key.table and ident(key) in originals:
            key.replace(originals[ident(key)].copy())


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
