"""Views over tique's tables, CREATE TABLE AS SELECT, and TRUNCATE.

CREATE VIEW v over a transactional table (or over such a view) is stored in tique's catalog (tique.tables,
kind "view", its SELECT in the spec) and also created in MonetDB as written, where it reads the outside views T
(tique/views.py): clients other than tique see it over the latest committed state. tique's rewriter never reads
MonetDB's view: it replaces v by its SELECT (a view over a view, recursively) before the snapshot rewrite, so v
reads the transaction's snapshot and its own writes like any query. Writes to such a view are refused. DROP
VIEW removes both; MonetDB refuses to drop a view another view uses, and so does tique.

CREATE TABLE u AS SELECT ... creates a transactional table whose columns have the SELECT's types (MonetDB derives
them, reading the outside views), and - WITH DATA, the default - the SELECT's rows as the creating connection's
transaction reads them (its snapshot and its own writes). The rows go into u's Storage before u is registered,
so u appears at once with its rows, like any DDL outside transactions: the creator's later COMMIT or ROLLBACK
does not touch them. u gets no primary key (a hidden row id versions its rows).

TRUNCATE T of a transactional table is a DELETE of every row the transaction sees (statements.py plans it so):
it commits or rolls back with the transaction, a snapshot taken before it keeps its rows, and a concurrent
writer of a deleted row loses certification. It is not the fast MonetDB TRUNCATE; the checkpointer reclaims the
space.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlglot import exp

from tique import catalog, ddl_parse, views
from tique.catalog import ColumnSpec, TableInfo
from tique.database import Database
from tique.engine.base import RawConnection, Result
from tique.errors import NotSupportedError, ProgrammingError
from tique.names import ident, qualified, quote
from tique.params import literal
from tique.rewrite.dialect import MonetDB
from tique.rewrite.views import VIEW
from tique.zero_signs import negative_zero, zero_signs_kept


def view_info(table_id: int, schema: str, name: str, select_sql: str) -> TableInfo:
    return TableInfo(table_id, schema, name, VIEW, (), (), storage_ddl=select_sql)


def uses_tique(db: Database, conn: RawConnection, tree: exp.Expression) -> bool:
    for table in tree.find_all(exp.Table):
        info = db.catalog.lookup(conn, ident(table.args.get("db")) or db.default_schema, ident(table))
        if info is not None and info.kind in ("tx", VIEW):
            return True
    return False


def create_view(db: Database, conn: RawConnection, tree: exp.Create, sql: str) -> Result:
    table = tree.this if isinstance(tree.this, exp.Table) else tree.find(exp.Table)
    if isinstance(tree.this, exp.Schema):
        raise NotSupportedError(
            "CREATE VIEW v (column names) over tique's tables is not supported: name the columns with AS in the SELECT"
        )
    if tree.args.get("replace"):
        raise NotSupportedError("CREATE OR REPLACE VIEW over tique's tables is not supported: DROP VIEW, then CREATE")
    assert table is not None and tree.expression is not None
    schema, name = ident(table.args.get("db")) or db.default_schema, ident(table)
    select_sql = tree.expression.sql(dialect=MonetDB)
    info = view_info(db.sequencer.next_txid(conn), schema, name, select_sql)
    # MonetDB checks the SELECT, and outside clients get the view over committed state; in one engine transaction
    # with the catalog row, so a process killed half way leaves no view that tique does not know
    conn.execute_atomically([sql, catalog.register_sql(info)])
    _changed(db, conn)
    return Result(rowcount=-1)


def drop_view(db: Database, conn: RawConnection, info: TableInfo, sql: str) -> Result:
    catalog.unregister(conn, info, before=[sql])  # the DROP is refused while another view uses it
    _changed(db, conn)
    return Result(rowcount=-1)


def _changed(db: Database, conn: RawConnection) -> None:
    """Other processes notice the catalog change at their next begin (catalog.py)."""
    db.sequencer.bump_catalog(conn)
    db.catalog.refresh(conn)


def refuse_view_write(info: TableInfo, verb: str) -> None:
    if info.kind == VIEW:
        raise NotSupportedError(
            f"{verb} on the view {info.name!r} is not supported by tique (its views are read-only): write to the "
            "tables it reads"
        )


# ---- CREATE TABLE AS SELECT ---------------------------------------------------------------------------------


def create_table_as(db: Database, conn: RawConnection, tree: exp.Create, session: Any) -> Result:
    target = _as_select(db, conn, tree)
    if target is None:
        return Result(rowcount=-1)
    schema, name, select_sql, no_data = target
    info = catalog.placed(conn, TableInfo(db.sequencer.next_txid(conn), schema, name, "tx", (), (catalog.ROWID,)))
    storage = info.storage
    # the column types, as MonetDB derives them from the SELECT over the outside views
    conn.execute(f"CREATE TABLE {storage} AS {select_sql} WITH NO DATA")  # a probe, under the name it will have
    try:
        info = replace(info, columns=_columns(conn, info.physical_schema, info.storage_name))
        conn.execute(f"DROP TABLE {storage}")
        for column in info.columns:  # as CREATE TABLE refuses it (an INTERVAL, say), before any row is read
            ddl_parse.check_type(name, column)
        for statement in catalog.create_ddl(info):
            conn.execute(statement)
        loaded = 0 if no_data else _load(conn, info, session, select_sql)
        catalog.register(conn, info)
        try:
            conn.execute(views.create_sql(info))
        except BaseException:
            catalog.unregister(conn, info)
            raise
    except BaseException:
        for physical in (info.cache, storage):
            try:
                conn.execute(f"DROP TABLE IF EXISTS {physical}")
            except Exception:
                pass
        raise
    _changed(db, conn)
    return Result(rowcount=loaded)


def create_plain_table_as(db: Database, conn: RawConnection, tree: exp.Create, session: Any) -> Result:
    """CREATE TABLE p AS SELECT ... -- tique: plain: MonetDB's own table (a plain one, catalog.py) with the
    SELECT's column types and - WITH DATA, the default - its rows as the creating transaction reads them, inserted
    as any write to a plain table (at once, reading the snapshot)."""
    named = _as_select(db, conn, tree)
    if named is None:
        return Result(rowcount=-1)
    schema, name, select_sql, no_data = named
    target = qualified(schema, name)
    conn.execute(f"CREATE TABLE {target} AS {select_sql} WITH NO DATA")  # MonetDB's types, from the outside views
    info = None
    try:
        info = TableInfo(db.sequencer.next_txid(conn), schema, name, "plain", _columns(conn, schema, name),
                         (catalog.ROWID,))  # fmt: skip
        catalog.register(conn, info)
        _changed(db, conn)
        if no_data:
            return Result(rowcount=-1)
        if session is None:
            raise NotSupportedError("CREATE TABLE AS SELECT WITH DATA needs a tique connection")
        loaded = insert_counted(session, target, select_sql)
    except BaseException:  # all or nothing, as one statement
        if info is not None:
            catalog.unregister(conn, info)
        conn.execute(f"DROP TABLE IF EXISTS {target}")
        _changed(db, conn)
        raise
    return Result(rowcount=loaded)


def insert_counted(session: Any, target: str, select_sql: str) -> int:
    """INSERT INTO MonetDB's own table ``target`` the rows ``select_sql`` reads in ``session``'s transaction (a
    plain write: at once, reading the snapshot); the rows inserted."""
    cursor = session.cursor()
    cursor.execute(f"INSERT INTO {target} {select_sql}")
    if cursor.rowcount >= 0:
        return int(cursor.rowcount)
    cursor.execute(f"SELECT COUNT(*) FROM {target}")  # over MAPI the embedded kernel's listener counts no such write
    return int(cursor.fetchone()[0])


def with_no_data(tree: exp.Create) -> bool:
    """CREATE TABLE AS ... WITH NO DATA (WITH DATA is the default)."""
    props = tree.args.get("properties")
    return any(isinstance(p, exp.WithDataProperty) and p.args.get("no") for p in (props.expressions if props else []))


def _as_select(db: Database, conn: RawConnection, tree: exp.Create) -> tuple[str, str, str, bool] | None:
    """The schema, name, SELECT (its columns named as listed) and WITH NO DATA of a CREATE TABLE AS whose name is
    free; None when it is taken and IF NOT EXISTS says to do nothing (taken otherwise: ProgrammingError)."""
    table = tree.this if isinstance(tree.this, exp.Table) else tree.find(exp.Table)
    assert table is not None and tree.expression is not None
    schema, name = ident(table.args.get("db")) or db.default_schema, ident(table)
    if db.catalog.lookup(conn, schema, name) is not None or _exists(conn, schema, name):
        if tree.args.get("exists"):
            return None
        raise ProgrammingError(f"CREATE TABLE: name {name!r} already in use", "42S01")
    return schema, name, _select_named(tree), with_no_data(tree)


def _select_named(tree: exp.Create) -> str:
    """CREATE TABLE AS's SELECT, its columns named as the list after the table's name says, if there is one."""
    assert tree.expression is not None
    select_sql = tree.expression.sql(dialect=MonetDB)
    if isinstance(tree.this, exp.Schema) and tree.this.expressions:
        names = ", ".join(quote(ident(c.this if isinstance(c, exp.ColumnDef) else c)) for c in tree.this.expressions)
        return f"SELECT * FROM ({select_sql}) AS tq_named({names})"
    return select_sql


def _exists(conn: RawConnection, schema: str, name: str) -> bool:
    # a new table's Storage and Cache go to tique_data (catalog.placed): only the name itself can be taken here
    return bool(
        conn.execute(
            "SELECT COUNT(*) FROM sys.tables t JOIN sys.schemas s ON t.schema_id = s.id "
            f"WHERE s.name = {literal(schema)} AND t.name = {literal(name)}"
        ).scalar()
    )


_DIGITS = {"varchar", "char", "clob", "blob"}


def _columns(conn: RawConnection, schema: str, table: str) -> tuple[ColumnSpec, ...]:
    rows = conn.execute(
        "SELECT c.name, c.type, c.type_digits, c.type_scale FROM sys.columns c JOIN sys.tables t ON c.table_id = t.id "
        f"JOIN sys.schemas s ON t.schema_id = s.id WHERE s.name = {literal(schema)} AND t.name = {literal(table)} "
        "ORDER BY c.number"
    ).rows
    out = []
    for col, kind, digits, scale in rows:
        kind = str(kind).lower()
        if kind == "decimal":
            # at most 18 digits: MonetDB types SUM(DECIMAL) as DECIMAL(38,s), whose hugeint values the embedded
            # adapter reads back unscaled (150 for 1.50); a value too wide is refused when loaded, never misread
            sql_type = f"DECIMAL({min(int(digits), 18)},{int(scale)})"
        elif kind in ("varchar", "char") and int(digits) > 0:
            sql_type = f"{kind.upper()}({int(digits)})"
        elif kind in ("time", "timestamp") and int(digits) > 0:
            # the catalog holds the precision plus one; a bare TIME is TIME(0): TIME(6) recorded as TIME cut
            # every value's fractions
            sql_type = f"{kind.upper()}({int(digits) - 1})"
        elif kind == "varchar":
            sql_type = "CLOB"
        else:
            sql_type = {"int": "INT", "sec_interval": "INTERVAL SECOND", "month_interval": "INTERVAL MONTH"}.get(
                kind, kind.upper()
            )
        if str(col).lower() in (catalog.ROWID, *catalog.META_COLUMNS):
            raise ProgrammingError(f"CREATE TABLE AS: column name {col!r} is reserved by tique; rename it with AS")
        out.append(ColumnSpec(str(col), sql_type))
    return tuple(out)


def _load(conn: RawConnection, info: TableInfo, session: Any, select_sql: str) -> int:
    """The SELECT's rows as the creating transaction reads them, into Storage (row ids -1, -2, ...)."""
    if session is None:
        raise NotSupportedError("CREATE TABLE AS SELECT WITH DATA needs a tique connection")
    cursor = session.cursor()
    # each column read as the type it gets (a DECIMAL(38,s) sum would reach the embedded adapter unscaled)
    typed = ", ".join(f"CAST(tq_c.{quote(c.name)} AS {c.sql_type})" for c in info.columns)
    with session.zero_signs_kept(bool(info.float_positions)):  # its SELECT's constant zeros keep their signs
        cursor.execute(f"SELECT {typed} FROM ({select_sql}) AS tq_c")
    rows = cursor.fetchall()
    names = ", ".join(quote(c) for c in info.column_names) + f", {catalog.ROWID}"
    for start in range(0, len(rows), 1000):
        chunk = rows[start : start + 1000]
        values = ", ".join(
            "(" + ", ".join(literal(v) for v in row) + f", {-(start + i + 1)})" for i, row in enumerate(chunk)
        )
        with zero_signs_kept(conn, negative_zero(v for row in chunk for v in row)):
            conn.execute(f"INSERT INTO {info.storage} ({names}) VALUES {values}")
    return len(rows)
