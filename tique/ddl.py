"""DDL on tique's tables. It takes effect at once, outside any transaction (MonetDB commits DDL by itself),
as in MySQL; a transaction's writes are not affected.

DROP TABLE and ALTER TABLE of a tique table, and CREATE TABLE of a child table (as DDL of its parents), are
versioned catalog changes (tique/versioned.py): commits of the normal protocol whose write-set is the tables' schema
hashes. CREATE TABLE takes its id from the same counter and bumps the catalog version once the table is registered.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from sqlglot import exp

from tique import alter, catalog, ddl_parse, ddl_views, string_offsets, views
from tique.database import Database
from tique.engine.base import RawConnection, Result
from tique.errors import NotSupportedError, ProgrammingError
from tique.names import NAME, ident, quote, read_names, table_key
from tique.params import literal
from tique.rewrite.dialect import MonetDB
from tique.versioned import versioned

T = TypeVar("T")

uses_tique = ddl_views.uses_tique


def _plain(sql: str) -> bool:
    return bool(catalog.PLAIN_HINT.search(sql))


def run_ddl(
    db: Database, conn: RawConnection, tree: exp.Expression, sql: str, session: Any = None, schema: str | None = None
) -> Result:
    """``session``: the tique connection running the statement (CREATE TABLE AS reads its snapshot); ``schema``:
    its current schema (SET SCHEMA), where unqualified names are resolved."""
    tree = qualify_names(tree, schema or db.default_schema, lambda s, n: db.catalog.lookup(conn, s, n) is not None)
    kind = str(tree.args.get("kind") or "").upper()
    if isinstance(tree, exp.Create) and kind == "TABLE" and tree.expression is not None:
        if _plain(sql):
            return ddl_views.create_plain_table_as(db, conn, tree, session)
        return ddl_views.create_table_as(db, conn, tree, session)
    if isinstance(tree, exp.Create) and kind == "TABLE":
        return _create_table(db, conn, tree, sql)
    if isinstance(tree, exp.Drop) and kind == "TABLE":
        return _drop_table(db, conn, tree, sql)
    if isinstance(tree, exp.Create) and kind == "INDEX":
        return _create_index(db, conn, tree, sql)
    special = _SPECIAL_INDEX.match(sql) if isinstance(tree, exp.Command) else None
    if special:
        return _create_special_index(db, conn, special, sql)
    if isinstance(tree, exp.Comment):
        _refuse_comment(db, conn, tree)
    if isinstance(tree, exp.Command) and str(tree.this).upper() == "ANALYZE":
        return _analyze(db, conn, sql)
    if isinstance(tree, exp.Drop) and kind == "INDEX":
        return _drop_index(db, conn, tree, sql)
    if isinstance(tree, exp.Create) and kind == "VIEW" and uses_tique(db, conn, tree):
        return ddl_views.create_view(db, conn, tree, sql)
    if isinstance(tree, exp.Drop) and kind == "VIEW":
        table = tree.find(exp.Table)
        info = table and db.catalog.lookup(conn, ident(table.args.get("db")) or db.default_schema, ident(table))
        if info is not None and info.kind == ddl_views.VIEW:
            return ddl_views.drop_view(db, conn, info, sql)
    if isinstance(tree, exp.Alter) and str(tree.args.get("kind") or "TABLE").upper() == "TABLE":
        table = tree.this
        db.catalog.refresh(conn)  # never alter by a stale entry: another process may have changed the table
        info = db.catalog.get(ident(table.args.get("db")) or db.default_schema, ident(table))
        if info is not None and info.kind == "tx":
            return alter.alter_table(db, conn, tree, info)
    if isinstance(tree, (exp.Alter, exp.TruncateTable)):
        # a RENAME TO's new name is no table the statement touches: MonetDB says the name is taken, or the renamed
        # table missing
        renamed_to = {id(a.this) for a in tree.args.get("actions") or [] if isinstance(a, exp.AlterRename)}
        for table in tree.find_all(exp.Table):
            if id(table) in renamed_to:
                continue
            info = db.catalog.lookup(conn, ident(table.args.get("db")) or db.default_schema, ident(table))
            if info is not None and info.kind == "tx":
                verb = "ALTER TABLE" if isinstance(tree, exp.Alter) else "TRUNCATE"
                raise NotSupportedError(
                    f"{verb} on the transactional table {info.name!r} is not supported by tique yet"
                )
    if isinstance(tree, exp.Command):
        alter.refuse_unparsed(db, conn, sql)
    return conn.execute(sql)


def qualify_names(tree: exp.Expression, schema: str, known: Callable[[str, str], bool]) -> exp.Expression:
    """The statement with its unqualified table names put in ``schema``, the session's current one (as MonetDB
    resolves them): the table the statement creates, drops or alters always; any other (a view's body, a FOREIGN
    KEY's parent, a CREATE TABLE AS's source) when tique has that table there - so MonetDB's own tables, found
    through sys, and a new name given by RENAME TO stay as written. CTE names are never tables."""
    tree = tree.copy()
    ctes = {ident(cte.args.get("alias")).lower() for cte in tree.find_all(exp.CTE) if cte.args.get("alias")}
    target = tree.find(exp.Table)
    for table in tree.find_all(exp.Table):
        if table.args.get("db") or not table.name or table.name.lower() in ctes:
            continue
        if table is target or known(schema, ident(table)):
            table.set("db", exp.to_identifier(schema, quoted=True))
    return tree


def dropped_table(tree: exp.Expression, default_schema: str) -> str | None:
    """schema.name of the table a DROP TABLE statement drops (TableInfo.qualified), else None."""
    if isinstance(tree, exp.Drop) and str(tree.args.get("kind") or "").upper() == "TABLE":
        table = tree.find(exp.Table)
        if table is not None:
            return table_key(ident(table.args.get("db")) or default_schema, ident(table))
    return None


def renamed_table(tree: exp.Expression, default_schema: str) -> str | None:
    """schema.name of the table an ALTER TABLE ... RENAME TO renames (TableInfo.qualified), else None."""
    if isinstance(tree, exp.Alter) and any(isinstance(a, exp.AlterRename) for a in tree.args.get("actions") or []):
        table = tree.this
        if isinstance(table, exp.Table):
            return table_key(ident(table.args.get("db")) or default_schema, ident(table))
    return None


def _create_table(db: Database, conn: RawConnection, tree: exp.Create, sql: str) -> Result:
    info = ddl_parse.table_from_create(tree, db.default_schema, 0, sql)
    db.catalog.refresh(conn)  # another process may have created or dropped it
    if db.catalog.get(info.schema, info.name) is not None or _physical_exists(conn, info.schema, info.name):
        if tree.args.get("exists"):
            return Result(rowcount=-1)
        raise ProgrammingError(f"CREATE TABLE: name {info.name!r} already in use", "42S01")
    info = ddl_parse.resolve_foreign_keys(info, db.catalog.get)

    def create(table_id: int) -> catalog.TableInfo:
        made = catalog.placed(conn, replace(info, table_id=table_id))
        done: list[str] = []
        try:
            for stmt, physical in zip(catalog.create_ddl(made), catalog.physical_tables(made)):
                conn.execute(stmt)
                done.append(physical)
            if made.kind == "tx":  # before any transaction can write it (string_offsets.py)
                string_offsets.widen(conn, made.cache, made.quoted_strings)
            catalog.register(conn, made)
        except Exception:
            for name in done:  # leave nothing half-made behind
                try:
                    conn.execute(f"DROP TABLE {name}")
                except Exception:
                    pass
            raise
        return made

    # No commit record: a transaction that began before the table existed and writes it afterwards is not
    # wrong (it was empty), and a re-created name is covered by its DROP's record. The version tells processes.
    parents = sorted({(f.schema, f.table) for f in info.foreign_keys} - {(info.schema, info.name)})
    ids: list[int] = []
    try:
        if parents and info.kind == "tx":
            # A new child table changes what deleting a parent row means: as DDL of the parents, so a transaction
            # that used a parent meanwhile (planned without the child's FOREIGN KEY) fails at COMMIT
            versioned(db, conn, parents, lambda: _create_view(conn, create(db.sequencer.next_txid(conn))), ids)
        else:
            _create_view(conn, create(db.sequencer.next_txid(conn)))
    finally:
        db.sequencer.bump_catalog(conn)
        db.catalog.refresh(conn)
    return Result(rowcount=-1, ddl_txids=tuple(ids))


def _create_view(conn: RawConnection, info: catalog.TableInfo) -> None:
    """T under its own name in MonetDB's catalog, for clients other than tique (tique/views.py); a table that
    cannot get it is not created."""
    if info.kind != "tx":
        return
    try:
        conn.execute(views.create_sql(info))
    except Exception:
        catalog.unregister(conn, info)
        for name in (info.storage, info.cache):
            conn.execute(f"DROP TABLE IF EXISTS {name}")
        raise


def _drop_index(db: Database, conn: RawConnection, tree: exp.Drop, sql: str) -> Result:
    """An index CREATE INDEX put on a table's Storage and Cache in tique_data (``_create_index``): drop both."""
    table = tree.find(exp.Table)
    assert table is not None
    schema, name = ident(table.args.get("db")) or db.default_schema, ident(table)
    db.catalog.refresh(conn)
    placed = [i for i in db.catalog.all() if i.schema == schema and i.kind == "tx" and i.data_schema]
    wanted = {f"{i.data_base}__{name}": i for i in placed}
    found = [
        str(r[0])
        for r in conn.execute(
            "SELECT i.name FROM sys.idxs i JOIN sys.tables t ON i.table_id = t.id JOIN sys.schemas s "
            f"ON t.schema_id = s.id WHERE s.name = '{catalog.DATA_SCHEMA}'"
        ).rows
    ]
    hits = [n for n in found if n in wanted]
    if not hits:
        return conn.execute(sql)  # an index of MonetDB's own (or of a table made by an older tique)
    for index in hits:
        for physical in (index, f"{index}__cache"):
            if physical in found:
                conn.execute(f"DROP INDEX {quote(catalog.DATA_SCHEMA)}.{quote(physical)}")
    return Result(rowcount=-1)


def _physical_exists(conn: RawConnection, schema: str, name: str) -> bool:
    """Is the name taken in the schema by something of MonetDB's (a table, a view)? A new table's Storage and
    Cache go to tique_data under a name ``catalog.placed`` keeps free, so only the name itself counts: a table
    of the application's called ``name__storage`` is no concern of tique's."""
    return bool(
        conn.execute(
            "SELECT COUNT(*) FROM sys.tables t JOIN sys.schemas s ON t.schema_id = s.id "
            f"WHERE s.name = {literal(schema)} AND t.name = {literal(name)}"
        ).scalar()
    )


def _drop_table(db: Database, conn: RawConnection, tree: exp.Drop, sql: str) -> Result:
    table = tree.find(exp.Table)
    assert table is not None
    db.catalog.refresh(conn)  # never drop by a stale entry: another process may have re-created the table
    info = db.catalog.get(ident(table.args.get("db")) or db.default_schema, ident(table))
    if info is None:
        return conn.execute(sql)

    if info.kind == ddl_views.VIEW:
        raise ProgrammingError(f"DROP TABLE {info.name}: {info.name!r} is a view; use DROP VIEW", "42000")
    children = sorted({c.name for c, _ in db.catalog.children(info) if c.table_id != info.table_id})
    if children:
        raise ProgrammingError(
            f"DROP TABLE {info.name}: FOREIGN KEYs of {children} reference it; drop those tables first", "2BM37"
        )
    users = views.dependents(conn, info) if info.kind == "tx" else []
    if users:  # else MonetDB's refusal names the view T: "DROP VIEW: cannot drop view ..."
        how = " (tique's DROP TABLE does not CASCADE)" if tree.args.get("cascade") else ""
        raise ProgrammingError(
            f"DROP TABLE {info.name}: unable to drop table {info.name!r}, {', '.join(users)} depend on it; drop "
            f"them first{how}",
            "2BM37",
        )

    def drop() -> None:
        # one engine transaction, so that a process killed half way leaves the table whole (its view first: it
        # depends on the tables)
        statements = [views.drop_sql(info)] if info.kind == "tx" else []
        statements += [f"DROP TABLE IF EXISTS {name}" for name in catalog.physical_tables(info)]
        catalog.unregister(conn, info, before=statements)

    ids: list[int] = []
    versioned(db, conn, [(info.schema, info.name)], drop, ids)
    return Result(rowcount=-1, ddl_txids=tuple(ids))


# MonetDB's CREATE ORDERED INDEX / CREATE IMPRINTS INDEX, which sqlglot reads as an opaque command
_SPECIAL_INDEX = re.compile(
    rf"\s*CREATE\s+(ORDERED|IMPRINTS)\s+INDEX\s+({NAME})\s+ON\s+({NAME}(?:\.{NAME})?)\s*\(([^()]*)\)\s*;?\s*$",
    re.I,
)


def _create_special_index(db: Database, conn: RawConnection, found: re.Match[str], sql: str) -> Result:
    """CREATE ORDERED / IMPRINTS INDEX on a tique table: on its Storage and Cache, as CREATE INDEX is."""
    parts = read_names(found.group(3))
    info = db.catalog.lookup(conn, parts[0] if len(parts) == 2 else db.default_schema, parts[-1])
    if info is None or info.kind == "plain":
        return conn.execute(sql)
    if info.kind != "tx":
        raise ProgrammingError(f"CREATE INDEX: {info.name!r} is a view; create the index on its tables", "42000")
    cols = [read_names(c.strip())[0] for c in found.group(4).split(",") if c.strip()]
    return _indexed(conn, info, read_names(found.group(2))[0], cols, f"{found.group(1).upper()} ")


def _analyze(db: Database, conn: RawConnection, sql: str) -> Result:
    """ANALYZE s.t [(columns)] [SAMPLE n] [MINMAX] of a tique table: its statistics are its Storage's and Cache's
    (the view T has none: MonetDB says it is not persistent)."""
    found = ddl_parse.ANALYZE.match(sql)
    assert found is not None and found.group(2)
    info = db.catalog.lookup(conn, *read_names(f"{found.group(1)}.{found.group(2)}"))
    if info is None or info.kind != "tx":
        return conn.execute(sql)
    tail = f"{found.group(3) or ''}{found.group(4) or ''}"
    for table in (info.storage, info.cache):
        conn.execute(f"ANALYZE {table}{tail}")
    return Result(rowcount=-1)


def _refuse_comment(db: Database, conn: RawConnection, tree: exp.Comment) -> None:
    """COMMENT ON a tique table or its columns: MonetDB sees only the table's view, which ALTER TABLE replaces
    (and a replaced view loses its comments), so tique keeps no comments on its tables."""
    target = tree.this
    table = target if isinstance(target, exp.Table) else None
    if isinstance(target, exp.Column) and target.args.get("table") is not None:
        table = exp.Table(this=target.args["table"], db=target.args.get("db"))
    if table is None:
        return
    info = db.catalog.lookup(conn, ident(table.args.get("db")) or db.default_schema, ident(table))
    if info is not None and info.kind in ("tx", ddl_views.VIEW):
        what = info.name if target is table else f"{info.name}.{ident(target)}"
        raise NotSupportedError(
            f"COMMENT ON {str(tree.args.get('kind') or '').upper()} {what} is not supported by tique: {info.name!r} is "
            "a tique table, which keeps no comments; document it elsewhere (or comment on a plain table, created "
            "with -- tique: plain)"
        )


def _create_index(db: Database, conn: RawConnection, tree: exp.Create, sql: str) -> Result:
    table = tree.find(exp.Table)
    assert table is not None
    info = db.catalog.lookup(conn, ident(table.args.get("db")) or db.default_schema, ident(table))
    if info is None or info.kind == "plain":
        return conn.execute(sql)
    index = tree.this
    name = ident(index.this) if isinstance(index, exp.Index) else ident(index)
    cols = (
        [
            ident(c.this if isinstance(c, exp.Ordered) else c)
            for c in (index.args.get("params").args.get("columns") or [])
        ]
        if isinstance(index, exp.Index) and index.args.get("params")
        else []
    )
    if not cols:
        raise NotSupportedError(f"cannot read the columns of {tree.sql(dialect=MonetDB)!r}")
    return _indexed(conn, info, name, cols, "")


def _indexed(conn: RawConnection, info: catalog.TableInfo, name: str, cols: list[str], kind: str) -> Result:
    """The index ``name`` (``kind``: "", "ORDERED ", "IMPRINTS ") on the table's Storage and Cache."""
    column_list = ", ".join(quote(c) for c in cols)
    # index names are per schema: in tique_data, prefixed by the table's base name (two schemas may use one name)
    prefix = f"{info.data_base}__" if info.data_schema else ""
    conn.execute(f"CREATE {kind}INDEX {quote(prefix + name)} ON {info.storage} ({column_list})")
    try:
        conn.execute(f"CREATE {kind}INDEX {quote(prefix + name + '__cache')} ON {info.cache} ({column_list})")
    except Exception:  # no half-made index: the Storage one goes too
        conn.execute(
            f"DROP INDEX {quote(catalog.DATA_SCHEMA if info.data_schema else info.schema)}.{quote(prefix + name)}"
        )
        raise
    return Result(rowcount=-1)
