"""ALTER TABLE on transactional tables: ADD COLUMN, DROP COLUMN, RENAME COLUMN, RENAME TO.

Like all of tique's DDL it takes effect at once, outside any transaction. One ALTER changes four things that
must agree: the Storage table, the Cache table, the catalog spec (tique.tables) and the outside VIEW T
(tique/views.py). They change in one engine transaction (engine.base.one_transaction): a failed step rolls all of
them back, and a process killed half way leaves the table as it was (MonetDB runs each of these DDL statements in
a transaction). MonetDB's conflicts are per table and optimistic, so that transaction loses to another session's
DDL or append meanwhile; it changed nothing then, and runs again (engine.base.retried_on_conflict). Physical
columns that no spec names are unused (the rewriter, the transactions and the checkpointer name columns
explicitly): ADD COLUMN adds its own in short statements before the transaction (inside it, it lost to nearly every
append to the Cache), and DROP COLUMN drops the old one after it, as clean-up. A column either leaves behind (a
failure, a kill) is dropped by the next ADD COLUMN of its name.

Existing rows get a new column's DEFAULT, as SQL says - in Storage and in every Cache version, committed or
not, so a checkpoint that moves an old version into Storage moves the default with it. The Cache column keeps
the DEFAULT too: a process whose catalog predates the ALTER writes Cache rows without the column, and they get
the default rather than a NULL the checkpointer could not move into a NOT NULL Storage column. (A DEFAULT is no
constraint: measured, concurrent appends to a table with one do not conflict.)

Each ALTER is checked first and then runs as a versioned catalog change (tique/versioned.py): a commit record with
the table's schema hash (both names for RENAME TO) is decided before the change, so a writing transaction of
another session that read or wrote the table and overlaps the ALTER fails at COMMIT; the session's own ALTER
does not fail its transaction (a migration's ALTER followed by an UPDATE commits). Rows that transaction
buffered in the old shape are written in it: an added column gets its DEFAULT; a dropped or renamed column, or
rows of both shapes, fail the statement that sends them, never silently.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Callable
from dataclasses import replace

from sqlglot import exp

from tique import catalog, ddl_parse, views
from tique.catalog import ColumnSpec, TableInfo
from tique.database import Database
from tique.engine.base import RawConnection, Result, one_transaction, retried_on_conflict
from tique.errors import NotSupportedError, ProgrammingError, lost_to_concurrency
from tique.names import NAME, ident, quote, read_names
from tique.params import literal
from tique.storage import refusal_judge
from tique.versioned import versioned

# Called with each step's name before the step: tests make a step fail here.
step_hook: Callable[[str], None] | None = None


def _step(name: str) -> None:
    if step_hook is not None:
        step_hook(name)


def alter_table(db: Database, conn: RawConnection, tree: exp.Alter, info: TableInfo) -> Result:
    """Checked first; then the change runs as a versioned catalog change (tique/versioned.py)."""
    actions = tree.args.get("actions") or []
    if len(actions) != 1:
        raise NotSupportedError(
            f"ALTER TABLE {info.name} with {len(actions)} actions: tique runs one action per ALTER TABLE; "
            "send them one by one"
        )
    action = actions[0]
    _check_constraints(db, info, action)
    if isinstance(action, exp.ColumnDef):
        change = _add_column(conn, info, action)
    elif isinstance(action, exp.Drop) and str(action.args.get("kind") or "COLUMN").upper() == "COLUMN":
        change = _drop_column(conn, info, action)
    elif isinstance(action, exp.RenameColumn):
        change = _rename_column(conn, info, ident(action.this), ident(action.args.get("to")))
    elif isinstance(action, exp.AlterColumn):
        change = _alter_column(conn, info, action)
    elif isinstance(action, exp.AlterRename):
        target = action.this
        schema = ident(target.args.get("db")) or info.schema
        if schema != info.schema:
            raise NotSupportedError(
                f"ALTER TABLE {info.name} RENAME TO another schema is not supported by tique: create the table there "
                "(CREATE TABLE ... AS SELECT * FROM it) and drop this one"
            )
        change = _rename_table(db, conn, info, ident(target))
    else:
        raise NotSupportedError(
            f"ALTER TABLE ... {action.sql(dialect='postgres')[:60]!r} on the transactional table {info.name!r} is not "
            "supported by tique: it runs ADD COLUMN, DROP COLUMN, RENAME COLUMN and RENAME TO (constraints are "
            "declared at CREATE TABLE; to add one or change a type, create a new table and copy the rows)"
        )
    new, apply = change
    if not isinstance(action, exp.AlterColumn):  # these replace the view T: refuse before anything is recorded
        _check_no_dependents(conn, info)
    names = [(info.schema, info.name)] + ([(new.schema, new.name)] if new.name != info.name else [])
    ids: list[int] = []
    versioned(db, conn, names, apply, ids)  # a transaction that used the table meanwhile fails at COMMIT
    return Result(rowcount=-1, ddl_txids=tuple(ids))


def _check_constraints(db: Database, info: TableInfo, action: exp.Expression) -> None:
    """UNIQUE and FOREIGN KEY constraints name columns and tables: an ALTER that would leave one dangling is
    refused (tique keeps the constraints in its catalog, not in MonetDB's)."""
    column = ""
    if isinstance(action, exp.Drop):
        targets = action.args.get("tables") or [action.this]
        column = ident(targets[0]) if targets and targets[0] is not None else ""
    elif isinstance(action, exp.RenameColumn):
        column = ident(action.this)
    if column and column in info.constrained:
        raise NotSupportedError(
            f"ALTER TABLE {info.name} ... COLUMN {column!r}: the column is in a UNIQUE or FOREIGN KEY constraint; "
            "create a new table with the constraints you want and copy the rows (INSERT ... SELECT) instead"
        )
    if isinstance(action, exp.AlterRename) and (info.foreign_keys or db.catalog.children(info)):
        raise NotSupportedError(
            f"ALTER TABLE {info.name} RENAME TO: FOREIGN KEYs link it to other tables, which name it; create a new "
            "table and copy the rows (INSERT ... SELECT) instead"
        )


_UNPARSED = re.compile(rf"^\s*ALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?({NAME}(?:\.{NAME})?)", re.I)


def refuse_unparsed(db: Database, conn: RawConnection, sql: str) -> None:
    """An ALTER TABLE tique's parser cannot read (MonetDB's SET READ ONLY...): never sent to MonetDB for a
    transactional table, whose name there is only its view."""
    found = _UNPARSED.match(sql)
    if not found:
        return
    parts = read_names(found.group(1))
    schema, name = (parts[0], parts[1]) if len(parts) == 2 else (db.default_schema, parts[0])
    info = db.catalog.lookup(conn, schema, name)
    if info is not None and info.kind in ("tx", "view"):
        raise NotSupportedError(
            f"{sql.strip()[:80]!r} on tique's table {name!r} is not supported by tique: it runs ADD COLUMN, DROP "
            "COLUMN, RENAME COLUMN, RENAME TO and ALTER COLUMN SET/DROP DEFAULT, DROP NOT NULL"
        )


def _swap_view(conn: RawConnection, old: TableInfo, new: TableInfo) -> None:
    """The outside VIEW T in the new shape; MonetDB refuses to drop it while a view of the user's uses it."""
    _drop_view(conn, old)
    conn.execute(views.create_sql(new))


def _check_no_dependents(conn: RawConnection, info: TableInfo) -> None:
    users = views.dependents(conn, info)
    if users:
        raise ProgrammingError(
            f"ALTER TABLE {info.name}: views use {info.name!r} ({', '.join(users)}), and tique replaces its view "
            f"{info.name!r} to change the table; drop the views that use {info.name!r} first and create them again "
            "afterwards"
        )


def _drop_view(conn: RawConnection, info: TableInfo) -> None:
    _step("view")
    try:
        conn.execute(views.drop_sql(info))
    except Exception as exc:
        if lost_to_concurrency(exc):
            raise  # another session's change: retried (_retried), not a view of the user's
        raise ProgrammingError(
            f"ALTER TABLE {info.name}: cannot replace tique's view {info.name!r} ({exc}); drop the views that use "
            f"{info.name!r} first and create them again afterwards"
        ) from exc


def _write_spec(conn: RawConnection, new: TableInfo) -> None:
    """The catalog's new definition, the last step of the change's engine transaction."""
    _step("spec")
    conn.execute(
        f"UPDATE tique.tables SET name = {literal(new.name)}, spec = {literal(new.spec_json())} "
        f"WHERE table_id = {new.table_id}"
    )


def _add_column(conn: RawConnection, info: TableInfo, node: exp.ColumnDef) -> tuple[TableInfo, Callable[[], None]]:
    name = ident(node.this)
    if name.lower() in (catalog.ROWID, *catalog.META_COLUMNS):
        raise ProgrammingError(f"column name {name!r} is reserved by tique")
    if any(c.name == name for c in info.columns):
        raise ProgrammingError(f"ALTER TABLE {info.name} ADD COLUMN: column {name!r} already exists", "42S21")
    if node.args.get("kind") is None:
        raise ProgrammingError(f"column {name!r} needs a type")
    if ddl_parse.serial_type(node):
        raise NotSupportedError(
            f"ADD COLUMN {name!r} SERIAL is not supported by tique: generated keys are declared at CREATE TABLE"
        )
    not_null, default = False, None
    for constraint in node.args.get("constraints") or []:
        kind = constraint.kind
        if isinstance(kind, exp.NotNullColumnConstraint) and not kind.args.get("allow_null"):
            not_null = True
        elif isinstance(kind, exp.DefaultColumnConstraint):
            default = ddl_parse.default_value(kind.this, node.args.get("kind"))
            if isinstance(default, catalog.SequenceDefault):
                raise NotSupportedError(
                    f"ALTER TABLE {info.name} ADD COLUMN {name!r} DEFAULT NEXT VALUE FOR is not supported by tique "
                    "(existing rows would each need a value): add the column, then UPDATE it"
                )
        elif isinstance(kind, exp.NotNullColumnConstraint):
            pass  # NULL: the default
        else:
            raise NotSupportedError(
                f"ALTER TABLE {info.name} ADD COLUMN {name!r} with {constraint.sql(dialect='postgres')!r} is not "
                "supported by tique: it takes NOT NULL and a literal DEFAULT (add a primary key at CREATE TABLE)"
            )
    if not_null and default is None:
        raise NotSupportedError(
            f"ALTER TABLE {info.name} ADD COLUMN {name!r} NOT NULL needs a DEFAULT with tique: existing versions "
            "(also uncommitted ones) need a value; give a DEFAULT, or add the column nullable"
        )
    column = ColumnSpec(name, ddl_parse.type_sql(node.args["kind"]), not_null, default)
    new = replace(info, columns=(*info.columns, column))
    typed = f"{quote(name)} {new.physical_type(name)}"
    filled = f" DEFAULT {catalog.physical_default(new, column)}" if default is not None else ""

    def apply() -> None:
        # The new physical columns first, each in a short statement of its own: a long transaction around them lost
        # to every append to the Cache meanwhile (0-1 of 10 ADD COLUMNs beside two writers). Until the spec names
        # it, the column is unused; a failure or a kill leaves it behind, and the next ADD COLUMN of the name drops
        # it first (its values would be old ones).
        _drop_left_behind(conn, info, name)
        added: list[str] = []
        try:
            _step("storage")
            required = " NOT NULL" if not_null else ""
            storage_sql = f"ALTER TABLE {info.storage} ADD COLUMN {typed}{filled}{required}"
            _physical(conn, info, storage_sql, _column_bytes(conn, info.storage, filled))
            added.append(info.storage)
            _step("cache")
            cache_sql = f"ALTER TABLE {info.cache} ADD COLUMN {typed}{filled}"  # every version: the default
            _physical(conn, info, cache_sql, _column_bytes(conn, info.cache, filled))
            added.append(info.cache)

            def publish() -> None:
                with one_transaction(conn):
                    _swap_view(conn, info, new)
                    _write_spec(conn, new)

            _retried(publish, info, conn)
        except BaseException:
            for table in added:  # best effort: one left behind is dropped by the next ADD COLUMN of the name
                with contextlib.suppress(Exception):
                    conn.execute(f"ALTER TABLE {table} DROP COLUMN {quote(name)}")
            raise

    return new, apply


def _physical(conn: RawConnection, info: TableInfo, sql: str, writes: int = 0) -> None:
    """A physical step on Storage or Cache as a statement of its own, again while it loses to an append. It may
    write about ``writes`` bytes (ADD COLUMN ... DEFAULT writes every row): a refusal within that much of the
    minimum free space is judged a failed write (routine conflicts with appends farther from it are not)."""
    _retried(lambda: conn.execute(sql), info, conn, writes)


def _column_bytes(conn: RawConnection, table: str, filled: str) -> int:
    """About what adding a column to ``table`` writes to the engine's log (its rows times a value and its
    default's text), generously: the judge's slack for a refusal of that write."""
    rows = int(conn.execute(f"SELECT COUNT(*) FROM {table}").scalar() or 0)
    return 2 * rows * (16 + len(filled)) + (1 << 20)


def _drop_left_behind(conn: RawConnection, info: TableInfo, name: str) -> None:
    """Drop a physical column ``name`` that a killed ADD COLUMN or a failed DROP COLUMN's clean-up left behind
    (unused: the catalog does not have it): its old values, or its name, would be in the way."""
    for table in _left_behind(conn, info, name):
        _physical(conn, info, f"ALTER TABLE {table} DROP COLUMN {quote(name)}")


def _left_behind(conn: RawConnection, info: TableInfo, name: str) -> list[str]:
    """Storage and Cache tables that still hold a physical column ``name`` the catalog no longer has."""
    rows = conn.execute(
        "SELECT t.name FROM sys.columns c JOIN sys.tables t ON c.table_id = t.id JOIN sys.schemas s ON "
        f"t.schema_id = s.id WHERE s.name = {literal(info.physical_schema)} AND c.name = {literal(name)} AND t.name IN "
        f"({literal(info.storage_name)}, {literal(info.cache_name)})"
    ).rows
    held = {str(r[0]) for r in rows}
    return [t for t, n in ((info.storage, info.storage_name), (info.cache, info.cache_name)) if n in held]


def _alter_column(conn: RawConnection, info: TableInfo, node: exp.AlterColumn) -> tuple[TableInfo, Callable[[], None]]:
    """SET DEFAULT, DROP DEFAULT, DROP NOT NULL: the spec and both physical tables' defaults (the Cache keeps
    them for writers with an older catalog, see above); Storage's NOT NULL. No row changes."""
    name = ident(node.this)
    column = info.column(name)
    alter = f"ALTER TABLE {{table}} ALTER COLUMN {quote(name)} "
    if node.args.get("default") is not None or (node.args.get("drop") and node.args.get("allow_null") is None):
        default = (
            ddl_parse.default_value(node.args["default"], column.sql_type)
            if node.args.get("default") is not None
            else None
        )
        changed = ColumnSpec(name, column.sql_type, column.not_null, default)
        new_sql = f"SET DEFAULT {catalog.physical_default(info, changed)}" if default is not None else "DROP DEFAULT"
        tables = (info.storage, info.cache)
    elif node.args.get("allow_null") is True and not node.args.get("dtype"):
        if name in info.key:
            raise NotSupportedError(f"ALTER TABLE {info.name} ALTER COLUMN {name!r} DROP NOT NULL: it is primary key")
        changed = ColumnSpec(name, column.sql_type, False, column.default)
        new_sql = "SET NULL"
        tables = (info.storage,)
    elif node.args.get("allow_null") is False:
        raise NotSupportedError(
            f"ALTER TABLE {info.name} ALTER COLUMN {name!r} SET NOT NULL is not supported by tique: uncommitted "
            "and concurrent versions cannot be checked; recreate the table with NOT NULL and copy the rows"
        )
    else:
        raise NotSupportedError(
            f"ALTER TABLE {info.name} ALTER COLUMN {name!r} {node.sql(dialect='postgres')[:60]!r} (a type change?) is "
            "not supported by tique: create a new table with the type, INSERT ... SELECT the rows, then rename it"
        )
    new = replace(info, columns=tuple(changed if c.name == name else c for c in info.columns))

    def apply() -> None:
        def change() -> None:
            with one_transaction(conn):
                for table in tables:
                    _step("storage" if table == info.storage else "cache")
                    conn.execute(alter.format(table=table) + new_sql)
                _write_spec(conn, new)

        _retried(change, info, conn)

    return new, apply


def _drop_column(conn: RawConnection, info: TableInfo, node: exp.Drop) -> tuple[TableInfo, Callable[[], None]]:
    targets = node.args.get("tables") or [node.this]
    if len(targets) != 1 or targets[0] is None:
        raise NotSupportedError("ALTER TABLE ... DROP COLUMN takes one column at a time with tique")
    name = ident(targets[0])
    if not any(c.name == name for c in info.columns):
        if node.args.get("exists"):
            return info, lambda: None
        raise ProgrammingError(f"ALTER TABLE {info.name} DROP COLUMN: no column {name!r}", "42S22")
    if name in info.key:
        raise NotSupportedError(
            f"ALTER TABLE {info.name} DROP COLUMN {name!r}: it is part of the primary key, which tique versions rows "
            "by; create a new table and copy the rows (INSERT ... SELECT) instead"
        )
    if len(info.columns) == 1:
        raise ProgrammingError(f"ALTER TABLE {info.name} DROP COLUMN {name!r}: a table needs a column")
    new = replace(
        info,
        columns=tuple(c for c in info.columns if c.name != name),
        generated=tuple(g for g in info.generated if g != name),
    )
    dropped = info.column(name)

    def apply() -> None:
        def change() -> None:
            with one_transaction(conn):
                _step("storage")
                if dropped.not_null:  # the checkpointer stops writing it from the commit point on
                    conn.execute(f"ALTER TABLE {info.storage} ALTER COLUMN {quote(name)} SET NULL")
                _swap_view(conn, info, new)
                _write_spec(conn, new)

        _retried(change, info, conn)
        # past the commit point: the column is unused; dropping it is clean-up, and the ALTER has taken effect
        for table in (info.storage, info.cache):
            try:
                _step("cleanup")
                _physical(conn, info, f"ALTER TABLE {table} DROP COLUMN {quote(name)}")  # lost to writers unretried
            except Exception as exc:
                warnings.warn(
                    f"ALTER TABLE {info.name} DROP COLUMN {name!r} took effect, but the unused column stays in {table} "
                    f"({exc}); drop it there by hand once nothing depends on it",
                    stacklevel=2,
                )

    return new, apply


def _renamed(info: TableInfo, old: str, new: str) -> TableInfo:
    return replace(
        info,
        columns=tuple(ColumnSpec(new, c.sql_type, c.not_null, c.default) if c.name == old else c for c in info.columns),
        key=tuple(new if k == old else k for k in info.key),
        generated=tuple(new if g == old else g for g in info.generated),
    )


def _rename_column(
    conn: RawConnection, info: TableInfo, old: str, new_name: str
) -> tuple[TableInfo, Callable[[], None]]:
    info.column(old)  # says which column does not exist
    if not new_name or any(c.name == new_name for c in info.columns):
        raise ProgrammingError(f"ALTER TABLE {info.name} RENAME COLUMN: column {new_name!r} already exists", "42S21")
    if new_name.lower() in (catalog.ROWID, *catalog.META_COLUMNS):
        raise ProgrammingError(f"column name {new_name!r} is reserved by tique")
    new = _renamed(info, old, new_name)

    renames = [
        (step, f"ALTER TABLE {t} RENAME COLUMN {quote(old)} TO {quote(new_name)}")
        for t, step in ((info.storage, "storage"), (info.cache, "cache"))
    ]

    def apply() -> None:
        _drop_left_behind(conn, info, new_name)  # else the rename fails for good
        _renamed_under_view(conn, info, new, renames)

    return new, apply


def _rename_table(
    db: Database, conn: RawConnection, info: TableInfo, new_name: str
) -> tuple[TableInfo, Callable[[], None]]:
    taken = _taken(conn, info.schema, new_name, beside=not info.data_schema)
    if db.catalog.lookup(conn, info.schema, new_name) is not None or taken:
        raise ProgrammingError(
            f"ALTER TABLE {info.name} RENAME TO {new_name}: name {new_name!r} already in use", "42S01"
        )
    new = replace(info, name=new_name)
    if info.data_schema:  # Storage and Cache in tique_data follow the name (an older table's keep theirs beside T)
        new = catalog.placed(conn, new)

    renames = [
        (step, f"ALTER TABLE {old_t} RENAME TO {quote(new_physical)}")
        for old_t, new_physical, step in (
            (info.storage, new.storage_name, "storage"),
            (info.cache, new.cache_name, "cache"),
        )
    ]
    return new, lambda: _renamed_under_view(conn, info, new, renames)


def _renamed_under_view(conn: RawConnection, info: TableInfo, new: TableInfo, renames: list[tuple[str, str]]) -> None:
    """A rename's (step, statement) on Storage and Cache, between dropping T's view (MonetDB renames nothing a view
    depends on) and creating it for the new definition; then the spec."""

    def change() -> None:
        with one_transaction(conn):
            _drop_view(conn, info)
            for step, sql in renames:
                _step(step)
                conn.execute(sql)
            conn.execute(views.create_sql(new))
            _write_spec(conn, new)

    _retried(change, info, conn)


def _retried(change: Callable[[], object], info: TableInfo, conn: RawConnection, slack: int = 0) -> None:
    """An ALTER's engine transaction, again while another session's append or DDL (all of it writes tique.tables)
    makes MonetDB refuse it: it changed nothing, so it can run again. Each refusal is judged first: MonetDB reports
    a log write that failed for want of space in the same words (storage.py), within ``slack`` of the minimum."""
    retried_on_conflict(change, f"ALTER TABLE {info.name}", judge=refusal_judge(conn, slack))


def _taken(conn: RawConnection, schema: str, name: str, beside: bool) -> bool:
    """Is ``name`` taken in the schema - with ``beside``, also the Storage and Cache names a table made by an older
    tique keeps beside T (a table in tique_data gets free names there from ``catalog.placed``)."""
    names = (name, f"{name}__storage", f"{name}__cache") if beside else (name,)
    listed = ", ".join(literal(n) for n in names)
    return bool(
        conn.execute(
            "SELECT COUNT(*) FROM sys.tables t JOIN sys.schemas s ON t.schema_id = s.id "
            f"WHERE s.name = {literal(schema)} AND t.name IN ({listed})"
        ).scalar()
    )
