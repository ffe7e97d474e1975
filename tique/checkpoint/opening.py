"""Opening a database to checkpoint, and refusing one tique never set up."""

from __future__ import annotations

from tique.bootstrap import bootstrap
from tique.engine import Engine, RawConnection, open_engine
from tique.engine.url import parse_url
from tique.errors import DatabaseError, OperationalError
from tique.sequencer import CSequencer


class NotATiqueDatabase(OperationalError):
    pass


def check_database(conn: RawConnection) -> None:
    """Refuse a database tique never set up (rather than creating tique's tables in it), or an engine without
    tique's C module."""
    check_tables(conn)
    try:
        conn.execute("SELECT tique.horizon()")
    except DatabaseError as exc:
        raise NotATiqueDatabase(
            f"the engine has no tique.horizon(): tique's C module is not loaded ({exc}); "
            "checkpoint through 'tique serve' or an embedded URL"
        ) from exc


def check_tables(conn: RawConnection) -> None:
    names = {
        str(r[0])
        for r in conn.execute(
            "SELECT t.name FROM sys.tables t JOIN sys.schemas s ON t.schema_id = s.id WHERE s.name = 'tique'"
        ).rows
    }
    missing = {"commits", "outcomes", "tables"} - names
    if missing:
        raise NotATiqueDatabase(
            f"not a tique database: table(s) {', '.join('tique.' + m for m in sorted(missing))} missing; "
            "open it once with tique.connect() (or 'tique serve') before checkpointing it"
        )


def open_for_checkpoint(url: str) -> tuple[Engine, RawConnection]:
    """The engine and a raw connection of a database to checkpoint; an embedded one is set up and recovered first
    (this process is then its only user). Refuses a database tique never set up."""
    parsed = parse_url(url)
    engine = open_engine(parsed, create=False) if parsed.kind == "embedded" else open_engine(parsed)
    conn = engine.connect()
    try:
        check_tables(conn)
        if parsed.kind == "embedded":
            bootstrap(conn, CSequencer())
        check_database(conn)
    except Exception:
        conn.close()
        engine.close()
        raise
    return engine, conn
