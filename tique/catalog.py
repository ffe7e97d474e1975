"""The tables tique manages: what the application calls T, and the Storage and Cache tables behind it.

    T            in the application's schema: a read-only view of T's latest committed state (tique/views.py)
    T__storage   the application's schema and constraints; stable rows only, written by the checkpointer
    T__cache     the same columns without any constraint, plus tq_txid, tq_seq (statement order within the
                 transaction) and tq_deleted; append-only
    tq_rowid     a hidden version key, in both, for tables without a primary key (duplicate rows are allowed,
                 as SQL says)

Storage and Cache live in tique's own schema ``tique_data``, out of the application's way, as
"tique_data"."S__T__storage" and "S__T__cache" (S the application's schema; "S__T__<table id>" when that base
name is taken, e.g. by schema "a__b" table "c" and schema "a" table "b__c"). The spec in tique.tables records
where (key "data": [schema, base name]); a table without it was made by an older tique, whose Storage and Cache
sit beside T in the application's schema as "S"."T__storage" / "S"."T__cache": such tables keep working there.

A *plain* table (``-- tique: plain`` in its CREATE TABLE) is left to MonetDB as it is: no versions, no
snapshot, no cost; for analytical-only data.

Catalog changes and concurrent transactions (several processes share one engine, each with its own Catalog):

- A table's id is the transaction id of the DDL that created it (the C module's counter): unique across
  processes, and never reused, since recovery restarts the counter past every recorded id (MAX(table_id)
  included). Key hashes identify the table by (schema, name), not by id, so every process hashes a key alike,
  whatever its catalog holds.
- DROP TABLE of a tique table commits through the normal protocol (ddl.py): a commit timestamp, and a commit
  record whose write-set is the table's *schema hash* (``schema_hash``), decided before the physical change is
  made and made visible after it. (CREATE needs none: a name re-created was dropped first, by such a DROP;
  ALTER and TRUNCATE of tique tables are refused.) Every writing transaction checks at commit, besides its
  write-set, that no such record of a table it read or wrote committed in (sts, cts): a read-set check, so
  ordinary transactions on a table never conflict with each other, while one that overlaps a DROP of its table
  fails (also when its own session ran the DROP: its writes were meant for the old table).
- A transaction that begins after such a DDL is visible sees a newer catalog version (``tique.catalog_version``,
  read in the begin statement after the snapshot is taken; the DDL bumps it before it becomes visible): its
  process then refreshes its catalog, and the plans cached for the old version are no longer used.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any

from sqlglot import exp

from tique import sqlfiles
from tique.engine.base import RawConnection
from tique.errors import DatabaseError, NotSupportedError, ProgrammingError
from tique.names import qualified, quote
from tique.params import literal

ROWID = "tq_rowid"
UNREGISTER_TRIES = 20
META_COLUMNS = ("tq_txid", "tq_seq", "tq_deleted")
PLAIN_HINT = re.compile(r"tique\s*:\s*plain", re.I)
DATA_SCHEMA = "tique_data"
PROBE_SAMPLE = 10_000  # Storage rows sampled to choose a composite key's probe column (Catalog.probed)
PROBE_MIN_ROWS = 1000  # fewer: scanning is cheap anyway, and the sample tells little


class SqlDefault(str):
    """A DEFAULT the engine evaluates when the INSERT statement runs (CURRENT_TIMESTAMP and kin): its SQL text.
    Stored in the spec as {"sql": text}; rewrite/writes.py puts it into the INSERT's rows."""


class SequenceDefault(SqlDefault):
    """DEFAULT NEXT VALUE FOR s: one value of the application's SEQUENCE s per row that takes the default, fetched
    when the INSERT is buffered (tique/rows.py). Its SQL text is "NEXT VALUE FOR s"."""

    @property
    def sequence(self) -> str:
        return self[len("NEXT VALUE FOR ") :]


_NEXT_VALUE_MARKER = "tq_next_value_for"  # how statements.py hands NEXT VALUE FOR s to the parser

_SQL_DEFAULTS = {
    exp.CurrentTimestamp: "CURRENT_TIMESTAMP",
    exp.CurrentDate: "CURRENT_DATE",
    exp.CurrentTime: "CURRENT_TIME",
    exp.Localtimestamp: "LOCALTIMESTAMP",
    exp.Localtime: "LOCALTIME",
}


def default_sql(value: Any) -> str:
    """A default as SQL, for DDL."""
    from tique.params import literal

    return str(value) if isinstance(value, SqlDefault) else literal(value)


def _spec_default(value: Any) -> Any:
    return {"sql": str(value)} if isinstance(value, SqlDefault) else value


def _read_default(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    text = str(value["sql"])
    return SequenceDefault(text) if text.startswith("NEXT VALUE FOR ") else SqlDefault(text)


@dataclass(frozen=True)
class ColumnSpec:
    name: str
    sql_type: str  # as MonetDB accepts it, e.g. "INT", "VARCHAR(16)", "DECIMAL(12,2)"
    not_null: bool = False
    default: Any = None  # a Python value, or a SqlDefault the engine evaluates at INSERT


@dataclass(frozen=True)
class ForeignKey:
    """A FOREIGN KEY of a transactional table: ``columns`` reference the primary key of ``schema.table``, in that
    key's column order. Enforced by tique (tique/constraints.py), with NO ACTION semantics."""

    columns: tuple[str, ...]
    schema: str
    table: str
    target: tuple[str, ...] = ()  # the referenced columns as written (checked against the parent's key at CREATE)


@dataclass(frozen=True)
class TableInfo:
    table_id: int
    schema: str
    name: str
    kind: str  # "tx" or "plain"
    columns: tuple[ColumnSpec, ...]
    key: tuple[str, ...]  # the version key: the primary key, or (tq_rowid,)
    storage_ddl: str = ""
    indexes: tuple[str, ...] = field(default_factory=tuple)
    generated: tuple[str, ...] = ()  # AUTO_INCREMENT / SERIAL / IDENTITY columns (tique/generated.py)
    data_schema: str = ""  # where Storage and Cache live; "" = beside T (a table made by an older tique)
    data_base: str = ""  # their name without the __storage / __cache suffix
    uniques: tuple[tuple[str, ...], ...] = ()  # UNIQUE column sets, enforced by tique (tique/constraints.py)
    foreign_keys: tuple[ForeignKey, ...] = ()

    # the key column a point read selects Storage by first (Catalog.probed); not part of the spec
    probe: str = field(default="", compare=False)

    def references(self, schema: str, name: str) -> tuple[ForeignKey, ...]:
        """This table's foreign keys to table schema.name."""
        return tuple(f for f in self.foreign_keys if (f.schema, f.table) == (schema, name))

    @property
    def constrained(self) -> set[str]:
        """Columns in a UNIQUE or FOREIGN KEY constraint of this table."""
        return {c for u in self.uniques for c in u} | {c for f in self.foreign_keys for c in f.columns}

    @property
    def has_rowid(self) -> bool:
        return self.key == (ROWID,)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def stored_names(self) -> tuple[str, ...]:
        """Columns of the Storage table: the application's, then tq_rowid when it is the key."""
        return self.column_names + ((ROWID,) if self.has_rowid else ())

    def column(self, name: str) -> ColumnSpec:
        for c in self.columns:
            if c.name == name:
                return c
        raise ProgrammingError(f"column {name!r} does not exist in table {self.name!r}")

    @property
    def identity(self) -> str:
        """What names the table in key hashes: the same in every process and for every id it has had."""
        return f"{self.schema}\x00{self.name}"

    @property
    def qualified(self) -> str:
        """schema.name: how a transaction keys its reads, writes and own versions per table (two schemas may each
        have a table of one name)."""
        return f"{self.schema}.{self.name}"

    @property
    def physical_schema(self) -> str:
        """The schema holding Storage and Cache."""
        return self.data_schema or self.schema

    @property
    def storage_name(self) -> str:
        """The Storage table's name within ``physical_schema``, unquoted."""
        return f"{self.data_base or self.name}__storage"

    @property
    def cache_name(self) -> str:
        return f"{self.data_base or self.name}__cache"

    @property
    def storage(self) -> str:
        """The Storage table, schema-qualified and quoted for SQL."""
        return f"{quote(self.physical_schema)}.{quote(self.storage_name)}"

    @property
    def cache(self) -> str:
        return f"{quote(self.physical_schema)}.{quote(self.cache_name)}"

    def spec_json(self) -> str:
        return json.dumps(
            {
                "columns": [[c.name, c.sql_type, c.not_null, _spec_default(c.default)] for c in self.columns],
                "key": list(self.key),
                "indexes": list(self.indexes),
                **({"generated": list(self.generated)} if self.generated else {}),
                **({"sql": self.storage_ddl} if self.kind == "view" else {}),  # a view's SELECT (ddl_views.py)
                **({"data": [self.data_schema, self.data_base]} if self.data_schema else {}),
                **({"unique": [list(u) for u in self.uniques]} if self.uniques else {}),
                **(
                    {"fks": [[list(f.columns), f.schema, f.table] for f in self.foreign_keys]}
                    if self.foreign_keys
                    else {}
                ),
            }
        )

    @classmethod
    def from_row(cls, table_id: int, schema: str, name: str, kind: str, spec: str) -> TableInfo:
        data = json.loads(spec)
        columns = tuple(ColumnSpec(n, t, bool(nn), _read_default(d)) for n, t, nn, d in data["columns"])
        return cls(
            table_id,
            schema,
            name,
            kind,
            columns,
            tuple(data["key"]),
            indexes=tuple(data.get("indexes", ())),
            generated=tuple(data.get("generated", ())),
            storage_ddl=str(data.get("sql", "")),
            data_schema=str(data.get("data", ["", ""])[0]),
            data_base=str(data.get("data", ["", ""])[1]),
            uniques=tuple(tuple(u) for u in data.get("unique", ())),
            foreign_keys=tuple(ForeignKey(tuple(c), str(s), str(t)) for c, s, t in data.get("fks", ())),
        )


def install(conn: RawConnection) -> None:
    """Create tique's metadata tables if missing."""
    from tique.sequencer import ensure_schema

    ensure_schema(conn)
    if not conn.execute(f"SELECT COUNT(*) FROM sys.schemas WHERE name = '{DATA_SCHEMA}'").scalar():
        conn.execute(f"CREATE SCHEMA {DATA_SCHEMA}")
    present = {
        str(r[0])
        for r in conn.execute(
            "SELECT t.name FROM sys.tables t JOIN sys.schemas s ON t.schema_id = s.id WHERE s.name = 'tique'"
        ).rows
    }
    for stmt in sqlfiles.statements("metadata"):  # each CREATE TABLE tique.<name> (...), made when missing
        name = stmt.split("tique.", 1)[1].split()[0]
        if name not in present:
            conn.execute(stmt)


def placed(conn: RawConnection, info: TableInfo, base_name: str | None = None) -> TableInfo:
    """``info`` with its Storage and Cache placed in tique_data, under a base name no other table there has
    (for a new table, or one renamed to ``base_name``)."""
    if info.kind != "tx":
        return info
    base = f"{info.schema}__{base_name or info.name}"
    taken = conn.execute(
        "SELECT COUNT(*) FROM sys.tables t JOIN sys.schemas s ON t.schema_id = s.id "
        f"WHERE s.name = {literal(DATA_SCHEMA)} AND t.name IN ({literal(base + '__storage')}, "
        f"{literal(base + '__cache')})"
    ).scalar()
    if taken:
        base = f"{base}__{info.table_id}"  # table ids are never reused
    return replace(info, data_schema=DATA_SCHEMA, data_base=base)


def table_info(conn: RawConnection, schema: str, name: str) -> TableInfo:
    """A table's entry in tique.tables, read directly (for tools and tests that name Storage or Cache)."""
    rows = conn.execute(
        "SELECT table_id, kind, spec FROM tique.tables "
        f"WHERE schema_name = {literal(schema)} AND name = {literal(name)}"
    ).rows
    if not rows:
        raise ProgrammingError(f"{schema}.{name} is not a tique table: create it through tique first")
    table_id, kind, spec = rows[0]
    return TableInfo.from_row(int(table_id), schema, name, str(kind), str(spec))


def schema_hash(schema: str, name: str) -> int:
    """The reserved write-set entry of a DDL on table schema.name (never a key's hash: another prefix)."""
    digest = hashlib.blake2b(f"\x01ddl\x00{schema}\x00{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class Catalog:
    """The process's view of tique.tables, shared by its connections; refreshed on a miss, after DDL, and when a
    transaction begins under a newer engine catalog version (``sync``)."""

    def __init__(self) -> None:
        self._tables: dict[tuple[str, str], TableInfo] = {}
        self._lock = threading.Lock()
        self.version = 0  # bumps on every change, so statement caches know to re-plan
        self.seen: int | None = None  # the engine's catalog version this view was last read under
        self._probes: dict[int, str] = {}  # table id -> its probe column (see probed)

    def sync(self, conn: RawConnection, engine_version: int) -> None:
        """Refresh when the engine's catalog version (read before calling) differs from the one last seen."""
        if engine_version != self.seen:
            self.refresh(conn)
            self.seen = engine_version

    def refresh(self, conn: RawConnection) -> None:
        rows = conn.execute("SELECT table_id, schema_name, name, kind, spec FROM tique.tables").rows
        tables = {
            (str(s), str(n)): TableInfo.from_row(int(i), str(s), str(n), str(k), str(sp)) for i, s, n, k, sp in rows
        }
        with self._lock:
            if tables != self._tables:
                self._tables = tables
                self.version += 1

    def get(self, schema: str, name: str) -> TableInfo | None:
        return self._tables.get((schema, name))

    def probed(self, conn: RawConnection, info: TableInfo) -> TableInfo:
        """``info`` with its probe column: of a composite key, the column with the most distinct values in a
        sample of Storage. A point read selects Storage by that column alone first (snapshot.py), which MonetDB
        answers from a hash it keeps on the column, then filters the few rows by the whole key: MonetDB scans
        for an equality on several columns (measured at 1.2M rows: 3 ms scanning, 0.2 ms probing). Sampled once
        per process when Storage has enough rows to tell; until then the last key column."""
        if info.kind != "tx" or len(info.key) < 2 or info.has_rowid:
            return info
        probe = self._probes.get(info.table_id)
        if probe not in info.key:  # not sampled yet, or a key column renamed since
            probe = self._sample_probe(conn, info)
        return replace(info, probe=probe or info.key[-1])

    def _sample_probe(self, conn: RawConnection, info: TableInfo) -> str | None:
        counts = ", ".join(f"COUNT(DISTINCT {quote(k)})" for k in info.key)
        keys = ", ".join(quote(k) for k in info.key)
        try:
            row = conn.execute(
                f"SELECT COUNT(*), {counts} FROM (SELECT {keys} FROM {info.storage} SAMPLE {PROBE_SAMPLE}) AS s"
            ).rows[0]
        except DatabaseError:
            return None
        if int(row[0]) < PROBE_MIN_ROWS:
            return None  # too few rows to tell (and to matter): decided again for the next new plan
        best = max(range(len(info.key)), key=lambda i: (int(row[i + 1]), i))
        self._probes[info.table_id] = info.key[best]
        return info.key[best]

    def lookup(self, conn: RawConnection, schema: str, name: str) -> TableInfo | None:
        info = self.get(schema, name)
        if info is None:
            self.refresh(conn)  # another connection may have created it
            info = self.get(schema, name)
        return info

    def all(self) -> list[TableInfo]:
        return list(self._tables.values())

    def children(self, info: TableInfo) -> list[tuple[TableInfo, ForeignKey]]:
        """The foreign keys of transactional tables that reference ``info`` (self-references included)."""
        return [(t, f) for t in self.all() if t.kind == "tx" for f in t.references(info.schema, info.name)]


# ---- DDL ---------------------------------------------------------------------------------------------------


def _type_sql(kind: exp.DataType) -> str:
    from tique.rewrite.dialect import MonetDB

    return kind.sql(dialect=MonetDB)


def _default_value(node: exp.Expression) -> Any:
    from tique.rewrite.values import python_value

    for kind, text in _SQL_DEFAULTS.items():
        if type(node) is kind:
            return SqlDefault(text)
    if isinstance(node, exp.Anonymous) and node.name.lower() == _NEXT_VALUE_MARKER and node.expressions:
        return SequenceDefault("NEXT VALUE FOR " + str(node.expressions[0].this).replace("''", "'"))
    try:
        return python_value(node)
    except NotSupportedError:
        raise NotSupportedError(
            f"column DEFAULT {node.sql()} is not supported by tique (only literal defaults, NEXT VALUE FOR a sequence, "
            "and CURRENT_TIMESTAMP, CURRENT_DATE, CURRENT_TIME, LOCALTIMESTAMP, LOCALTIME are)"
        ) from None


def table_from_create(create: exp.Create, schema: str, table_id: int, raw_sql: str) -> TableInfo:
    """Read a CREATE TABLE statement into a TableInfo."""
    schema_node = create.this
    if not isinstance(schema_node, exp.Schema):
        raise NotSupportedError(
            "CREATE TABLE ... AS SELECT is not supported by tique yet: create the table, then INSERT ... SELECT"
        )
    from tique.names import ident

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
            serial = _serial_type(item)
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
                    default = _default_value(kind.this)
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
            columns.append(ColumnSpec(col_name, serial or _type_sql(item.args["kind"]), not_null, default))
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
    if not key and any(_serial_type(i) for i in schema_node.expressions if isinstance(i, exp.ColumnDef)):
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
            _check_type(name, c)
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
    from tique.rewrite.writes import ident

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


def _serial_type(column: exp.Expression) -> str | None:
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


def _check_type(table: str, column: ColumnSpec) -> None:
    """Only types whose values tique keeps exact (see rewrite/values.py); a plain table may use any type."""
    from tique.rewrite.values import sql_type

    try:
        sql_type(column.sql_type)
    except NotSupportedError as exc:
        raise NotSupportedError(
            f"column {column.name!r} of {table!r}: {exc}; declare the table '-- tique: plain' to use it untracked"
        ) from None


def physical_tables(info: TableInfo) -> list[str]:
    """A table's physical tables, quoted, in the order ``create_ddl`` creates them."""
    return [qualified(info.schema, info.name)] if info.kind == "plain" else [info.storage, info.cache]


def create_ddl(info: TableInfo) -> list[str]:
    """The statements that create a table's physical tables (one per ``physical_tables`` entry)."""
    if info.kind == "plain":
        return [_storage_create(info, qualified(info.schema, info.name))]
    cache_cols = [f"{quote(c.name)} {c.sql_type}" for c in info.columns]
    if info.has_rowid:
        cache_cols.append(f"{ROWID} BIGINT")
    cache_cols += ["tq_txid BIGINT", "tq_seq INT", "tq_deleted BOOLEAN"]
    return [_storage_create(info, info.storage), f"CREATE TABLE {info.cache} ({', '.join(cache_cols)})"]


def _storage_create(info: TableInfo, physical: str) -> str:
    cols = []
    for c in info.columns:
        col = f"{quote(c.name)} {c.sql_type}"
        if c.not_null:
            col += " NOT NULL"
        if c.default is not None:
            col += f" DEFAULT {default_sql(c.default)}"
        cols.append(col)
    if info.has_rowid and info.kind != "plain":
        cols.append(f"{ROWID} BIGINT")
    elif not info.has_rowid:
        cols.append("PRIMARY KEY (" + ", ".join(quote(k) for k in info.key) + ")")
    if info.kind == "plain":  # MonetDB enforces a plain table's constraints (tique, a transactional table's)
        cols += ["UNIQUE (" + ", ".join(quote(c) for c in u) + ")" for u in info.uniques]
        cols += [
            f"FOREIGN KEY ({', '.join(map(quote, f.columns))}) REFERENCES {quote(f.schema)}.{quote(f.table)}"
            + (f" ({', '.join(map(quote, f.target))})" if f.target else "")
            for f in info.foreign_keys
        ]
    return f"CREATE TABLE {physical} ({', '.join(cols)})"


def register(conn: RawConnection, info: TableInfo) -> None:
    conn.execute(
        f"INSERT INTO tique.tables VALUES ({info.table_id}, {literal(info.schema)}, {literal(info.name)}, "
        f"{literal(info.kind)}, {literal(info.spec_json())})"
    )


def unregister(conn: RawConnection, info: TableInfo) -> None:
    """Remove exactly this table's entry (id, schema and name: an old database may hold duplicate ids)."""
    where = f"table_id = {info.table_id} AND schema_name = {literal(info.schema)} AND name = {literal(info.name)}"
    for attempt in range(UNREGISTER_TRIES):
        try:
            conn.execute(f"DELETE FROM tique.tables WHERE {where}")
            return
        except DatabaseError:
            # MonetDB aborts a DELETE when another session's append (a concurrent CREATE TABLE) commits meanwhile
            if attempt == UNREGISTER_TRIES - 1:
                raise
            time.sleep(0.005 * (attempt + 1))
