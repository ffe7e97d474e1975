"""CREATE TABLE read into a TableInfo: columns, key, defaults, generated columns, UNIQUE and FOREIGN KEY, with
what tique refuses said at once (tique/ddl.py runs the statement; tique/alter.py reads ADD COLUMN's definition
with the same functions)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from sqlglot import exp

from tique.catalog import (
    META_COLUMNS,
    PLAIN_HINT,
    ROWID,
    ColumnSpec,
    ForeignKey,
    SequenceDefault,
    SqlDefault,
    TableInfo,
)
from tique.errors import NotSupportedError, ProgrammingError
from tique.names import NAME, ident
from tique.rewrite.dialect import MonetDB
from tique.rewrite.values import python_value, sql_type

_NEXT_VALUE_MARKER = "tq_next_value_for"  # how statements.py hands NEXT VALUE FOR s to the parser

_SQL_DEFAULTS = {
    exp.CurrentTimestamp: "CURRENT_TIMESTAMP",
    exp.CurrentDate: "CURRENT_DATE",
    exp.CurrentTime: "CURRENT_TIME",
    exp.Localtimestamp: "LOCALTIMESTAMP",
    exp.Localtime: "LOCALTIME",
}


def type_sql(kind: exp.DataType) -> str:
    return kind.sql(dialect=MonetDB)


# MonetDB's ANALYZE schema[.table [(columns)]] [SAMPLE n] [MINMAX]
ANALYZE = re.compile(
    rf"\s*ANALYZE\s+({NAME})(?:\s*\.\s*({NAME}))?(\s*\([^()]*\))?((?:\s+SAMPLE\s+\d+)?(?:\s+MINMAX)?)\s*;?\s*$",
    re.I,
)

_TEMPORAL = ("DATE", "TIME", "TIMESTAMP")


def default_value(node: exp.Expression, column_type: exp.DataType | str | None = None) -> Any:
    """A column's DEFAULT as the catalog keeps it; ``column_type``: the column's type, when known."""
    for kind, text in _SQL_DEFAULTS.items():
        if type(node) is kind:
            return SqlDefault(text)
    if isinstance(node, exp.Anonymous) and node.name.lower() == _NEXT_VALUE_MARKER and node.expressions:
        return SequenceDefault("NEXT VALUE FOR " + str(node.expressions[0].this).replace("''", "'"))
    written = node.sql(dialect=MonetDB)
    typed = node.to.this.name if isinstance(node, exp.Cast) and isinstance(node.to, exp.DataType) else ""
    if typed in _TEMPORAL and isinstance(node.this, exp.Literal) and node.this.is_string:
        # DATE '2024-01-01' is a literal: kept as its text, which the column's type reads as the typed literal
        # (tique converts a default's text per column, as DEFAULT '2024-01-01' is); only of the column's own type,
        # since the text of another would be read as the column's (TIMESTAMP '... 10:00' for a DATE column)
        written = f"{type_sql(node.to)} {node.this.sql(dialect=MonetDB)}"  # as the user wrote it, not as a CAST
        column = type_sql(column_type) if isinstance(column_type, exp.DataType) else column_type
        if column is not None and sql_type(column).base != sql_type(type_sql(node.to)).base:
            raise NotSupportedError(
                f"column DEFAULT {written} of a {column} column is not supported by tique: write the default as a "
                f"literal of the column's type ({sql_type(column).base} '...')"
            )
        return python_value(node.this)
    if isinstance(node, exp.HexString) and not node.args.get("is_integer"):
        return str(node.this)  # X'00ff': a BLOB's default, kept as the hex text a BLOB column reads from a string
    if isinstance(node, exp.HexString):
        return int(str(node.this), 16)  # 0x41
    try:
        return python_value(node)
    except NotSupportedError:
        raise NotSupportedError(
            f"column DEFAULT {written} is not supported by tique (only literal defaults, NEXT VALUE FOR a sequence, "
            "and CURRENT_TIMESTAMP, CURRENT_DATE, CURRENT_TIME, LOCALTIMESTAMP, LOCALTIME are)"
        ) from None


def table_from_create(create: exp.Create, schema: str, table_id: int, raw_sql: str) -> TableInfo:
    """Read a CREATE TABLE statement into a TableInfo."""
    schema_node = create.this
    if not isinstance(schema_node, exp.Schema):
        raise NotSupportedError(
            "CREATE TABLE ... AS SELECT is not supported by tique yet: create the table, then INSERT ... SELECT"
        )
    table = schema_node.this
    name = ident(table)
    schema = ident(table.args.get("db")) or schema
    columns: list[ColumnSpec] = []
    key: list[str] = []
    generated: list[str] = []
    uniques: list[tuple[str, ...]] = []
    fks: list[ForeignKey] = []
    for item in _elements(schema_node):
        if isinstance(item, exp.ColumnDef):
            col_name = ident(item.this)
            if col_name.lower() in (ROWID, *META_COLUMNS):
                raise ProgrammingError(f"column name {col_name!r} is reserved by tique")
            not_null = False
            default = None
            serial = serial_type(item)
            if serial:
                generated.append(col_name)
                not_null = True
            for constraint in item.args.get("constraints") or []:
                kind = constraint.kind
                if isinstance(kind, exp.PrimaryKeyColumnConstraint):
                    key.append(col_name)
                    not_null = True
                elif isinstance(kind, exp.NotNullColumnConstraint) and not kind.args.get("allow_null"):
                    not_null = True
                elif isinstance(kind, exp.DefaultColumnConstraint):
                    default = default_value(kind.this, item.args.get("kind"))
                elif isinstance(kind, (exp.AutoIncrementColumnConstraint, exp.GeneratedAsIdentityColumnConstraint)):
                    _check_identity(kind, col_name)
                    generated.append(col_name)
                    not_null = True
                elif isinstance(kind, exp.UniqueColumnConstraint):
                    uniques.append((col_name,))
                elif isinstance(kind, exp.Reference):
                    fks.append(_foreign_key((col_name,), kind, schema, name))
                else:
                    raise NotSupportedError(
                        f"column constraint {constraint.sql(dialect='postgres')!r} on {col_name!r} is not supported "
                        "by tique (it enforces PRIMARY KEY, NOT NULL and literal DEFAULTs)"
                    )
            if item.args.get("kind") is None:
                raise ProgrammingError(f"column {col_name!r} needs a type")
            columns.append(ColumnSpec(col_name, serial or type_sql(item.args["kind"]), not_null, default))
        elif isinstance(item, exp.PrimaryKey):
            key.extend(ident(e.this if isinstance(e, exp.Ordered) else e) for e in item.expressions)
        elif isinstance(item, exp.ForeignKey):
            cols = tuple(ident(e) for e in item.expressions)
            fks.append(_foreign_key(cols, item.args["reference"], schema, name))
        elif isinstance(item, exp.UniqueColumnConstraint):
            target = item.this
            uniques.append(tuple(ident(e) for e in (target.expressions if isinstance(target, exp.Schema) else [])))
        else:
            raise NotSupportedError(f"table element {item.sql()!r} is not supported by tique")
    if not columns:
        raise ProgrammingError(f"table {name!r} has no columns")
    generated = list(dict.fromkeys(generated))
    _check_generated(columns, generated, name)
    if not key and any(serial_type(i) for i in schema_node.expressions if isinstance(i, exp.ColumnDef)):
        key = generated[:1]  # MonetDB's SERIAL is the primary key unless the table declares another
    names = {c.name for c in columns}
    missing = [k for k in key if k not in names]
    if missing:
        raise ProgrammingError(f"primary key column(s) {missing} of {name!r} are not columns of the table")
    if key:
        columns = [ColumnSpec(c.name, c.sql_type, True, c.default) if c.name in key else c for c in columns]
    kind = "plain" if PLAIN_HINT.search(raw_sql) else "tx"
    key = list(dict.fromkeys(key))
    uniques = list(dict.fromkeys(u for u in uniques if set(u) != set(key)))  # the primary key is unique already
    for cols in [*uniques, *(f.columns for f in fks)]:
        if not cols or any(c not in names for c in cols):
            raise ProgrammingError(f"constraint on {list(cols)} of {name!r}: not columns of the table", "42S22")
    if kind == "tx":
        for c in columns:
            check_type(name, c)
    return TableInfo(
        table_id,
        schema,
        name,
        kind,
        tuple(columns),
        tuple(key) if key else (ROWID,),
        generated=tuple(generated),
        uniques=tuple(uniques),
        foreign_keys=tuple(fks),
    )


def _elements(schema_node: exp.Schema) -> list[exp.Expression]:
    """The columns and table constraints of a CREATE TABLE; a named constraint (CONSTRAINT c ...) as its body."""
    items: list[exp.Expression] = []
    for item in schema_node.expressions:
        items.extend(item.expressions if isinstance(item, exp.Constraint) else [item])
    return items


def _foreign_key(columns: tuple[str, ...], ref: exp.Reference, schema: str, table: str) -> ForeignKey:
    """A REFERENCES clause read; referential actions other than NO ACTION / RESTRICT are refused."""
    for option in ref.args.get("options") or []:
        text = str(option).upper()
        if not re.search(r"\b(NO ACTION|RESTRICT)$", text):
            raise NotSupportedError(
                f"FOREIGN KEY ({', '.join(columns)}) of {table!r}: {text} is not supported by tique (it enforces NO "
                "ACTION / RESTRICT); delete or update the referencing rows in the same transaction instead"
            )
    target = ref.this
    parent = target.this if isinstance(target, exp.Schema) else target
    ref_cols = tuple(ident(e) for e in target.expressions) if isinstance(target, exp.Schema) else ()
    return ForeignKey(columns, ident(parent.args.get("db")) or schema, ident(parent), ref_cols)


def resolve_foreign_keys(info: TableInfo, lookup: Any) -> TableInfo:
    """Check each foreign key against its parent (``lookup(schema, name)`` gives its TableInfo or None): a
    transactional table's primary key, columns ordered as that key. Plain tables keep MonetDB's own."""
    resolved = []
    for fk in info.foreign_keys:
        parent = info if (fk.schema, fk.table) == (info.schema, info.name) else lookup(fk.schema, fk.table)
        if info.kind == "plain" and parent is None:
            resolved.append(fk)  # a table of MonetDB's own: MonetDB checks the reference
            continue
        if parent is None or parent.kind not in ("tx", "plain"):
            raise ProgrammingError(
                f"FOREIGN KEY of {info.name!r}: {fk.schema}.{fk.table} is not a table of tique's; create it first",
                "42S02",
            )
        if parent.kind != info.kind:
            raise NotSupportedError(
                f"FOREIGN KEY of {info.name!r} references {fk.table!r}: a transactional table and a plain one cannot "
                "reference each other; make both transactional (or both '-- tique: plain')"
            )
        if info.kind == "plain":
            resolved.append(fk)
            continue
        target = fk.target or parent.key
        if parent.has_rowid or len(target) != len(fk.columns) or set(target) != set(parent.key):
            raise NotSupportedError(
                f"FOREIGN KEY ({', '.join(fk.columns)}) of {info.name!r} references {list(target)} of "
                f"{fk.table!r}: tique enforces foreign keys to a table's primary key only; reference the primary key"
            )
        by_target = dict(zip(target, fk.columns))
        resolved.append(ForeignKey(tuple(by_target[k] for k in parent.key), fk.schema, fk.table, parent.key))
    return replace(info, foreign_keys=tuple(resolved))


_SERIALS = {
    exp.DataType.Type.SERIAL: "INT",
    exp.DataType.Type.BIGSERIAL: "BIGINT",
    exp.DataType.Type.SMALLSERIAL: "SMALLINT",
}
_INTEGERS = {"TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT", "HUGEINT"}


def serial_type(column: exp.Expression) -> str | None:
    """The integer type of a SERIAL / BIGSERIAL / SMALLSERIAL column (None for any other type)."""
    kind = column.args.get("kind")
    return _SERIALS.get(kind.this) if isinstance(kind, exp.DataType) else None


def _check_identity(kind: exp.Expression, col_name: str) -> None:
    """tique's counters start at 1 and step by 1: other IDENTITY options are refused, not ignored."""
    for option in ("start", "increment", "minvalue", "maxvalue", "cycle"):
        value = kind.args.get(option)
        if value is None or (option in ("start", "increment") and value.sql() == "1"):
            continue
        raise NotSupportedError(
            f"IDENTITY option {option.upper()} on column {col_name!r} is not supported by tique "
            "(generated keys start at 1 and step by 1)"
        )


def _check_generated(columns: list[ColumnSpec], generated: list[str], table: str) -> None:
    if len(generated) > 1:
        raise NotSupportedError(f"table {table!r} has several generated columns {generated}: tique supports one")
    for c in columns:
        if c.name in generated and c.sql_type.upper() not in _INTEGERS:
            raise NotSupportedError(f"generated column {c.name!r} of {table!r} must be an integer, not {c.sql_type}")


def check_type(table: str, column: ColumnSpec) -> None:
    """Only types whose values tique keeps exact (see rewrite/values.py); a plain table may use any type."""
    try:
        sql_type(column.sql_type)
    except NotSupportedError as exc:
        raise NotSupportedError(
            f"column {column.name!r} of {table!r}: {exc}; declare the table '-- tique: plain' to use it untracked"
        ) from None
