"""SQLAlchemy dialect ``monetdb+tique``: sqlalchemy-monetdb's MonetDB dialect with tique as the DB-API driver.

    create_engine("monetdb+tique://user:password@host:port/database")   # over MAPI, e.g. `tique serve`
    create_engine("monetdb+tique:////abs/path/to/dir")                  # embedded (SQLite's convention)
    create_engine("monetdb+tique:///relative/dir")                      # embedded, relative to the cwd
    create_engine("monetdb+tique://")                                   # embedded, in memory

Query parameters of the URL are tique settings (``?write_mode=direct&snapshot=point``).

What differs from sqlalchemy-monetdb (each because of what tique is):

- reflection asks tique's catalog which tables are tique's: a transactional table T is reported as a table
  (MonetDB's catalog shows it as a view of its latest committed state, tique/views.py), with the columns,
  NOT NULLs, defaults, primary key and indexes of its Storage table; tique's own Storage and Cache tables are
  not listed;
- FOREIGN KEY and UNIQUE constraints are created as tique's (enforced under Snapshot Isolation, see
  tests/test_foreign_keys.py) and reflected from tique's catalog; a FOREIGN KEY must reference its parent's
  primary key, with NO ACTION;
- an autoincrement integer primary key is created as ``AUTO_INCREMENT``, which tique generates itself (never
  through a MonetDB SEQUENCE, which is unsafe under concurrency on MonetDB 11.41); the generated key comes back
  as ``cursor.lastrowid``;
- a lost write-write conflict (tique.SerializationFailure, SQLSTATE 40001) surfaces as SQLAlchemy's
  ``OperationalError`` with the original as ``.orig``: roll back and run the transaction again.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import pymonetdb
from sqlalchemy import BigInteger, Sequence, SmallInteger, exc, text
from sqlalchemy.engine import URL, reflection

# sqlalchemy-monetdb sets pymonetdb.paramstyle = "named" for the whole process when imported; an application
# that also uses pymonetdb directly must keep pymonetdb's own default.
_paramstyle = pymonetdb.paramstyle
from sqlalchemy.sql import sqltypes  # noqa: E402
from sqlalchemy_monetdb import monetdb_types  # noqa: E402
from sqlalchemy_monetdb.base import MonetIdentifierPreparer  # noqa: E402
from sqlalchemy_monetdb.compiler import MonetCompiler, MonetDDLCompiler, MonetTypeCompiler  # noqa: E402
from sqlalchemy_monetdb.dialect import MonetDialect  # noqa: E402

pymonetdb.paramstyle = _paramstyle


class _Time(monetdb_types.TIME):
    """sqlalchemy-monetdb 2.1's TIME prints "time self <precision>" to stdout whenever it is made, i.e. for every
    TIME column reflected. Its reflection looks types up in this shared map, so the entry is replaced (for its own
    dialect too, which loses only the print)."""

    def __init__(self, timezone: bool = False, precision: int | None = None) -> None:
        sqltypes.TIME.__init__(self, timezone=timezone)
        self.precision = precision


for _name in ("time", "timetz"):
    if monetdb_types.MONETDB_TYPE_MAP.get(_name) is monetdb_types.TIME:
        monetdb_types.MONETDB_TYPE_MAP[_name] = _Time

import tique  # noqa: E402
from tique.catalog import DATA_SCHEMA, TableInfo, default_sql  # noqa: E402

# tique's settings take these types; URL query values arrive as strings
_INT_SETTINGS = {"retries", "lease_ms", "worker_limit", "analytical_slots"}


class TiqueCompiler(MonetCompiler):
    def visit_column(self, column: Any, add_to_result_map: Any = None, include_table: bool = True, **kw: Any) -> str:
        """A column of a table in a named schema as ``table.column``: SQLAlchemy writes ``schema.table.column``,
        which MonetDB 11.41 refuses ("TODO: column names of level >= 3"), so every statement on such a table
        failed. The FROM clause keeps the schema; two tables of one name from two schemas in one statement need
        an alias (as MonetDB would then say the name is ambiguous)."""
        table = column.table
        if (
            not include_table
            or table is None
            or not getattr(table, "named_with_column", False)
            or not self.preparer.schema_for_object(table)
            or getattr(column, "is_literal", False)
        ):
            return str(super().visit_column(column, add_to_result_map, include_table, **kw))
        name = super().visit_column(column, add_to_result_map, include_table=False, **kw)
        return f"{self.preparer.quote(table.name)}.{name}"

    def bindparam_string(self, name: str, **kw: Any) -> str:
        """sqlalchemy-monetdb quotes parameter names that are SQL keywords (``:"name"``, pymonetdb's named style);
        in pyformat that would be ``%("name")s``: such a name gets a prefix instead."""
        if self.preparer._bindparam_requires_quotes(name) and not kw.get("post_compile", False):
            kw["escaped_from"] = kw.get("escaped_from") or name
            name = "tq_" + "".join(ch if ch.isalnum() else "_" for ch in name)
        return super().bindparam_string(name, **kw)


class TiquePreparer(MonetIdentifierPreparer):
    """sqlalchemy-monetdb never doubles percent signs (pymonetdb's named style has no ``%``); in tique's pyformat
    a literal ``%`` next to a parameter must be ``%%`` (``LIKE '%' || %(p)s``, which ``contains`` compiles to)."""

    def __init__(self, dialect: Any, **kw: Any) -> None:
        super().__init__(dialect, **kw)
        self._double_percents = dialect.paramstyle in ("format", "pyformat")


class TiqueTypeCompiler(MonetTypeCompiler):
    """Types tique's tables do not keep (MonetDB's JSON and UUID) are stored as SQLAlchemy stores them on a backend
    without them: JSON serialized in a CLOB (sa.JSON converts both ways), a UUID as 32 hex digits
    (supports_native_uuid = False makes sa.Uuid convert both ways)."""

    def visit_JSON(self, type_: Any, **kw: Any) -> str:
        return "CLOB"

    def visit_uuid(self, type_: Any, **kw: Any) -> str:
        return "CHAR(32)"

    def visit_UUID(self, type_: Any, **kw: Any) -> str:
        return "CHAR(32)"


class TiqueDDLCompiler(MonetDDLCompiler):
    def post_create_table(self, table: Any) -> str:
        """``Table(..., monetdb_plain=True)`` makes a plain MonetDB table (tique's '-- tique: plain' comment,
        README): no versions, MonetDB's own types, writes that take effect at once. A model cannot write the
        comment itself, though tique's refusal of a type its tables do not keep says to declare the table so."""
        text = str(super().post_create_table(table))
        if table.dialect_options["monetdb"].get("plain"):
            text += " -- tique: plain"
        return text

    def get_identity_options(self, identity_options: Any) -> str:
        """START WITH before INCREMENT BY, the SQL standard's order (SQLAlchemy writes INCREMENT BY first, which
        tique's statement parser does not read)."""
        text = str(super().get_identity_options(identity_options))
        if identity_options.increment is not None and identity_options.start is not None:
            increment = f"INCREMENT BY {int(identity_options.increment)}"  # as SQLAlchemy writes them (%d)
            start = f"START WITH {int(identity_options.start)}"
            text = text.replace(f"{increment} {start}", f"{start} {increment}", 1)
        return text

    def get_column_specification(self, column: Any, **kwargs: Any) -> str:
        if isinstance(column.default, Sequence) and not column.default.optional:
            # no sequences here (supports_sequences = False): SQLAlchemy then ignores the Sequence, and the key is
            # the table's autoincrement key as without it; sqlalchemy-monetdb would make it a plain INT NOT NULL
            default, column.default = column.default, None
            try:
                return self.get_column_specification(column, **kwargs)
            finally:
                column.default = default
        if _small_autoincrement_key(column, self.dialect):
            # sqlalchemy-monetdb leaves a SmallInteger key a plain SMALLINT, which SQLAlchemy still leaves out of
            # INSERTs for the database to generate; tique generates SMALLINT keys
            spec = f"{self.preparer.format_column(column)} SMALLINT AUTO_INCREMENT"
            return spec if column.nullable else spec + " NOT NULL"
        spec = str(super().get_column_specification(column, **kwargs))
        if isinstance(column.type.dialect_impl(self.dialect), BigInteger):  # sqlalchemy-monetdb says INT for all
            spec = spec.replace(" INT AUTO_INCREMENT", " BIGINT AUTO_INCREMENT")
        return spec


def _small_autoincrement_key(column: Any, dialect: Any) -> bool:
    """The table's autoincrement key, of a SmallInteger type, with no default or identity of its own."""
    return bool(
        column.primary_key
        and column is column.table._autoincrement_column
        and column.identity is None
        and column.default is None
        and isinstance(column.type.dialect_impl(dialect), SmallInteger)
    )


class TiqueDialect(MonetDialect):
    driver = "tique"
    supports_statement_cache = False  # as sqlalchemy-monetdb (its compilers keep per-statement state)
    default_paramstyle = "pyformat"
    ddl_compiler = TiqueDDLCompiler
    statement_compiler = TiqueCompiler
    preparer = TiquePreparer
    type_compiler = TiqueTypeCompiler
    supports_native_uuid = False
    # no server-side sequences: concurrent NEXT VALUE FOR corrupts MonetDB 11.41's WAL
    supports_sequences = False
    sequences_optional = True
    preexecute_pk_sequences = False
    postfetch_lastrowid = True

    @classmethod
    def dbapi(cls) -> Any:  # type: ignore[override]
        return tique

    @classmethod
    def import_dbapi(cls) -> Any:
        return tique

    @staticmethod
    def _as_sent(statement: str, parameters: Any, context: Any) -> str:
        """A compiled statement doubles its literal percent signs (TiquePreparer); pyformat reads ``%%`` as ``%``
        only when parameters are given (as pymonetdb), so one compiled without any gets them back single. A
        driver-level statement (``exec_driver_sql``) is the user's text, sent as written."""
        if not parameters and context is not None and context.compiled is not None and "%%" in statement:
            return statement.replace("%%", "%")
        return statement

    def do_execute(self, cursor: Any, statement: str, parameters: Any, context: Any = None) -> None:
        cursor.execute(self._as_sent(statement, parameters, context), parameters)

    def do_execute_no_params(self, cursor: Any, statement: str, context: Any = None) -> None:
        cursor.execute(self._as_sent(statement, None, context))

    def is_disconnect(self, e: Any, connection: Any, cursor: Any) -> bool:
        """A lost or closed engine connection (SQLSTATE class 08: a server restarted or gone): SQLAlchemy then
        invalidates it, and pool_pre_ping opens a new one. sqlalchemy-monetdb leaves DefaultDialect's answer,
        never, so a dead connection went back to the pool and failed every later checkout."""
        return str(getattr(e, "sqlstate", None) or "").startswith("08")

    def create_connect_args(self, url: URL) -> tuple[list[Any], dict[str, Any]]:
        settings: dict[str, Any] = {}
        for key, value in url.query.items():
            value = value[-1] if isinstance(value, tuple) else value
            settings[key] = int(value) if key in _INT_SETTINGS else value
        if url.host:
            # over MAPI a write to a plain or temporary table counts no rows (rowcount -1): the ORM would take its
            # UPDATE of such a row as stale; tique's own tables count exactly on either engine
            self.supports_sane_rowcount = self.supports_sane_multi_rowcount = False
            user = url.username or "monetdb"
            password = url.password if url.password is not None else "monetdb"
            target = URL.create(
                "monetdb", user, password, url.host, url.port or 50000, url.database or "monetdb"
            ).render_as_string(hide_password=False)
        elif url.database and url.database != ":memory:":
            target = f"monetdbe://{os.path.abspath(url.database)}"  # three slashes: relative, as SQLite's
        else:
            target = "monetdbe::memory:"
        return [target], settings

    def _get_server_version_info(self, connection: Any) -> tuple[int, ...]:
        version = getattr(connection.connection.dbapi_connection, "monet_version", None)
        if not version:
            version = connection.execute(
                text("SELECT value FROM sys.environment WHERE name = 'monet_version'")
            ).scalar()
        if not version:
            return (11, 41)  # the embedded kernel of the monetdbe 0.11 wheel tique runs on
        return tuple(int(p) for p in str(version).split(".") if p.isdigit())

    # ---- tique's catalog --------------------------------------------------------------------------------

    def _schema(self, connection: Any, schema: str | None) -> str:
        return schema or self.default_schema_name or str(connection.execute(text("SELECT CURRENT_SCHEMA")).scalar())

    def _tique_tables(self, connection: Any, schema: str | None) -> dict[str, str]:
        """name -> kind ("tx" or "plain") of the tables tique manages in ``schema``."""
        return {n: k for n, (k, _) in self._tique_specs(connection, schema).items()}

    def _tique_infos(self, connection: Any, schema: str | None) -> dict[str, TableInfo]:
        """name -> TableInfo of the tables tique manages in ``schema``."""
        name = self._schema(connection, schema)
        rows = connection.execute(
            text("SELECT table_id, name, kind, spec FROM tique.tables WHERE schema_name = :s"), {"s": name}
        )
        return {str(n): TableInfo.from_row(int(i), name, str(n), str(k), str(sp)) for i, n, k, sp in rows}

    def _tique_specs(self, connection: Any, schema: str | None) -> dict[str, tuple[str, list[str]]]:
        """name -> (kind, generated columns) of the tables tique manages in ``schema``."""
        return {n: (i.kind, list(i.generated)) for n, i in self._tique_infos(connection, schema).items()}

    def _physical(self, connection: Any, schema: str | None, names: Iterable[str]) -> dict[str, tuple[str | None, str]]:
        """For each name, the MonetDB table holding its definition as (schema, name): a transactional table's
        Storage table (in tique_data, or beside T for a table made by an older tique)."""
        infos = self._tique_infos(connection, schema)
        out: dict[str, tuple[str | None, str]] = {}
        for n in names:
            info = infos.get(n)
            tx = info is not None and info.kind == "tx"
            out[n] = (info.physical_schema, info.storage_name) if tx and info else (schema, n)
        return out

    @staticmethod
    def _hidden(name: str, infos: dict[str, TableInfo]) -> bool:
        """tique's own Storage/Cache tables of a transactional table made by an older tique (beside T)."""
        return any(
            i.kind == "tx" and not i.data_schema and name in (i.storage_name, i.cache_name) for i in infos.values()
        )

    def get_table_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list[str]:
        infos = self._tique_infos(connection, schema)
        physical = super().get_table_names(connection, schema, **kw)
        listed = [n for n in physical if not self._hidden(n, infos)]
        return listed + sorted(n for n, i in infos.items() if i.kind == "tx" and n not in listed)

    def get_schema_names(self, connection: Any, **kw: Any) -> list[str]:
        """Without tique's own schemas (its metadata, and the Storage and Cache tables behind each table), which
        reflection leaves out as it does their tables."""
        return [n for n in super().get_schema_names(connection, **kw) if n not in ("tique", DATA_SCHEMA)]

    def get_view_names(self, connection: Any, schema: str | None = None, **kw: Any) -> list[str]:
        tables = self._tique_tables(connection, schema)
        return [v for v in super().get_view_names(connection, schema, **kw) if tables.get(v) != "tx"]

    def get_view_definition(self, connection: Any, view_name: str, schema: str | None = None, **kw: Any) -> str:
        """The view's SQL text, as SQLAlchemy defines it (sqlalchemy-monetdb returned its result rows). A
        transactional table is no view here, though MonetDB shows one under its name (tique/views.py)."""
        if self._tique_tables(connection, schema).get(view_name) == "tx":
            raise exc.NoSuchTableError(f"{schema}.{view_name}" if schema else view_name)
        rows = super().get_view_definition(connection, view_name, schema, **kw)
        return str(rows[0][0])

    @reflection.cache
    def has_table(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> bool:
        if table_name in self._tique_tables(connection, schema):
            return True
        return bool(super().has_table(connection, table_name, schema, **kw))

    @reflection.cache
    def _table_id(self, con: Any, table_name: str, schema_name: str | None = None) -> Any:
        physical_schema, physical = self._physical(con, schema_name, [table_name])[table_name]
        return super()._table_id(con, physical, physical_schema)

    def _renamed(self, connection: Any, method: Any, filter_names: Any, schema: str | None, **kw: Any) -> Any:
        """Run one of sqlalchemy-monetdb's reflection queries on the physical tables, keyed by the user's names."""
        names = list(filter_names or [])
        infos = self._tique_infos(connection, schema)
        specs = {n: (i.kind, list(i.generated)) for n, i in infos.items()}
        physical = self._physical(connection, schema, names)
        kw["tabletypes"] = sorted({0, *kw.get("tabletypes", [0])})  # T__storage is a table, even if T was asked
        out = []
        for where in dict.fromkeys(p[0] for p in physical.values()):  # each schema holding some of them
            back = {p[1]: n for n, p in physical.items() if p[0] == where}
            data = method(connection, filter_names=list(back), schema=where, **kw)
            for (_, name), value in data:
                table = back.get(name, name)
                if isinstance(value, list):
                    value = [v for v in value if not (isinstance(v, dict) and v.get("name") == "tq_rowid")]
                    generated = specs.get(table, ("", []))[1]
                    info = infos.get(table)
                    prefix = f"{info.data_base}__" if info is not None and info.data_schema else ""
                    for v in value:
                        if isinstance(v, dict) and "autoincrement" in v and v.get("name") in generated:
                            v["autoincrement"] = True
                        if (
                            isinstance(v, dict)
                            and "type" in v
                            and info is not None
                            and v.get("name") in info.hex_columns
                        ):
                            # a BLOB its Storage keeps as hex text (TableInfo.hex_columns): the column's own type
                            column = info.column(str(v["name"]))
                            v["type"] = monetdb_types.MONETDB_TYPE_MAP["blob"]()
                            v["default"] = None if column.default is None else default_sql(column.default)
                        if (
                            isinstance(v, dict)
                            and prefix
                            and "column_names" in v
                            and str(v.get("name")).startswith(prefix)
                        ):
                            v["name"] = str(v["name"])[len(prefix) :]  # an index, as CREATE INDEX named it (ddl.py)
                out.append(((schema, table), value))
        return out

    def get_pk_constraint(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> Any:
        pk = dict(super().get_pk_constraint(connection, table_name, schema, **kw))
        storage = self._physical(connection, schema, [table_name])[table_name][1]
        if pk.get("name") and storage != table_name:
            pk["name"] = str(pk["name"]).replace(f"{storage}_", f"{table_name}_", 1)
        return pk

    def _get_columns(self, connection: Any, filter_names: Any = (), schema: str | None = None, **kw: Any) -> Any:
        return self._renamed(connection, super()._get_columns, filter_names, schema, **kw)

    def _get_indexes(self, connection: Any, filter_names: Any = (), schema: str | None = None, **kw: Any) -> Any:
        return self._renamed(connection, super()._get_indexes, filter_names, schema, **kw)

    def _get_foreign_keys(self, connection: Any, schema: str | None = None, filter_names: Any = (), **kw: Any) -> Any:
        """A transactional table's FOREIGN KEYs are in tique's catalog (its Storage has none); a plain table's in
        MonetDB's."""
        infos = self._tique_infos(connection, schema)
        out = []
        for key, value in self._renamed(connection, super()._get_foreign_keys, filter_names, schema, **kw):
            info = infos.get(key[1])
            if info is not None and info.kind == "tx":
                value = [self._foreign_key(connection, info, fk, schema) for fk in info.foreign_keys]
            out.append((key, value))
        return out

    def _foreign_key(self, connection: Any, info: TableInfo, fk: Any, schema: str | None) -> dict[str, Any]:
        parent = self._tique_infos(connection, fk.schema).get(fk.table)
        return {
            "name": f"{info.name}_{'_'.join(fk.columns)}_fkey",
            "constrained_columns": list(fk.columns),
            "referred_schema": fk.schema if schema or fk.schema != info.schema else None,
            "referred_table": fk.table,
            "referred_columns": list(parent.key) if parent is not None else [],
            "options": {},
        }

    def get_unique_constraints(self, connection: Any, table_name: str, schema: str | None = None, **kw: Any) -> Any:
        info = self._tique_infos(connection, schema).get(table_name)
        if info is not None and info.kind == "tx":
            return [{"name": f"{table_name}_{'_'.join(u)}_unique", "column_names": list(u)} for u in info.uniques]
        return super().get_unique_constraints(connection, table_name, schema, **kw)


def _register() -> None:
    """The entry point (pyproject.toml) registers the dialect for an installed tique; importing this module
    registers it too (an editable or source checkout)."""
    from sqlalchemy.dialects import registry

    registry.register("monetdb.tique", "tique.sqla", "TiqueDialect")


_register()
