"""Writes: what rows an INSERT, UPDATE or DELETE produces, computed from the snapshot.

Nothing here touches the engine. A write becomes a plan: either rows known from the statement itself (an
INSERT of literals and parameters: no round trip needed), or a SELECT over the snapshot whose result rows
are the new versions. The transaction turns those rows into Cache rows.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import sqlglot
from sqlglot import exp

from tique.catalog import ColumnSpec, Lookup, SequenceDefault, SqlDefault, TableInfo
from tique.errors import NotSupportedError, ProgrammingError
from tique.names import column_ref, ident, source_name
from tique.params import literal
from tique.rewrite.dialect import MonetDB
from tique.rewrite.exact import NOTHING, Decode, needs_text, wrap_outputs
from tique.rewrite.parse import monetdb_quotes
from tique.rewrite.point import KeyRead, KeyUpdate, key_read, key_update
from tique.rewrite.reads import PointKeys, ReadOptions, snapshot_reads
from tique.rewrite.template import Template, slot_name
from tique.rewrite.values import check_type, coerce, python_value
from tique.rewrite.values import sql_type as parse_type

# An item of a literal row: ("v", python value) or ("s", parameter slot name).
Item = tuple[str, Any]


class _Default:
    """The DEFAULT keyword in an INSERT's VALUES: the column's default (or its generated value) goes there."""

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT = _Default()


@dataclass(frozen=True)
class InsertPlan:
    table: TableInfo
    columns: tuple[str, ...]  # the target columns, in the order rows give them
    rows: tuple[tuple[Item, ...], ...] | None  # literal rows, or None when ``select`` computes them
    select: Template | None
    reads: frozenset[str]
    decode: Decode = NOTHING  # the select's outputs read exactly (see exact.py)


@dataclass(frozen=True)
class UpdatePlan:
    table: TableInfo
    select: Template  # returns the old key values, then every stored column's new value
    key_changes: bool
    reads: frozenset[str]
    point_keys: PointKeys = ()
    decode: Decode = NOTHING
    stored_slots: frozenset[str] = frozenset()  # parameters in SET: stored, so sent exactly (-0.0 stays -0.0)
    assigned: tuple[str, ...] = ()  # the columns SET names
    key_update: KeyUpdate | None = None  # one row by its whole key: computed on a row the transaction holds
    numbers: tuple[tuple[str, str], ...] = ()  # (parameter, DECIMAL column) of SET c = %s: checked in the client
    # parameters of SET c = %s of a string column: a float among them is sent as the text MonetDB stores for
    # pymonetdb's literal of it (values.ParameterFloat), not as the DOUBLE that tique's literal is
    text_slots: frozenset[str] = frozenset()
    # the row a key_update changes, read whole when not held: its versions ranked by the client, or Storage alone
    row_read: KeyRead | None = None


@dataclass(frozen=True)
class DeletePlan:
    table: TableInfo
    select: Template  # returns the key values of the rows to delete
    reads: frozenset[str]
    point_keys: PointKeys = ()
    decode: Decode = NOTHING
    row_read: KeyRead | None = None  # a DELETE by whole keys: its rows read as a key read (see UpdatePlan)


def _target(node: exp.Expression, lookup: Lookup, verb: str) -> tuple[TableInfo, exp.Table]:
    table = node if isinstance(node, exp.Table) else node.find(exp.Table)
    if table is None:
        raise ProgrammingError(f"{verb}: no target table")
    info = lookup(ident(table.args.get("db")) or None, ident(table))
    if info is not None and info.kind == "view":
        raise NotSupportedError(
            f"{verb} on the view {info.name!r} is not supported by tique (its views are read-only): write to the "
            "tables it reads"
        )
    if info is None or info.kind != "tx":
        raise LookupError(table.name)  # not versioned by tique: the caller passes the statement through
    return info, table


def _item(node: exp.Expression) -> Item | None:
    name = slot_name(node)
    if name is not None:
        return ("s", name)
    if isinstance(node, exp.Var) and node.name.upper() == "DEFAULT":
        return ("v", DEFAULT)
    try:
        return ("v", python_value(node))
    except NotSupportedError:
        return None


def plan_insert(tree: exp.Insert, lookup: Lookup, options: ReadOptions) -> InsertPlan:
    target = tree.this
    columns_node = target.expressions if isinstance(target, exp.Schema) else []
    info, _ = _target(target.this if isinstance(target, exp.Schema) else target, lookup, "INSERT")
    if tree.args.get("returning"):
        raise NotSupportedError(
            _RETURNING.format(
                verb="INSERT", then="read a generated key from cursor.lastrowid, or SELECT the rows after"
            )
        )
    if tree.args.get("conflict"):
        raise NotSupportedError(
            "INSERT ... ON CONFLICT is not supported by tique (nor by MonetDB 11.41): SELECT the key first, then "
            "INSERT or UPDATE in the same transaction (its snapshot is stable; a concurrent insert of the key fails "
            "one of the two at COMMIT)"
        )
    columns = tuple(ident(c) for c in columns_node) or info.column_names
    for name in columns:
        info.column(name)  # unknown columns say which
    source = tree.expression
    if any(_engine_default(c) for c in info.columns):
        columns, source = _with_sql_defaults(info, columns, source)
    if source is None and tree.args.get("default"):  # INSERT INTO t DEFAULT VALUES: one row of defaults
        return InsertPlan(info, (), ((),), None, frozenset())
    if isinstance(source, exp.Values):
        rows: list[tuple[Item, ...]] = []
        for tup in source.expressions:
            values = tup.expressions if isinstance(tup, exp.Tuple) else [tup]
            if len(values) != len(columns):
                raise ProgrammingError(f"INSERT into {info.name!r} has {len(values)} values for {len(columns)} columns")
            items = [_item(v) for v in values]
            if any(i is None for i in items):
                rows = []
                break
            rows.append(tuple(items))  # type: ignore[arg-type]
        else:
            return InsertPlan(info, columns, tuple(rows), None, frozenset())
        width = len(columns)
        alias = exp.TableAlias(
            this=exp.to_identifier("tq_v"), columns=[exp.to_identifier(f"c{i}") for i in range(width)]
        )
        select: exp.Expression = exp.select(*[exp.column(f"c{i}") for i in range(width)]).from_(
            exp.Subquery(this=_typed_nulls(source.copy(), [info.column(c).sql_type for c in columns]), alias=alias)
        )
    elif isinstance(source, (exp.Select, exp.Union)):
        select = source.copy()
    else:
        raise NotSupportedError(f"INSERT source {type(source).__name__} is not supported by tique")
    found = snapshot_reads(select, lookup, options)
    tree, decode = _exact_rows(found.tree, [info.column(c).sql_type for c in columns])
    decode = replace(decode, targets=columns)
    return InsertPlan(info, columns, None, Template.from_tree(tree), frozenset(found.reads), decode)


def _checked(value: exp.Expression, sql_type: str) -> exp.Expression:
    """A value the engine computes for a column, cast to the column's check type (values.check_type); TIME and
    TIMESTAMP are converted to the column's own type where they are read as text (exact.wrap_outputs)."""
    if needs_text(sql_type):
        typed = isinstance(value, exp.Placeholder)  # so MonetDB can prepare the statement
        return exp.Cast(this=value, to=exp.DataType.build(sql_type, dialect=MonetDB)) if typed else value
    checked = exp.Cast(this=value, to=exp.DataType.build(check_type(sql_type), dialect=MonetDB))
    if parse_type(sql_type).base == "DATE":  # as text: the adapters cannot read a year past 9999, coerce refuses it
        return exp.Cast(this=checked, to=exp.DataType.build("CLOB", dialect=MonetDB))
    return checked


def _checked_in_client(
    value: exp.Expression, sql_type: str, column: str, info: TableInfo
) -> tuple[tuple[str, str], ...]:
    """SET c = %s or SET c = <number> of a DECIMAL column: the value is checked against the column in the client.
    MonetDB 11.41 folds a constant DOUBLE cast to DECIMAL(38,s) whose scaled value leaves 128 bits into 0
    (CAST(1.2e37 AS DECIMAL(38,2)) is 0.00; a column's value fails as it should), and a Decimal of more than 38
    digits is read as a DOUBLE: stored as 0 without a word. A literal is checked here, a parameter at each run."""
    while isinstance(value, exp.Paren):
        value = value.this
    slot = slot_name(value) if isinstance(value, exp.Placeholder) else None
    if slot is not None:
        return ((slot, column),)
    if isinstance(value, (exp.Literal, exp.Neg)) and not (isinstance(value, exp.Literal) and value.is_string):
        try:
            number = python_value(value)
        except Exception:  # not a number tique reads: the engine's cast decides, as before
            return ()
        check_number(number, sql_type, column, info.name)
    return ()


def check_number(value: Any, sql_type: str, column: str, table: str) -> None:
    """Refuse a number the DECIMAL column cannot hold (values.coerce, as INSERT does); other values are the
    engine's to convert."""
    if isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool):
        coerce(value, sql_type, column, table)


def _typed_nulls(values: exp.Values, types: list[str]) -> exp.Values:
    """A NULL in VALUES typed as its column: MonetDB types a bare NULL as SMALLINT, which then cannot be converted
    to a temporal or BLOB column, nor the next rows' strings (found by the differential tester: a DATE literal and a
    NULL TIMESTAMP in one row; then by a review: any None parameter beside a CURRENT_TIMESTAMP default). A
    parameter may be NULL: COALESCE with the column's typed NULL gives NULL that type, and any other value the
    type it had (a cast would round a DECIMAL or cut a string before the column's own check sees it)."""
    for tup in values.expressions:
        items = tup.expressions if isinstance(tup, exp.Tuple) else [tup]
        for item, sql_type in zip(items, types):
            typed_null = exp.Cast(this=exp.Null(), to=exp.DataType.build(sql_type, dialect=MonetDB))
            if isinstance(item, exp.Null):
                item.replace(typed_null)
            elif isinstance(item, exp.Placeholder):
                item.replace(exp.Coalesce(this=item.copy(), expressions=[typed_null]))
    return values


def _exact_rows(source: exp.Expression, types: list[str]) -> tuple[exp.Expression, Decode]:
    """An INSERT's SELECT with its outputs cast to their columns' check types (so a value a column cannot hold is
    refused naming it), temporal ones converted to their columns' types and read as text."""
    names = [f"tq_i{i}" for i in range(len(types))]
    alias = exp.TableAlias(this=exp.to_identifier("tq_rows"), columns=[exp.to_identifier(n) for n in names])
    outputs = [exp.alias_(_checked(exp.column(n), t), n) for n, t in zip(names, types)]
    outer = exp.select(*outputs).from_(exp.Subquery(this=source, alias=alias))
    decode = wrap_outputs(outer, types, convert=True)
    return outer, decode


def _default_expr(column: ColumnSpec) -> exp.Expression:
    return exp.Cast(
        this=sqlglot.parse_one(str(column.default), read=MonetDB),
        to=exp.DataType.build(column.sql_type, dialect=MonetDB),
    )


def _engine_default(column: ColumnSpec) -> bool:
    """A default the engine evaluates once per statement (CURRENT_TIMESTAMP...); a sequence's value is per row,
    fetched by the transaction instead."""
    return isinstance(column.default, SqlDefault) and not isinstance(column.default, SequenceDefault)


def _with_sql_defaults(
    info: TableInfo, columns: tuple[str, ...], source: exp.Expression | None
) -> tuple[tuple[str, ...], exp.Expression]:
    """An INSERT into a table with engine-evaluated defaults (CURRENT_TIMESTAMP...): those the statement leaves
    out, or gives as DEFAULT, come from a one-row subquery joined to the INSERT's own SELECT, so the engine
    evaluates each once when the statement runs (every row of the statement gets the same moment; MonetDB
    evaluates CURRENT_TIMESTAMP in each VALUES row anew). The INSERT then takes the SELECT path."""
    exprs = {c.name: c for c in info.columns if _engine_default(c)}
    missing = [n for n in exprs if n not in columns]
    now = exp.Subquery(
        this=exp.select(*[exp.alias_(_default_expr(c), f"d{i}") for i, c in enumerate(exprs.values())]),
        alias=exp.TableAlias(this=exp.to_identifier("tq_n")),
    )
    position = {n: i for i, n in enumerate(exprs)}

    def default(name: str) -> exp.Expression:
        return exp.column(f"d{position[name]}", table="tq_n")

    if source is None:  # DEFAULT VALUES
        return tuple(exprs), exp.select(*[default(n) for n in exprs]).from_(now)
    if isinstance(source, exp.Values):
        return _values_with_defaults(info, columns, source, exprs, missing, now, default)
    if not missing or not isinstance(source, (exp.Select, exp.Union)):
        return columns, source
    inner = exp.Subquery(this=source.copy(), alias=exp.TableAlias(this=exp.to_identifier("tq_i")))
    wrapped = exp.select(exp.Column(this=exp.Star(), table=exp.to_identifier("tq_i")), *[default(n) for n in missing])
    return (*columns, *missing), wrapped.from_(inner).join(now, join_type="CROSS")


def _default_item(column: ColumnSpec, info: TableInfo) -> exp.Expression:
    """A column's default as a VALUES item: its literal, NEXT VALUE FOR its sequence (per row), or NULL (a
    generated column: the transaction gives it its value); a column with neither is refused as MonetDB does."""
    to = exp.DataType.build(column.sql_type, dialect=MonetDB)
    if isinstance(column.default, SequenceDefault):
        return exp.Cast(this=exp.Var(this=str(column.default)), to=to)
    if column.default is None:
        if column.name not in info.generated:
            raise ProgrammingError(f"INSERT INTO: column {column.name!r} has no valid default value", "42000")
        return exp.Cast(this=exp.null(), to=to)
    # literal() quotes a ' as pymonetdb does (\'), which the reader takes as MonetDB does only once converted
    return exp.Cast(this=sqlglot.parse_one(monetdb_quotes(literal(column.default)), read=MonetDB), to=to)


def _values_with_defaults(
    info: TableInfo,
    columns: tuple[str, ...],
    source: exp.Values,
    exprs: dict[str, ColumnSpec],
    missing: list[str],
    now: exp.Expression,
    default: Callable[[str], exp.Expression],
) -> tuple[tuple[str, ...], exp.Expression]:
    """VALUES rows with a flag per engine-defaulted column the statement lists: TRUE where a row says DEFAULT."""
    flagged = [i for i, n in enumerate(columns) if n in exprs]
    rows: list[exp.Expression] = []
    for tup in source.expressions:
        values = [v.copy() for v in (tup.expressions if isinstance(tup, exp.Tuple) else [tup])]
        if len(values) != len(columns):
            raise ProgrammingError(f"INSERT has {len(values)} values for {len(columns)} columns")
        for i, name in enumerate(columns):  # DEFAULT for a column the engine does not evaluate here
            if i not in flagged and isinstance(values[i], exp.Var) and values[i].name.upper() == "DEFAULT":
                values[i] = _default_item(info.column(name), info)
        flags = []
        for i in flagged:
            is_default = isinstance(values[i], exp.Var) and values[i].name.upper() == "DEFAULT"
            flags.append(exp.true() if is_default else exp.false())
            # typed: MonetDB types a VALUES column by its rows, and a bare NULL is no timestamp
            to = exp.DataType.build(exprs[columns[i]].sql_type, dialect=MonetDB)
            values[i] = exp.Cast(this=exp.null() if is_default else values[i], to=to)
        rows.append(exp.Tuple(expressions=values + flags))
    rows_typed = _typed_nulls(exp.Values(expressions=rows), [info.column(c).sql_type for c in columns])
    names = [f"c{i}" for i in range(len(columns))] + [f"f{i}" for i in flagged]
    alias = exp.TableAlias(this=exp.to_identifier("tq_v"), columns=[exp.to_identifier(n) for n in names])
    picked: list[exp.Expression] = []
    for i, name in enumerate(columns):
        value: exp.Expression = exp.column(f"c{i}", table="tq_v")
        if i in flagged:
            value = exp.Case(ifs=[exp.If(this=exp.column(f"f{i}", table="tq_v"), true=default(name))], default=value)
        picked.append(value)
    select = exp.select(*picked, *[default(n) for n in missing]).from_(exp.Subquery(this=rows_typed, alias=alias))
    return (*columns, *missing), select.join(now, join_type="CROSS")


def _defaults_assigned(tree: exp.Update, info: TableInfo) -> None:
    """``SET c = DEFAULT`` as c's default: its literal, or the expression the engine evaluates, as MonetDB does; a
    column without one is refused as MonetDB refuses it."""
    for eq in tree.expressions:
        value = eq.expression if isinstance(eq, exp.EQ) else None
        # read as a column named DEFAULT (unquoted: a quoted "DEFAULT" is a column) or a keyword
        word = isinstance(value, exp.Var) or (
            isinstance(value, exp.Column) and not value.table and not value.this.args.get("quoted")
        )
        if not (word and value.name.upper() == "DEFAULT" and isinstance(eq.this, exp.Column)):  # type: ignore[union-attr]
            continue
        column = info.column(ident(eq.this))
        if column.name in info.generated or isinstance(column.default, SequenceDefault):
            raise NotSupportedError(
                f"UPDATE: SET {column.name} = DEFAULT of a generated column is not supported by tique; set a value"
            )
        if column.default is None:
            raise ProgrammingError(f"UPDATE: column {column.name!r} has no valid default value", "42000")
        value.replace(_default_expr(column) if _engine_default(column) else _default_item(column, info))


_RETURNING = (
    "{verb} ... RETURNING is not supported by tique (MonetDB 11.41 has no RETURNING clause): {then} in the same "
    "transaction (it reads its own writes, and its snapshot does not change under it)"
)


def _row_assignments(tree: exp.Update) -> None:
    """``SET (a, b) = (SELECT x, y ...)`` as ``SET a = (SELECT tq_row.tq_c0 FROM (SELECT x, y ...) AS tq_row(tq_c0,
    tq_c1)), b = (... tq_c1 ...)``: one scalar subquery per column over the whole row subquery, so the row count is
    the same for every column (a per-column projection would not keep it under DISTINCT or GROUP BY): no row sets
    NULLs, more than one is refused by the engine, as MonetDB does for the row assignment. Each copy reads the same
    snapshot."""
    items: list[exp.Expression] = []
    for eq in tree.expressions:
        target = eq.this if isinstance(eq, exp.EQ) else None
        if isinstance(target, exp.Paren) and isinstance(target.this, exp.Column):
            columns = [target.this]
        elif isinstance(target, exp.Tuple) and all(isinstance(c, exp.Column) for c in target.expressions):
            columns = list(target.expressions)
            if any(c.table for c in columns):  # MonetDB's grammar takes bare names in a row target
                raise ProgrammingError(
                    f"UPDATE: syntax error in {target.sql(dialect=MonetDB)}: a row assignment names its columns "
                    "without the table (SET (a, b) = ...)",
                    "42000",
                )
        else:
            items.append(eq)
            continue
        source = eq.expression
        query = source.this if isinstance(source, exp.Subquery) else None
        if not isinstance(query, exp.Query):
            raise ProgrammingError(
                f"UPDATE: cannot read assignment {eq.sql(dialect=MonetDB)}: tique takes a subquery on the right of "
                "SET (a, b) = ...; for values write SET a = x, b = y",
                "42000",
            )
        outputs = query.selects
        if any(isinstance(o, exp.Star) or (isinstance(o, exp.Column) and o.is_star) for o in outputs):
            raise NotSupportedError(
                f"UPDATE: SET ({', '.join(c.sql(dialect=MonetDB) for c in columns)}) = (SELECT * ...) is not supported "
                "by tique: name the subquery's columns (SELECT x, y ...)"
            )
        if len(outputs) != len(columns):
            raise ProgrammingError(
                "UPDATE: The number of specified columns between the SET clause and the right side don't match "
                f"({len(columns)} != {len(outputs)})",
                "42000",
            )
        names = [f"tq_c{i}" for i in range(len(columns))]
        for column, name in zip(columns, names):
            row = exp.Subquery(
                this=query.copy(),
                alias=exp.TableAlias(this=exp.to_identifier("tq_row"), columns=[exp.to_identifier(n) for n in names]),
            )
            pick = exp.select(exp.column(name, "tq_row")).from_(row)
            items.append(exp.EQ(this=column.copy(), expression=exp.Subquery(this=pick)))
    tree.set("expressions", items)


def _refuse_repeated_targets(tree: exp.Update, info: TableInfo) -> None:
    """A column assigned twice (``SET v = 1, v = 2``, or in a row assignment): MonetDB refuses the statement; taking
    the last value would write what MonetDB never would."""
    seen: set[str] = set()
    for eq in tree.expressions:
        if isinstance(eq, exp.EQ) and isinstance(eq.this, exp.Column):
            name = info.column(ident(eq.this)).name
            if name in seen:
                raise ProgrammingError(f"UPDATE: Multiple assignments to same column '{name}'", "42000")
            seen.add(name)


def plan_update(tree: exp.Update, lookup: Lookup, options: ReadOptions) -> UpdatePlan:
    info, table = _target(tree.this, lookup, "UPDATE")
    if tree.args.get("returning"):
        raise NotSupportedError(_RETURNING.format(verb="UPDATE", then="SELECT the updated rows after the UPDATE"))
    _row_assignments(tree)
    _refuse_repeated_targets(tree, info)
    _defaults_assigned(tree, info)
    held = key_update(tree, info)
    assignments: dict[str, exp.Expression] = {}
    numbers: tuple[tuple[str, str], ...] = ()
    texts: set[str] = set()
    for eq in tree.expressions:
        if not isinstance(eq, exp.EQ) or not isinstance(eq.this, exp.Column):
            raise ProgrammingError(f"UPDATE: cannot read assignment {eq.sql()}")
        name = ident(eq.this)
        column = info.column(name)
        # cast (which also types a parameter, so MonetDB can prepare the statement: see prepared.py) to a type
        # wide enough that a value the column cannot hold comes back and is refused naming it (transaction.py)
        assignments[name] = _checked(eq.expression, column.sql_type)
        if parse_type(column.sql_type).base == "DECIMAL":
            numbers += _checked_in_client(eq.expression, column.sql_type, name, info)
        if parse_type(column.sql_type).base == "VARCHAR":
            bare = eq.expression
            while isinstance(bare, exp.Paren):
                bare = bare.this
            if isinstance(bare, exp.Placeholder) and (slot := slot_name(bare)):
                texts.add(slot)
    stored = frozenset(
        slot for value in assignments.values() for node in value.find_all(exp.Placeholder) if (slot := slot_name(node))
    )
    alias = source_name(table)
    old_keys = [exp.alias_(column_ref(k, alias), f"tq_old_{i}") for i, k in enumerate(info.key)]
    # exp.Alias, not exp.alias_: alias_ would name a bare subquery (SET ts = (SELECT ...) of a TIME/TIMESTAMP
    # column, left uncast by _checked) as a derived table, its name then printed inside the casts wrap_outputs adds
    new_values = [
        exp.Alias(
            this=assignments[c].copy() if c in assignments else column_ref(c, alias),
            alias=exp.to_identifier(f"tq_new_{i}"),
        )
        for i, c in enumerate(info.stored_names)
    ]
    select = exp.select(*old_keys, *new_values).from_(table.copy())
    source = tree.args.get("from_") or tree.args.get("from")
    if source is not None:  # UPDATE ... FROM u: the target joined to u; the transaction refuses a row matched twice
        first = source.this.copy()
        joins = list(first.args.get("joins") or [])  # sqlglot hangs FROM u, x JOIN y's joins on u
        first.set("joins", None)
        select.set("joins", [exp.Join(this=first), *(j.copy() for j in joins)])
    if tree.args.get("where") is not None:
        select.set("where", tree.args["where"].copy())
    types = [info.stored_type(k) for k in info.key] + [info.stored_type(c) for c in info.stored_names]
    decode = wrap_outputs(select, types, convert=True)  # new values converted by the engine, read exactly
    decode = replace(decode, targets=("",) * len(info.key) + info.stored_names)
    found = snapshot_reads(select, lookup, _with_rowid(options, info))
    key_changes = any(k in assignments for k in info.key)
    return UpdatePlan(
        info,
        Template.from_tree(found.tree),
        key_changes,
        frozenset(found.reads),
        found.point_keys,
        decode,
        stored,
        tuple(assignments),
        held,
        numbers,
        text_slots=frozenset(texts),
        row_read=_row_read(tree, table, info, options) if held is not None else None,
    )


def _row_read(tree: exp.Update | exp.Delete, table: exp.Table, info: TableInfo, options: ReadOptions) -> KeyRead | None:
    """The read of the whole rows an UPDATE or DELETE by key writes, when the client ranks their versions (integer
    keys): cheaper for the engine than the statement's own read, which MonetDB ranks (Transaction.update)."""
    select = exp.select(exp.Star()).from_(table.copy())
    select.set("where", tree.args["where"].copy())
    read = key_read(select, lambda _schema, _name: info, options)  # its one table: the target, looked up once
    return read if read is not None and read.versions is not None else None


def plan_delete(tree: exp.Delete, lookup: Lookup, options: ReadOptions) -> DeletePlan:
    info, table = _target(tree.this, lookup, "DELETE")
    if tree.args.get("returning"):
        raise NotSupportedError(_RETURNING.format(verb="DELETE", then="SELECT the rows before the DELETE"))
    if tree.args.get("using"):
        raise NotSupportedError(
            "DELETE ... USING is not supported by tique (nor by MonetDB 11.41): name the other table in a subquery "
            "of the WHERE clause (DELETE FROM t WHERE EXISTS (SELECT 1 FROM u WHERE ...))"
        )
    alias = source_name(table)
    select = exp.select(*[column_ref(k, alias) for k in info.key]).from_(table.copy())
    if tree.args.get("where") is not None:
        select.set("where", tree.args["where"].copy())
    decode = wrap_outputs(select, [info.stored_type(k) for k in info.key])
    found = snapshot_reads(select, lookup, _with_rowid(options, info))
    row_read = _row_read(tree, table, info, options) if tree.args.get("where") is not None else None
    return DeletePlan(info, Template.from_tree(found.tree), frozenset(found.reads), found.point_keys, decode, row_read)


def _with_rowid(options: ReadOptions, info: TableInfo) -> ReadOptions:
    if not info.has_rowid:
        return options
    return replace(options, expose_rowid=options.expose_rowid | {info.qualified})
