"""Each of tique's own conditions reaches the application with its SQLSTATE (``exc.sqlstate``) and its class
from the registry in tique.errors, so code can tell them apart without reading messages: a transaction that can
only roll back (TQ001), a commit whose outcome is unknown (TQ002), a lease that ran out (TQ003, a
SerializationFailure), tique's constraint checks (23505, 23503, 23502) and a lost connection (08006)."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import tique
from tests.conftest import start_serve
from tique import errors
from tique.transaction import Transaction

Connect = Callable[..., tique.Connection]
Names = Callable[[str], str]


def table_with_row(conn: tique.Connection, name: str) -> str:
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT NOT NULL)")
    cur.execute(f"INSERT INTO {name} VALUES (1, 10)")
    conn.commit()
    return name


def test_a_transaction_that_can_only_roll_back_says_tq001(connect: Connect, unique_name: Names) -> None:
    conn = connect(insert_check="flush")  # the duplicate is found when the rows are sent, after INSERT returned
    table = table_with_row(conn, unique_name("tq1"))
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {table} VALUES (1, 11)")
    with pytest.raises(errors.UniqueViolation) as duplicate:
        cur.execute(f"SELECT v FROM {table}")
    assert duplicate.value.sqlstate == "23505"
    with pytest.raises(errors.TransactionFailed) as failed:
        cur.execute(f"SELECT COUNT(*) FROM {table}")
    assert failed.value.sqlstate == "TQ001" and isinstance(failed.value, tique.InterfaceError)
    conn.rollback()
    cur.execute(f"SELECT v FROM {table}")
    assert cur.fetchall() == [(10,)]


def test_an_unknown_commit_outcome_says_tq002(
    connect: Connect, unique_name: Names, hooks: list[Callable[[str, Transaction], None]]
) -> None:
    conn = connect(on_statement_error="continue")
    table = table_with_row(conn, unique_name("tq2"))
    conn.cursor().execute(f"UPDATE {table} SET v = 12 WHERE k = 1")
    target = conn.transaction()

    def fail(step: str, txn: Transaction) -> None:
        if step == "advanced" and txn is target:
            raise RuntimeError("a bug after the commit point")

    hooks.append(fail)
    with pytest.raises(errors.CommitOutcomeUnknown) as unknown:
        conn.commit()
    hooks.clear()
    assert unknown.value.sqlstate == "TQ002" and isinstance(unknown.value, tique.OperationalError)
    cur = conn.cursor()
    cur.execute(f"SELECT v FROM {table}")
    assert cur.fetchall() == [(12,)]  # past the commit point: committed, as the error says


def test_a_lease_that_ran_out_says_tq003(connect: Connect, unique_name: Names) -> None:
    table = table_with_row(connect(), unique_name("tq3"))
    conn = connect(snapshot_lease_ms=200)
    cur = conn.cursor()
    cur.execute(f"SELECT v FROM {table}")
    time.sleep(0.6)  # idle past the lease
    with pytest.raises(errors.LeaseExpired) as expired:
        cur.execute(f"SELECT v FROM {table}")
    assert expired.value.sqlstate == "TQ003"
    assert isinstance(expired.value, tique.SerializationFailure)  # safe to retry, as Connection.run does
    conn.rollback()
    cur.execute(f"SELECT v FROM {table}")
    assert cur.fetchall() == [(10,)]


def test_constraint_checks_say_their_codes(connect: Connect, unique_name: Names) -> None:
    conn = connect(on_statement_error="continue")
    parent = table_with_row(conn, unique_name("tqp"))
    child = unique_name("tqc")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {child} (id INT PRIMARY KEY, p INT REFERENCES {parent} (k))")
    conn.commit()
    cases: list[tuple[str, type[errors.IntegrityError], str]] = [
        (f"INSERT INTO {parent} VALUES (1, 0)", errors.UniqueViolation, "23505"),
        (f"INSERT INTO {parent} VALUES (2, NULL)", errors.NotNullViolation, "23502"),
        (f"INSERT INTO {child} VALUES (1, 99)", errors.ForeignKeyViolation, "23503"),
    ]
    for sql, cls, code in cases:
        with pytest.raises(cls) as refused:
            cur.execute(sql)
        assert refused.value.sqlstate == code, sql
    conn.commit()  # each refused statement left nothing behind: the transaction goes on


def test_a_lost_connection_says_08006(tmp_path: Path) -> None:
    server = start_serve(tmp_path / "db")
    try:
        conn = tique.connect(server.url)
        cur = conn.cursor()
        cur.execute("SELECT 1")
        server.stop(signal.SIGKILL)
        with pytest.raises(errors.ConnectionFailure) as lost:
            cur.execute("SELECT 2")
        assert lost.value.sqlstate == "08006" and isinstance(lost.value, tique.OperationalError)
    finally:
        server.stop()
