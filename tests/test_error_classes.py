"""Every failure is a PEP 249 exception chosen by its SQLSTATE class, and a syntax error names the statement."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
import sqlglot

import tique
from tique.errors import class_for_sqlstate, from_monetdb

Connect = Callable[..., tique.Connection]


@pytest.mark.parametrize(
    ("sqlstate", "cls"),
    [
        ("22012", tique.DataError),
        ("23505", tique.errors.UniqueViolation),  # an IntegrityError (tests/test_error_registry.py)
        ("42000", tique.ProgrammingError),
        ("42S02", tique.ProgrammingError),
        ("40001", tique.SerializationFailure),
        ("53100", tique.StorageFull),
        ("08006", tique.errors.ConnectionFailure),  # an OperationalError
        ("0A000", tique.NotSupportedError),
        ("0A001", tique.NotSupportedError),
        ("HY013", tique.OperationalError),
    ],
)
def test_sqlstate_class_picks_the_exception(sqlstate: str, cls: type) -> None:
    assert class_for_sqlstate(sqlstate) is cls
    error = from_monetdb(f"SQLException:sql:{sqlstate}!something failed")
    assert type(error) is cls and error.sqlstate == sqlstate


@pytest.mark.parametrize(
    ("sql", "cls", "sqlstate"),
    [
        ("SELECT 1/0", tique.DataError, "22012"),
        ("SELECT id / 0 FROM {t}", tique.DataError, "22012"),
        ("SELECT CAST('x' AS INT)", tique.DataError, "22018"),
        ("SELECT * FROM {t}_missing", tique.ProgrammingError, "42S02"),
        ("SELECT nosuch FROM {t}", tique.ProgrammingError, "42000"),
        ("INSERT INTO {t} VALUES (1), (1)", tique.IntegrityError, "23505"),
    ],
)
def test_engine_errors_by_class(
    connect: Connect, unique_name: Callable[[str], str], sql: str, cls: type, sqlstate: str
) -> None:
    conn = connect()
    table = unique_name("err")
    conn.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY)")
    conn.execute(f"INSERT INTO {table} VALUES (5)")
    conn.commit()
    with pytest.raises(cls) as caught:
        conn.execute(sql.format(t=table))
    assert caught.value.sqlstate == sqlstate


@pytest.mark.parametrize(
    ("sql", "near"),
    [
        ("SELEC 1", "selec"),
        ("SELECT * FROM {t} WHERE", "where"),
        ("SELECT 1 +", "1 +"),
        ("SELECT * FROM {t} LIMIT 'x'", None),  # found by MonetDB in the rewritten statement
    ],
)
def test_a_syntax_error_quotes_the_statement(
    connect: Connect, unique_name: Callable[[str], str], sql: str, near: str | None
) -> None:
    conn = connect()
    table = unique_name("syn")
    conn.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY)")
    statement = sql.format(t=table)
    with pytest.raises(tique.ProgrammingError) as caught:
        conn.execute(statement)
    message = str(caught.value)
    assert caught.value.sqlstate == "42000"
    assert "syntax error" in message and repr(statement) in message
    assert "prepare" not in message.lower() and "no such table" not in message
    if near:
        assert (
            f"at character {statement.lower().index(near) + len(near)} " in message and near in message.lower()
        )  # quoted as the user wrote it


def test_sqlglot_stays_quiet(connect: Connect, caplog: pytest.LogCaptureFixture) -> None:
    conn = connect()
    with caplog.at_level(logging.WARNING):
        conn.execute("SET ROLE monetdb")  # sqlglot reads it only as an opaque command: it used to warn on stderr
        with pytest.raises(tique.ProgrammingError):
            conn.execute("EXPLAIN SELEC 1")
    assert not [r for r in caplog.records if r.name.startswith("sqlglot")]
    with caplog.at_level(logging.WARNING):
        sqlglot.parse("SET ROLE monetdb", read="postgres")  # the application's own sqlglot still warns
    assert [r for r in caplog.records if r.name.startswith("sqlglot")]


def test_monetdb_syntax_sqlglot_cannot_read_is_not_a_missing_table(
    connect: Connect, unique_name: Callable[[str], str]
) -> None:
    """MonetDB's SAMPLE (which sqlglot cannot read) was once reported as "no such table"; it now runs over the
    snapshot (statements.py reads it around sqlglot)."""
    conn = connect()
    table = unique_name("sample")
    conn.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY)")
    conn.execute(f"INSERT INTO {table} VALUES (1), (2), (3)")
    cur = conn.cursor()
    cur.execute(f"SELECT * FROM {table} SAMPLE 1")  # the transaction's own rows: the snapshot, not the view
    assert len(cur.fetchall()) == 1
