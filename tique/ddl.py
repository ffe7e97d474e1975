"""DDL on tique's tables. It takes effect at once, outside any transaction (MonetDB commits DDL by itself),
as in MySQL; a transaction's writes are not affected."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from tique import alter, catalog, ddl_views, views
from tique.database import Database
from tique.engine.base import RawConnection, Result
from tique.errors import NotSupportedError, ProgrammingError
from tique.rewrite.dialect import MonetDB
from tique.rewrite.writes import ident

uses_tique = ddl_views.uses_tique


def _plain(sql: str) -> bool:
    return bool(catalog.PLAIN_HINT.search(sql))


def run_ddl(db: Database, conn: RawConnection, tree: exp.Expression, sql: str, session: Any = None) -> Result:
    """``session``: the tique connection running the statement (CREATE TABLE AS reads its snapshot)."""
    kind = str(tree.args.get("kind") or "").upper()
    if isinstance(tree, exp.Create) and kind == "TABLE" and tree.expression is not None and not _plain(sql):
        return ddl_views.create_table_as(db, conn, tree, session)
    if isinstance(tree, exp.Create) and kind == "TABLE":
        return _create_table(db, conn, tree, sql)
    if isinstance(tree, exp.Drop) and kind == "TABLE":
        return _drop_table(db, conn, tree, sql)
    if isinstance(tree, exp.Create) and kind == "INDEX":
        return _create_index(db, conn, tree, sql)
    if isinstance(tree, exp.Create) and kind == "VIEW" and uses_tique(db, conn, tree):
        return ddl_views.create_view(db, conn, tree, sql)
    if isinstance(tree, exp.Drop) and kind == "VIEW":
        table = tree.find(exp.Table)
        info = table and db.catalog.lookup(conn, ident(table.args.get("db")) or db.default_schema, ident(table))
        if info is not None and info.kind == ddl_views.VIEW:
            return ddl_views.drop_view(db, conn, info, sql)
    if isinstance(tree, exp.Alter) and str(tree.args.get("kind") or "TABLE").upper() == "TABLE":
        table = tree.this
        info = db.catalog.lookup(conn, ident(table.args.get("db")) or db.default_schema, ident(table))
        if info is not None and info.kind == "tx":
            return alter.alter_table(db, conn, tree, info)
    if isinstance(tree, (exp.Alter, exp.TruncateTable)):
        for table in tree.find_all(exp.Table):
            info = db.catalog.lookup(conn, ident(table.args.get("db")) or db.default_schema, ident(table))
            if info is not None and info.kind == "tx":
                verb = "ALTER TABLE" if isinstance(tree, exp.Alter) else "TRUNCATE"
                raise NotSupportedError(
                    f"{verb} on the transactional table {info.name!r} is not supported by tique yet"
                )
    if isinstance(tree, exp.Command):
        alter.refuse_unparsed(db, conn, sql)
    return conn.execute(sql)


def _create_table(db: Database, conn: RawConnection, tree: exp.Create, sql: str) -> Result:
    info = catalog.table_from_create(tree, db.default_schema, catalog.next_table_id(conn), sql)
    if db.catalog.lookup(conn, info.schema, info.name) is not None or _physical_exists(conn, info.schema, info.name):
        if tree.args.get("exists"):
            return Result(rowcount=-1)
        raise ProgrammingError(f"CREATE TABLE: name {info.name!r} already in use", "42S01")
    statements = catalog.create_ddl(info)
    done: list[str] = []
    try:
        for stmt in statements:
            conn.execute(stmt)
            done.append(stmt)
        catalog.register(conn, info)
    except Exception:
        for stmt in done:  # leave nothing half-made behind
            name = stmt.split("(")[0].replace("CREATE TABLE", "").strip()
            try:
                conn.execute(f"DROP TABLE {name}")
            except Exception:
                pass
        raise
    _create_view(conn, info)
    db.catalog.refresh(conn)
    return Result(rowcount=-1)


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


def _physical_exists(conn: RawConnection, schema: str, name: str) -> bool:
    return bool(
        conn.execute(
            "SELECT COUNT(*) FROM sys.tables t JOIN sys.schemas s ON t.schema_id = s.id "
            f"WHERE s.name = '{schema}' AND t.name IN ('{name}', '{name}__storage')"
        ).scalar()
    )


def _drop_table(db: Database, conn: RawConnection, tree: exp.Drop, sql: str) -> Result:
    table = tree.find(exp.Table)
    assert table is not None
    info = db.catalog.lookup(conn, ident(table.args.get("db")) or db.default_schema, ident(table))
    if info is None:
        return conn.execute(sql)
    if info.kind == ddl_views.VIEW:
        raise ProgrammingError(f"DROP TABLE {info.name}: {info.name!r} is a view; use DROP VIEW", "42000")
    physical = [f'"{info.schema}"."{info.name}"'] if info.kind == "plain" else [info.storage, info.cache]
    if info.kind == "tx":
        conn.execute(views.drop_sql(info))  # first: it depends on the tables
    for name in physical:
        conn.execute(f"DROP TABLE IF EXISTS {name}")
    catalog.unregister(conn, info)
    db.catalog.refresh(conn)
    return Result(rowcount=-1)


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
    column_list = ", ".join(f'"{c}"' for c in cols)
    conn.execute(f'CREATE INDEX "{name}" ON {info.storage} ({column_list})')
    conn.execute(f'CREATE INDEX "{name}__cache" ON {info.cache} ({column_list})')
    return Result(rowcount=-1)
