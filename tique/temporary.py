"""CREATE [LOCAL] TEMPORARY TABLE: MonetDB's own table of the session, in schema tmp.

A temporary table is the session's alone, so it never becomes a transactional tique table (which every session
would share and which would outlive the session). It is an ordinary MonetDB table, like a plain one: its writes
take effect at once, and a write to it that reads transactional tables reads the transaction's snapshot.

Two things differ from MonetDB run with autocommit off, because tique's engine session commits every statement:

- ON COMMIT DELETE ROWS (MonetDB's default) and ON COMMIT DROP would act after each statement. The table is made
  ON COMMIT PRESERVE ROWS instead, and tique empties (or drops) it when the tique transaction ends, by COMMIT or
  ROLLBACK: the rows live until then, as in MonetDB.
- ROLLBACK does not undo the writes to a table kept ON COMMIT PRESERVE ROWS (as for a plain table), nor the
  CREATE itself (tique's DDL takes effect at once).

CREATE TEMPORARY TABLE ... AS SELECT reads the transaction's snapshot, like CREATE TABLE AS: MonetDB creates the
table from the SELECT's types (WITH NO DATA), then tique inserts the rows.

MonetDB resolves an unqualified name to the session's temporary table before any schema's table; tique's name
lookup does the same for the temporary tables the session made (ReadOptions.temporary), and DDL naming one goes
to MonetDB as written. A temporary table named like a transactional table of the current schema, and a table
created under a temporary table's name, are refused all the same: other ways of naming a table (SQLAlchemy's
reflection, tique's own API) would not tell the two apart.

Refused, with what to do instead: GLOBAL TEMPORARY (its definition is shared and outlives the session, so an ON
COMMIT clause would have to act in sessions tique does not know of), and two forms that crash MonetDB 11.41's
kernel (the whole process): a FOREIGN KEY between temporary tables, and ALTER TABLE ... RENAME of one.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from tique.ddl_views import insert_counted, with_no_data
from tique.engine.base import RawConnection, Result
from tique.errors import Error, NotSupportedError, ProgrammingError
from tique.names import ident, qualified, quote
from tique.params import literal
from tique.rewrite.dialect import MonetDB
from tique.rewrite.parse import monetdb_quotes

_LEADING_COMMENTS = re.compile(r"(?:\s+|--[^\n]*(?:\n|$)|#[^\n]*(?:\n|$)|/\*.*?\*/)*", re.S)
_CREATE = re.compile(r"CREATE\s+(?:(LOCAL|GLOBAL)\s+)?TEMP(?:ORARY)?\s+TABLE\b", re.I)

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
    text = monetdb_quotes(sql)  # pymonetdb's 'it\'s' (a DDL's parameters are formatted in) as the reader reads it
    tokens = _tokens(text)
    if len(tokens) > 1 and tokens[1].text.upper() == "GLOBAL":
        raise NotSupportedError(
            "CREATE GLOBAL TEMPORARY TABLE is not supported by tique: its definition outlives the session and is "
            "shared, and its ON COMMIT would have to act in every session using it. Use CREATE TEMPORARY TABLE "
            "(the session's own), or a plain table (-- tique: plain)"
        )
    at_end, body_end = _on_commit(tokens)
    table_at = next(i for i, t in enumerate(tokens) if t.token_type == TokenType.TABLE)
    body = text[tokens[0].start : body_end]
    tree = _parsed(text[tokens[table_at].end + 1 : body_end])
    table = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    if not isinstance(table, exp.Table):
        raise ProgrammingError(f"CREATE TEMPORARY TABLE: no table name in {sql!r}")
    if tree.find(exp.Reference, exp.ForeignKey):
        raise NotSupportedError(
            "CREATE TEMPORARY TABLE with a FOREIGN KEY (REFERENCES) is refused by tique: between two temporary "
            "tables it crashes MonetDB 11.41's kernel; check the reference in the application"
        )
    name = ident(table)
    if ident(table.args.get("db")) in ("", "tmp") and is_tique_table(current_schema, name):
        raise NotSupportedError(
            f"CREATE TEMPORARY TABLE {name}: {current_schema}.{name} is a transactional table, which MonetDB would "
            "read in its place in some statements and tique in others; give the temporary table another name"
        )
    existed = bool(tree.args.get("exists")) and exists(conn, name)
    if tree.expression is None:
        conn.execute(f"{body} ON COMMIT PRESERVE ROWS")
        return Result(rowcount=-1), None if existed else TemporaryTable(name, at_end)
    if existed:
        return Result(rowcount=-1), None
    columns = ""
    if isinstance(tree.this, exp.Schema):
        columns = " (" + ", ".join(quote(ident(c)) for c in tree.this.expressions) + ")"
    select_sql = tree.expression.sql(dialect=MonetDB)
    made = TemporaryTable(name, at_end)
    # MonetDB derives the column types from the SELECT (over the outside views); tique inserts the snapshot's rows
    conn.execute(
        f"CREATE LOCAL TEMPORARY TABLE {made.qualified}{columns} AS {select_sql} WITH NO DATA ON COMMIT PRESERVE ROWS"
    )
    if with_no_data(tree):
        return Result(rowcount=-1), made
    try:
        return Result(rowcount=insert_counted(session, made.qualified, select_sql)), made
    except BaseException:
        conn.execute(f"DROP TABLE {made.qualified}")  # all or nothing, as one statement
        raise


def named_temporary(tree: exp.Expression, tables: Iterable[str]) -> str | None:
    """The session's temporary table a DROP TABLE, ALTER TABLE, TRUNCATE or CREATE INDEX acts on: unqualified and
    among ``tables``, or in schema tmp. MonetDB resolves such a name to it, so the statement goes as written. Any
    other DDL (a view over it, say) is tique's: the lookup resolves the name to it there too."""
    kind = str(tree.args.get("kind") or "").upper()
    targets: list[exp.Expression] = []
    if isinstance(tree, exp.Drop) and kind == "TABLE":
        targets = list(tree.args.get("tables") or []) or [tree.this]
    elif isinstance(tree, exp.Alter) and kind in ("", "TABLE"):
        targets = [tree.this]
    elif isinstance(tree, exp.TruncateTable):
        targets = list(tree.expressions)
    elif isinstance(tree, exp.Create) and kind == "INDEX":
        targets = [tree.find(exp.Table)]
    if len(targets) != 1 or not isinstance(targets[0], exp.Table):  # several: tique's own DDL path refuses them
        return None
    schema, name = ident(targets[0].args.get("db")), ident(targets[0])
    return name if schema == "tmp" or (not schema and name in tables) else None


def refuse_renamed(tree: exp.Expression) -> None:
    """ALTER TABLE ... RENAME of a temporary table crashes MonetDB 11.41's kernel (two columns or more)."""
    if isinstance(tree, exp.Alter) and any(isinstance(a, exp.AlterRename) for a in tree.args.get("actions") or []):
        raise NotSupportedError(
            "ALTER TABLE ... RENAME of a temporary table is refused by tique: it crashes MonetDB 11.41's kernel; "
            "create a new temporary table AS SELECT from it instead"
        )


def refuse_shadowed(conn: RawConnection, tree: exp.Expression) -> None:
    """A CREATE TABLE (not temporary) of a name this session has a temporary table of is refused, for the reason
    a temporary table is refused a transactional table's name."""
    if not (isinstance(tree, exp.Create) and str(tree.args.get("kind") or "").upper() == "TABLE"):
        return
    table = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    if isinstance(table, exp.Table) and exists(conn, ident(table)):
        raise NotSupportedError(
            f"CREATE TABLE {ident(table)}: this session has a temporary table of that name, which MonetDB would "
            "read in its place in some statements and tique in others; drop it first, or choose another name"
        )


def end(conn: RawConnection, tables: dict[str, TemporaryTable]) -> None:
    """What the end of a transaction does to the session's temporary tables (kept ON COMMIT PRESERVE ROWS):
    empty those made ON COMMIT DELETE ROWS, drop those made ON COMMIT DROP. A table dropped meanwhile is
    forgotten. It never fails the COMMIT or ROLLBACK that ends the transaction: a table it could not empty or drop
    is named in a warning."""
    for key, table in list(tables.items()):
        if table.at_end == PRESERVE_ROWS:
            continue
        try:
            conn.execute(f"DROP TABLE {table.qualified}" if table.at_end == DROP else f"DELETE FROM {table.qualified}")
            if table.at_end == DROP:
                del tables[key]
        except Error as exc:
            try:
                gone = not exists(conn, table.name)
            except Error:
                gone = False
            if gone:
                del tables[key]
                continue
            verb = "drop" if table.at_end == DROP else "empty"
            warnings.warn(f"tique could not {verb} the temporary table tmp.{table.name} at the end of the transaction "
                          f"({type(exc).__name__}: {exc})", RuntimeWarning, stacklevel=4)  # fmt: skip


def exists(conn: RawConnection, name: str) -> bool:
    """Whether this session has a temporary table ``name`` (another session's GLOBAL one counts too)."""
    rows = conn.execute(
        "SELECT COUNT(*) FROM sys.tables t JOIN sys.schemas s ON t.schema_id = s.id "
        f"WHERE s.name = 'tmp' AND t.name = {literal(name)}"
    ).rows
    return bool(rows[0][0])


def _tokens(text: str) -> list[Token]:
    """The statement's tokens (comments are none), up to its first ';'."""
    try:
        tokens = MonetDB().tokenize(text)
    except TokenError as exc:
        raise ProgrammingError(f"CREATE TEMPORARY TABLE: tique could not read it: {exc}", "42000") from None
    for i, token in enumerate(tokens):
        if token.token_type == TokenType.SEMICOLON:
            return tokens[:i]
    return tokens


def _on_commit(tokens: list[Token]) -> tuple[str, int]:
    """The statement's ON COMMIT action (MonetDB's default: DELETE ROWS), and where the text before it ends."""
    words = [t.text.upper() for t in tokens[-4:]]
    for action, length in ((DELETE_ROWS, 4), (PRESERVE_ROWS, 4), (DROP, 3)):
        tail = ["ON", "COMMIT", *action.upper().split()]
        if words[-length:] == tail and len(tokens) > length:
            return action, tokens[-length - 1].end + 1  # a comment before ON COMMIT is left out with it
    return DELETE_ROWS, tokens[-1].end + 1


def _parsed(rest: str) -> exp.Create:
    """The statement after its CREATE ... TEMPORARY TABLE and before its ON COMMIT, parsed as a CREATE TEMPORARY
    TABLE (sqlglot reads no LOCAL)."""
    try:
        tree = sqlglot.parse_one("CREATE TEMPORARY TABLE " + rest, read=MonetDB)
    except (ParseError, TokenError) as exc:
        raise ProgrammingError(f"CREATE TEMPORARY TABLE: tique could not read it: {exc}", "42000") from None
    if not isinstance(tree, exp.Create):
        raise NotSupportedError(
            "CREATE TEMPORARY TABLE: tique could not read this form; write it as CREATE TEMPORARY TABLE name "
            "(columns) or CREATE TEMPORARY TABLE name AS SELECT ..."
        )
    return tree
