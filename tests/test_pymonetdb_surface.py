"""What code written for pymonetdb calls besides PEP 249 (found missing by a parity review): its module names
(exceptions, types, DATE/TIME, the time-zone tick constructors), its connect() forms and keywords, the connection's
time zone and fetch-tuning methods, cursor.operation, and nextset() leaving no result."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import pytest

import tique


def test_module_names() -> None:
    from tique.exceptions import OperationalError, ProgrammingError

    assert OperationalError is tique.OperationalError and ProgrammingError is tique.ProgrammingError
    assert tique.types.CLOB == "clob" and tique.DATE == "date" and tique.TIME == "time"
    assert tique.TimestampTzFromTicks(0).utcoffset() is not None
    assert tique.TimeTzFromTicks(0).tzinfo is not None


def test_connect_forms_and_session_keywords(server: Any, unique_name: Callable[[str], str]) -> None:
    name, port, password = server.directory.name, server.port, server.password
    schema = unique_name("sch")
    admin = tique.connect(name, "127.0.0.1", port, "monetdb", password)  # pymonetdb's positional order
    admin.cursor().execute(f"CREATE SCHEMA {schema}")
    admin.close()
    conn = tique.connect(
        name, hostname="127.0.0.1", port=port, password=password, schema=schema, timezone=90, replysize=1000
    )
    assert conn.get_replysize() == 1000
    assert conn.execute("SELECT CURRENT_SCHEMA").fetchall() == [(schema,)]
    offset = conn.execute("SELECT CURRENT_TIMEZONE").fetchone()[0]
    assert offset == datetime.timedelta(minutes=90)
    conn.set_timezone(-3600)
    assert conn.execute("SELECT CURRENT_TIMEZONE").fetchone()[0] == datetime.timedelta(hours=-1)
    conn.set_timezone(-1800)  # pymonetdb's own formatting gave +00:30
    assert conn.execute("SELECT CURRENT_TIMEZONE").fetchone()[0] == datetime.timedelta(minutes=-30)
    conn.close()
    with pytest.raises(tique.InterfaceError, match="TCP"):
        tique.connect(name, unix_socket="/tmp/.s.monetdb.50000")


def test_cursor_operation_and_nextset(connect: Callable[..., tique.Connection]) -> None:
    cur = connect().cursor()
    cur.execute("SELECT 1")
    assert cur.operation == "SELECT 1" and cur.description is not None
    assert cur.nextset() is None
    assert cur.description is None


@pytest.mark.parametrize(
    "query",
    [
        "SELECT COUNT(*) FROM sys.sessions",
        "SELECT * FROM sessions",
        "SELECT * FROM sys.sessions()",
        "SELECT COUNT(*) FROM sys.queue",
        "SELECT * FROM queue",
        "SELECT * FROM sys.queue()",
    ],
)
def test_sys_sessions_is_refused_rather_than_crashing_the_kernel(
    connect: Callable[..., tique.Connection], query: str
) -> None:
    """Reading sys.sessions crashes MonetDB 11.41's embedded kernel, plain monetdbe too (found by a review: a
    pymonetdb client's query killed tique serve); a connection that sent it would lose its process. So does
    sys.queue, embedded and served, with tique's sessions open (found by a later review)."""
    conn = connect()
    with pytest.raises(tique.NotSupportedError, match=r"sys\.(sessions|queue)"):
        conn.execute(query)
    assert conn.execute("SELECT 1 AS sessions").fetchall() == [(1,)]


def test_other_things_named_sessions_are_not_refused(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    """A CTE or a temporary table named sessions, or a column, is not MonetDB's view (found by a review)."""
    conn = connect()
    assert conn.execute("WITH sessions AS (SELECT 1 AS a) SELECT a FROM sessions").fetchall() == [(1,)]
    conn.execute("CREATE TEMPORARY TABLE sessions (a INT) ON COMMIT PRESERVE ROWS")
    conn.execute("INSERT INTO sessions VALUES (2)")
    assert conn.execute("SELECT a FROM sessions").fetchall() == [(2,)]
    conn.execute("DROP TABLE sessions")
    with pytest.raises(tique.NotSupportedError, match=r"sys\.sessions"):
        conn.execute(
            f"CREATE FUNCTION {unique_name('fs')}() RETURNS INT BEGIN RETURN SELECT COUNT(*) FROM sys.sessions; END"
        )
