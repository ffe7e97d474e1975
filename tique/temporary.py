"""CREATE [LOCAL | GLOBAL] TEMPORARY TABLE: MonetDB's own table of the session, in schema tmp.

A temporary table is the session's alone, so it never becomes a transactional tique table (which every session
would share and which would outlive the session). It is an ordinary MonetDB table, like a plain one: its writes
take effect at once, and a write to it that reads transactional tables reads the transaction's snapshot.

Two things differ from MonetDB run with autocommit off, because tique's engine session commits every statement:

- ON COMMIT DELETE ROWS (MonetDB's default) and ON COMMIT DROP would act after each statement. The table is made
  ON COMMIT PRESERVE ROWS instead, and tique empties (or drops) it when the tique transaction ends, by COMMIT or
  ROLLBACK: the rows live until then, as in MonetDB.
- ROLLBACK does not undo the writes to a table kept ON COMMIT PRESERVE ROWS (as for a plain table).

CREATE TEMPORARY TABLE ... AS SELECT reads the transaction's snapshot, like CREATE TABLE AS: MonetDB creates
the table from the SELECT's types (WITH NO DATA), then tique inserts the rows. MonetDB resolves an unqualified
name to a temporary table before the current schema's, tique to its own table: a temporary table named like a
transactional table of the current schema, or a table created under a temporary table's name, is refused rather
than read differently by the two.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from tique.engine.base import RawConnection, Result
from tique.errors import NotSupportedError, ProgrammingError
from tique.names import ident, qualified, quote
from tique.params import literal
from tique.rewrite.dialect import MonetDB

_LEADING_COMMENTS = re.compile(r"(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*", re.S)
_CREATE = re.compile(r"CREATE\s+(?:(LOCAL|GLOBAL)\s+)?TEMP(?:ORARY)?\s+TABLE\b", re.I)
_ON_COMMIT = re.compile(r"\s+ON\s+COMMIT\s+(DELETE\s+ROWS|PRESERVE\s+ROWS|DROP)\s*;?\s*$", re.I)

# what the end of a tique transaction does to the table
DELETE_ROWS = "delete rows"
DROP = "drop"
PRESERVE_ROWS = "preserve rows"


@dataclass(frozen=True)
class TemporaryTable:
    name: str  # as MonetDB stores it, in schema tmp
    at_end: str  # DELETE_ROWS, DROP or PRESERVE_ROWS

    @property
    def qualified(self) -> str:
        return qualified("tmp", self.name)


def creates_temporary(sql: str) -> bool:
    """Whether ``sql`` is a CREATE ... TEMPORARY TABLE (any of MonetDB's spellings)."""
    return bool(_CREATE.match(sql, _LEADING_COMMENTS.match(sql).end()))  # type: ignore[union-attr]


def create(
    conn: RawConnection, sql: str, session: Any, current_schema: str, is_tique_table: Callable[[str, str], bool]
) -> tuple[Result, TemporaryTable | None]:
    """Create the temporary table ``sql`` describes (creates_temporary), kept ON COMMIT PRESERVE ROWS; returns
    the statement's result and the table with what the transaction's end must do to it (None: the table existed,
    IF NOT EXISTS)."""
    text = sql[_LEADING_COMMENTS.match(sql).end() :].rstrip().rstrip(";").rstrip()  # type: ignore[union-attr]
    create_match = _CREATE.match(text)
    assert create_match is not None
    scope = (create_match.group(1) or "LOCAL").upper()
    on_commit = _ON_COMMIT.search(text)
    at_end = " ".join(on_commit.group(1).lower().split()) if on_commit else DELETE_ROWS
    body = text[: on_commit.start()] if on_commit else text
    tree = _parsed(body[create_match.end() :])
    table = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    if not isinstance(table, exp.Table):
        raise ProgrammingError(f"CREATE TEMPORARY TABLE: no table name in {sql!r}")
    name = ident(table)
    if ident(table.args.get("db")) in ("", "tmp") and is_tique_table(current_schema, name):
        raise NotSupportedError(
            f"CREATE TEMPORARY TABLE {name}: {current_schema}.{name} is a transactional table, which MonetDB would "
            "read in its place in some statements and tique in others; give the temporary table another name"
        )
    existed = bool(tree.args.get("exists")) and _exists(conn, name)
    if tree.expression is None:
        conn.execute(f"{body} ON COMMIT PRESERVE ROWS")
        return Result(rowcount=-1), None if existed else TemporaryTable(name, at_end)
    if existed:
        return Result(rowcount=-1), None
    props = tree.args.get("properties")
    no_data = any(
        isinstance(p, exp.WithDataProperty) and p.args.get("no") for p in (props.expressions if props else [])
    )
    columns = ""
    if isinstance(tree.this, exp.Schema):
        columns = " (" + ", ".join(quote(ident(c)) for c in tree.this.expressions) + ")"
    select_sql = tree.expression.sql(dialect=MonetDB)
    made = TemporaryTable(name, at_end)
    # MonetDB derives the column types from the SELECT (over the outside views); tique inserts the snapshot's rows
    conn.execute(
        f"CREATE {scope} TEMPORARY TABLE {made.qualified}{columns} AS {select_sql} WITH NO DATA ON COMMIT PRESERVE ROWS"
    )
    if no_data:
        return Result(rowcount=-1), made
    try:
        cursor = session.cursor()
        cursor.execute(f"INSERT INTO {made.qualified} {select_sql}")
    except BaseException:
        conn.execute(f"DROP TABLE {made.qualified}")  # all or nothing, as one statement
        raise
    if cursor.rowcount < 0:  # over MAPI the embedded kernel's listener sends no update count
        cursor.execute(f"SELECT COUNT(*) FROM {made.qualified}")
        return Result(rowcount=int(cursor.fetchone()[0])), made
    return Result(rowcount=cursor.rowcount), made


def refuse_shadowed(conn: RawConnection, tree: exp.Expression) -> None:
    """A CREATE TABLE (not temporary) of a name this session has a temporary table of (its own, or a GLOBAL one's
    definition) is refused, for the reason a temporary table is refused a transactional table's name."""
    if not (isinstance(tree, exp.Create) and str(tree.args.get("kind") or "").upper() == "TABLE"):
        return
    table = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    if isinstance(table, exp.Table) and _exists(conn, ident(table)):
        raise NotSupportedError(
            f"CREATE TABLE {ident(table)}: this session has a temporary table of that name, which MonetDB would "
            "read in its place in some statements and tique in others; drop it first, or choose another name"
        )


def end(conn: RawConnection, tables: dict[str, TemporaryTable]) -> None:
    """What the end of a transaction does to the session's temporary tables (kept ON COMMIT PRESERVE ROWS):
    empty those made ON COMMIT DELETE ROWS, drop those made ON COMMIT DROP. A table dropped meanwhile is
    forgotten."""
    for key, table in list(tables.items()):
        if table.at_end == PRESERVE_ROWS:
            continue
        try:
            conn.execute(f"DROP TABLE {table.qualified}" if table.at_end == DROP else f"DELETE FROM {table.qualified}")
        except ProgrammingError:
            if _exists(conn, table.name):
                raise
            del tables[key]
            continue
        if table.at_end == DROP:
            del tables[key]


def _parsed(rest: str) -> exp.Create:
    """The statement after its CREATE ... TEMPORARY TABLE, parsed as a CREATE TEMPORARY TABLE (sqlglot reads no
    LOCAL or GLOBAL, and no ON COMMIT DROP: both were taken off)."""
    try:
        tree = sqlglot.parse_one("CREATE TEMPORARY TABLE " + rest, read=MonetDB)
    except sqlglot.errors.ParseError as exc:
        raise ProgrammingError(f"CREATE TEMPORARY TABLE: tique could not read it: {exc}") from None
    if not isinstance(tree, exp.Create):
        raise NotSupportedError(
            "CREATE TEMPORARY TABLE: tique could not read this form; write it as CREATE TEMPORARY TABLE name "
            "(columns) or CREATE TEMPORARY TABLE name AS SELECT ..."
        )
    return tree


def _exists(conn: RawConnection, name: str) -> bool:
    """Whether this session has a temporary table ``name`` (a GLOBAL one counts too)."""
    rows = conn.execute(
        "SELECT COUNT(*) FROM sys.tables t JOIN sys.schemas s ON t.schema_id = s.id "
        f"WHERE s.name = 'tmp' AND t.name = {literal(name)}"
    ).rows
    return bool(rows[0][0])
