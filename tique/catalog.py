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
- DROP TABLE of a tique table commits through the normal protocol (versioned.py): a commit timestamp, and a commit
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

import decimal
import hashlib
import json
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from tique import sqlfiles
from tique.engine.base import RawConnection, retried_on_conflict
from tique.errors import DatabaseError, DataError, OperationalError, ProgrammingError, read_beside_update
from tique.names import qualified, quote, table_key
from tique.params import literal
from tique.sequencer import ensure_schema

ROWID = "tq_rowid"
# a hidden row id is (txid << ROWID_BITS) | n: a transaction's rows (rows.py); a bulk load's are its negatives
ROWID_BITS = 24
FLOAT_TYPES = frozenset({"REAL", "FLOAT", "DOUBLE", "DOUBLE PRECISION"})
STRING_TYPES = frozenset({"VARCHAR", "CHAR", "CHARACTER", "CHARACTER VARYING", "TEXT", "CLOB", "STRING"})


def base_type(sql_type: str) -> str:
    """A column type's name without its precision: ``DECIMAL(10,2)`` is ``DECIMAL``."""
    return sql_type.upper().split("(")[0].strip()


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


def default_sql(value: Any) -> str:
    """A default as SQL, for DDL."""
    return str(value) if isinstance(value, SqlDefault) else literal(value)


def physical_default(info: TableInfo, column: ColumnSpec) -> str:
    """A column's default as SQL for its Storage and Cache columns: a ``hex_columns`` one as the hex text of its
    value, upper case (a BLOB's default is kept as the hex text written in ``X'...'``)."""
    value = column.default
    if column.name not in info.hex_columns or not isinstance(value, str) or isinstance(value, SqlDefault):
        return default_sql(value)
    try:
        return literal(bytes.fromhex(value).hex().upper())
    except ValueError:
        raise DataError(f"DEFAULT of BLOB column {column.name!r}: {value!r} is not hexadecimal", "22018") from None


def _spec_default(value: Any) -> Any:
    if isinstance(value, SqlDefault):
        return {"sql": str(value)}
    if isinstance(value, decimal.Decimal):  # DEFAULT 0.00: JSON has no decimals, and a float would round it
        return {"decimal": str(value)}
    return value


def _read_default(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    if "decimal" in value:
        return decimal.Decimal(value["decimal"])
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
    # BLOB columns of Storage and Cache hold their values as hex text (``hex_columns``); False for a table made by
    # an older tique, whose BLOB columns stay BLOB
    blob_hex: bool = True

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

    @cached_property  # asked for several times per statement; a TableInfo never changes
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @cached_property
    def stored_names(self) -> tuple[str, ...]:
        """Columns of the Storage table: the application's, then tq_rowid when it is the key."""
        return self.column_names + ((ROWID,) if self.has_rowid else ())

    def stored_type(self, name: str) -> str:
        """The SQL type of a stored column (the hidden row id is a BIGINT)."""
        return "BIGINT" if name == ROWID else self.column(name).sql_type

    @cached_property
    def hex_columns(self) -> frozenset[str]:
        """The BLOB columns whose Storage and Cache columns are CLOB, holding each value as the engine's hex text
        of it (upper case, what ``CAST(b AS CLOB)`` gives, so equal values are equal texts). MonetDB 11.41's BLOB
        heaps reuse freed space through a free list kept inside the heap file; a kill during the kernel's flush
        can leave that file newer than the catalog, and committed values then read back with other bytes. String
        heaps are append-only. Reads see them as BLOB again (rewrite/snapshot.py, views.py)."""
        if self.kind != "tx" or not self.blob_hex:
            return frozenset()
        return frozenset(c.name for c in self.columns if base_type(c.sql_type) == "BLOB")

    def physical_type(self, name: str) -> str:
        """The SQL type of a column of the Storage and Cache tables (``hex_columns`` are CLOB)."""
        return "CLOB" if name in self.hex_columns else self.stored_type(name)

    def typed_sql(self, name: str) -> str:
        """SQL text reading a column of Storage or Cache as its own type (a ``hex_columns`` one cast to BLOB)."""
        return f"CAST({quote(name)} AS BLOB)" if name in self.hex_columns else quote(name)

    @cached_property
    def float_positions(self) -> tuple[int, ...]:
        """Where the REAL and DOUBLE columns sit in a stored row (their zeros have a sign: tique/zero_signs.py)."""
        return tuple(i for i, c in enumerate(self.stored_names) if base_type(self.stored_type(c)) in FLOAT_TYPES)

    @cached_property
    def key_types(self) -> tuple[str, ...]:
        """The SQL type of each key column."""
        return tuple(self.stored_type(k) for k in self.key)

    @cached_property
    def key_positions(self) -> tuple[int, ...]:
        """Where each key column sits in a stored row (``stored_names`` order)."""
        return tuple(self.stored_names.index(k) for k in self.key)

    @cached_property
    def _columns_by_name(self) -> dict[str, ColumnSpec]:
        return {c.name: c for c in reversed(self.columns)}  # the first of a name, as a scan would find

    @cached_property
    def has_strings(self) -> bool:
        """Whether a column holds strings (append_guard.py: reads of such a table are kept from its appends)."""
        return bool(self.quoted_strings)

    @cached_property
    def quoted_strings(self) -> tuple[str, ...]:
        """The quoted names of the string columns."""
        return tuple(
            quote(c.name)
            for c in self.columns
            if base_type(c.sql_type) in STRING_TYPES or c.name in self.hex_columns  # hex text is a string too
        )

    def names_strings(self, sql: str) -> bool:
        """Does ``sql`` name one of the table's string columns? tique's statements name every column they read,
        quoted; another table's column of the same name counts too (the read is guarded once more than needed)."""
        return any(name in sql for name in self.quoted_strings)

    def column(self, name: str) -> ColumnSpec:
        found = self._columns_by_name.get(name)
        if found is not None:
            return found
        raise ProgrammingError(f"column {name!r} does not exist in table {self.name!r}")

    @property
    def identity(self) -> str:
        """What names the table in key hashes: the same in every process and for every id it has had."""
        return f"{self.schema}\x00{self.name}"

    @cached_property  # a key of several dicts per statement
    def qualified(self) -> str:
        """schema.name: how a transaction keys its reads, writes and own versions per table (two schemas may each
        have a table of one name)."""
        return table_key(self.schema, self.name)

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
                **({"hex": True} if self.blob_hex and self.kind == "tx" else {}),
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
            blob_hex=bool(data.get("hex", False)),
        )


# How the rewriter finds a table by (schema or None for the session's, name): the Catalog, or a test's dict.
Lookup = Callable[[str | None, str], TableInfo | None]


def install(conn: RawConnection) -> None:
    """Create tique's metadata tables if missing."""
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
    # a table renamed away keeps its constraints' and indexes' names (MonetDB derives them from the table's name,
    # unique per schema): those count as taken too (LIKE's _ matches more names than these: the fallback is safe)
    in_data = f"JOIN sys.schemas s ON t.schema_id = s.id WHERE s.name = {literal(DATA_SCHEMA)}"
    prefix = literal(base + "__%")
    taken = conn.execute(
        f"SELECT (SELECT COUNT(*) FROM sys.tables t {in_data} AND t.name IN ({literal(base + '__storage')}, "
        f"{literal(base + '__cache')})) + (SELECT COUNT(*) FROM sys.keys k JOIN sys.tables t ON k.table_id = t.id "
        f"{in_data} AND k.name LIKE {prefix}) + (SELECT COUNT(*) FROM sys.idxs i JOIN sys.tables t ON i.table_id = "
        f"t.id {in_data} AND i.name LIKE {prefix})"
    ).scalar()
    if taken:
        base = f"{base}__{info.table_id}"  # table ids are never reused
    return replace(info, data_schema=DATA_SCHEMA, data_base=base)


def table_info(conn: RawConnection, schema: str, name: str) -> TableInfo:
    """A table's entry in tique.tables, read directly (for tools and tests that name Storage or Cache)."""
    where = f"WHERE schema_name = {literal(schema)} AND name = {literal(name)}"
    found = read_tables(conn, where)
    if not found:
        raise ProgrammingError(f"{schema}.{name} is not a tique table: create it through tique first")
    return found[0]


# MonetDB 11.41 can read a string of a column wrong (empty, or another row's) while another session's write grows
# that column's heap (README, "Engine facts we measured"; benchmarks/string_race.py): a spec read beside another
# session's RENAME came back empty, and a name read wrong would hide a table from every session of the process. So
# the catalog is read until two reads in a row agree and parse (on DDL, catalog changes, a failed statement, and
# after a pass-through query in a transaction: 0.26 ms embedded for one more read). A read that met another
# session's UPDATE of the spec (errors.read_beside_update: about once a minute beside a loop of ALTERs and three
# writers over MAPI, each failing a writer's begin) counts as one that did not agree.
TABLES_SQL = "SELECT table_id, schema_name, name, kind, spec FROM tique.tables"
READ_ATTEMPTS = 5


class TableReplaced(OperationalError):
    """A write by table name found the table dropped, or dropped and created again under its name, since it was
    looked up: nothing was written."""


def still_current_sql(info: TableInfo) -> str:
    """A condition a DELETE by ``info``'s Storage or Cache name adds (``AND ...``): it deletes nothing once the
    table was dropped, or dropped and created again under its name (see still_current)."""
    return f"EXISTS (SELECT 1 FROM tique.tables WHERE table_id = {int(info.table_id)})"


def still_current(conn: RawConnection, info: TableInfo, what: str) -> None:
    """The first statement of an engine transaction that writes ``info``'s Storage or Cache by name, outside the
    commit protocol (the checkpointer's move, a bulk load's): TableReplaced unless ``info``'s table is still in
    tique.tables. Storage and Cache are named by schema and table, so another session's DROP and CREATE of the
    name, between the lookup and the write, gave the write the new table: the checkpointer copied a dropped table's
    versions into its successor, a load went into it. The check and the writes read one engine snapshot, so a DROP
    that commits after the check leaves them to the dropped tables, never to a new one (MonetDB resolves names in
    the transaction's own catalog). A division by the count errs at once when it is 0, in the transaction."""
    try:
        conn.execute(f"SELECT 1 / (SELECT COUNT(*) FROM tique.tables WHERE table_id = {int(info.table_id)})")
    except DatabaseError as exc:
        if exc.sqlstate != "22012":
            raise
        raise TableReplaced(
            f"{what}: table {info.schema}.{info.name} was dropped, or dropped and created again, by another session "
            "since it was looked up; nothing was written",
            "42S02",
        ) from None


def read_tables(conn: RawConnection, where: str = "") -> list[TableInfo]:
    """tique.tables' rows (``where``: a WHERE clause), parsed; read again until two reads agree (see above)."""
    last: list[TableInfo] | None = None
    problem: Exception | None = None
    for _ in range(READ_ATTEMPTS):
        try:
            rows = conn.execute(f"{TABLES_SQL} {where}").rows
        except DatabaseError as exc:  # beside a DDL's UPDATE of the spec: as a read that did not agree
            if not read_beside_update(exc):
                raise
            problem, last = exc, None
            continue
        try:
            read = [TableInfo.from_row(int(i), str(s), str(n), str(k), str(sp)) for i, s, n, k, sp in rows]
        except (ValueError, KeyError, TypeError) as exc:  # json.JSONDecodeError is a ValueError
            problem, last = exc, None
            continue
        if read == last:
            return read
        last = read
    raise OperationalError(
        f"tique's catalog (tique.tables) read back differently {READ_ATTEMPTS} times in a row"
        + (f" ({problem!r})" if problem else "")
        + ": DDL is running in another session, or an entry is damaged; run the statement again"
    )


def schema_hash(schema: str, name: str) -> int:
    """The reserved write-set entry of a DDL on table schema.name (never a key's hash: another prefix)."""
    digest = hashlib.blake2b(f"\x01ddl\x00{schema}\x00{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class Catalog:
    """The process's view of tique.tables, shared by its connections; refreshed on a miss, after DDL, and when a
    transaction begins under a newer engine catalog version (``sync``)."""

    def __init__(self) -> None:
        self._tables: dict[tuple[str, str], TableInfo] = {}
        self._named: dict[str, TableInfo] = {}  # the same by TableInfo.qualified, as plans list the tables they read
        self._lock = threading.Lock()
        self.version = 0  # bumps on every change, so statement caches know to re-plan
        self.seen: int | None = None  # the engine's catalog version this view was last read under
        self._probes: dict[int, str] = {}  # table id -> its probe column (see probed)
        self._changed: dict[str, int] = {}  # TableInfo.qualified -> the version at which its entry last changed
        # TableInfo.qualified -> the versions at which the table appeared (True) or went (False), oldest first
        self._presence: dict[str, list[tuple[int, bool]]] = {}

    def sync(self, conn: RawConnection, engine_version: int) -> None:
        """Refresh when the engine's catalog version (read before calling) differs from the one last seen."""
        if engine_version != self.seen:
            self.refresh(conn)
            self.seen = engine_version

    def refresh(self, conn: RawConnection) -> None:
        tables = {(info.schema, info.name): info for info in read_tables(conn)}
        with self._lock:
            if tables != self._tables:
                for key in tables.keys() | self._tables.keys():
                    if tables.get(key) != self._tables.get(key):
                        self._changed[table_key(*key)] = self.version + 1
                    if (key in tables) != (key in self._tables):
                        self._presence.setdefault(table_key(*key), []).append((self.version + 1, key in tables))
                self._tables = tables
                self._named = {info.qualified: info for info in tables.values()}
                self.version += 1

    def changed_since(self, qualified: str, version: int) -> bool:
        """Did the entry of table ``qualified`` (TableInfo.qualified) change, appear or go after catalog version
        ``version`` (as this process has seen; bulk loads, which bump the version, change no entry)?"""
        return self._changed.get(qualified, 0) > version

    def existed_at(self, qualified: str, version: int) -> bool:
        """Was table ``qualified`` in this process's view of the catalog at version ``version``?"""
        present = False
        for at, there in self._presence.get(qualified, ()):
            if at > version:
                break
            present = there
        return present

    def get(self, schema: str, name: str) -> TableInfo | None:
        return self._tables.get((schema, name))

    def named(self, qualified: str) -> TableInfo | None:
        """The table a plan reads as ``qualified`` (TableInfo.qualified)."""
        return self._named.get(qualified)

    def touch(self) -> None:
        """Rows changed outside the commit protocol (a bulk load into Storage): a new version, so rows held by
        open transactions (known_rows.py) and shared across them are forgotten, as after DDL."""
        with self._lock:
            self.version += 1

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


def physical_tables(info: TableInfo) -> list[str]:
    """A table's physical tables, quoted, in the order ``create_ddl`` creates them."""
    return [qualified(info.schema, info.name)] if info.kind == "plain" else [info.storage, info.cache]


def create_ddl(info: TableInfo) -> list[str]:
    """The statements that create a table's physical tables (one per ``physical_tables`` entry)."""
    if info.kind == "plain":
        return [_storage_create(info, qualified(info.schema, info.name))]
    cache_cols = [f"{quote(c.name)} {info.physical_type(c.name)}" for c in info.columns]
    if info.has_rowid:
        cache_cols.append(f"{ROWID} BIGINT")
    cache_cols += ["tq_txid BIGINT", "tq_seq INT", "tq_deleted BOOLEAN"]
    return [_storage_create(info, info.storage), f"CREATE TABLE {info.cache} ({', '.join(cache_cols)})"]


def _storage_create(info: TableInfo, physical: str) -> str:
    cols = []
    for c in info.columns:
        col = f"{quote(c.name)} {info.physical_type(c.name)}"
        if info.kind == "plain" and c.name in info.generated:  # MonetDB generates a plain table's values itself
            col += " AUTO_INCREMENT"
        if c.not_null:
            col += " NOT NULL"
        if c.default is not None:
            col += f" DEFAULT {physical_default(info, c)}"
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
    conn.execute(register_sql(info))


def register_sql(info: TableInfo) -> str:
    return (
        f"INSERT INTO tique.tables VALUES ({info.table_id}, {literal(info.schema)}, {literal(info.name)}, "
        f"{literal(info.kind)}, {literal(info.spec_json())})"
    )


def unregister(conn: RawConnection, info: TableInfo, before: Sequence[str] = ()) -> None:
    """Remove exactly this table's entry (id, schema and name: an old database may hold duplicate ids), in one engine
    transaction with the statements ``before`` it (the physical drops that go with it)."""
    where = f"table_id = {info.table_id} AND schema_name = {literal(info.schema)} AND name = {literal(info.name)}"
    # MonetDB aborts the DELETE when another session's append (a concurrent CREATE TABLE) commits meanwhile: again;
    # any other refusal (a view of the user's depends on the table) is the answer
    retried_on_conflict(
        lambda: conn.execute_atomically([*before, f"DELETE FROM tique.tables WHERE {where}"]),
        f"removing {info.name!r} from tique's catalog",
        UNREGISTER_TRIES,
    )
