"""Snapshot Isolation, anomaly by anomaly, on both adapters (embedded and over tique serve)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique
from tique.errors import SerializationFailure

Connect = Callable[..., tique.Connection]
Names = Callable[[str], str]


@pytest.fixture
def accounts(connect: Connect, unique_name: Names) -> str:
    """A table of two accounts with 100 each, committed."""
    name = unique_name("acct")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, balance INT NOT NULL)")
    cur.execute(f"INSERT INTO {name} VALUES (1, 100), (2, 100)")
    conn.commit()
    return name


def value(conn: tique.Connection, sql: str, params: object = None) -> object:
    cur = conn.cursor()
    cur.execute(sql, params)
    row = cur.fetchone()
    return None if row is None else row[0]


def test_no_dirty_read(connect: Connect, accounts: str) -> None:
    writer, reader = connect(), connect()
    writer.cursor().execute(f"UPDATE {accounts} SET balance = 0 WHERE id = 1")
    writer.cursor().execute(f"SELECT balance FROM {accounts} WHERE id = 1")  # flushes the write to the engine
    assert value(reader, f"SELECT balance FROM {accounts} WHERE id = 1") == 100
    writer.rollback()
    reader.commit()
    assert value(reader, f"SELECT balance FROM {accounts} WHERE id = 1") == 100


def test_no_non_repeatable_read(connect: Connect, accounts: str) -> None:
    reader, writer = connect(), connect()
    assert value(reader, f"SELECT balance FROM {accounts} WHERE id = 1") == 100
    writer.cursor().execute(f"UPDATE {accounts} SET balance = 50 WHERE id = 1")
    writer.commit()
    assert value(reader, f"SELECT balance FROM {accounts} WHERE id = 1") == 100  # same snapshot
    reader.commit()
    assert value(reader, f"SELECT balance FROM {accounts} WHERE id = 1") == 50  # a new one


def test_no_phantom(connect: Connect, accounts: str) -> None:
    reader, writer = connect(), connect()
    assert value(reader, f"SELECT COUNT(*) FROM {accounts} WHERE balance >= 0") == 2
    writer.cursor().execute(f"INSERT INTO {accounts} VALUES (3, 10)")
    writer.commit()
    assert value(reader, f"SELECT COUNT(*) FROM {accounts} WHERE balance >= 0") == 2
    assert value(reader, f"SELECT SUM(balance) FROM {accounts}") == 200


def test_lost_update_prevented(connect: Connect, accounts: str) -> None:
    a, b = connect(), connect()
    assert value(a, f"SELECT balance FROM {accounts} WHERE id = 1") == 100
    assert value(b, f"SELECT balance FROM {accounts} WHERE id = 1") == 100
    a.cursor().execute(f"UPDATE {accounts} SET balance = balance + 10 WHERE id = 1")
    b.cursor().execute(f"UPDATE {accounts} SET balance = balance + 20 WHERE id = 1")
    a.commit()
    with pytest.raises(SerializationFailure) as info:
        b.commit()
    assert info.value.sqlstate == "40001" and "safe to retry" in str(info.value)
    assert isinstance(info.value, tique.OperationalError)
    assert value(connect(), f"SELECT balance FROM {accounts} WHERE id = 1") == 110


def test_write_skew_is_allowed_as_snapshot_isolation_permits(connect: Connect, accounts: str) -> None:
    # Both check that the total stays >= 100 and each withdraws from a different account: under SI both
    # commit (disjoint write-sets), and the invariant breaks. Serializability would forbid this.
    a, b = connect(), connect()
    for conn, account in ((a, 1), (b, 2)):
        total = value(conn, f"SELECT SUM(balance) FROM {accounts}")
        assert total == 200
        conn.cursor().execute(f"UPDATE {accounts} SET balance = balance - 100 WHERE id = %s", (account,))
    a.commit()
    b.commit()
    assert value(connect(), f"SELECT SUM(balance) FROM {accounts}") == 0


def test_read_your_own_writes_in_buffered_mode(connect: Connect, accounts: str) -> None:
    conn = connect(write_mode="buffered")
    cur = conn.cursor()
    cur.execute(f"UPDATE {accounts} SET balance = 1 WHERE id = 1")
    cur.execute(f"INSERT INTO {accounts} VALUES (7, 70)")
    cur.execute(f"DELETE FROM {accounts} WHERE id = 2")
    cur.execute(f"SELECT id, balance FROM {accounts} ORDER BY id")
    assert cur.fetchall() == [(1, 1), (7, 70)]
    other = conn.cursor()  # a second cursor shares the transaction
    other.execute(f"SELECT SUM(balance) FROM {accounts}")
    assert other.fetchone() == (71,)
    conn.rollback()


def test_rollback_leaves_nothing(connect: Connect, accounts: str) -> None:
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {accounts} VALUES (5, 5)")
    cur.execute(f"UPDATE {accounts} SET balance = 0")
    cur.execute(f"SELECT COUNT(*) FROM {accounts}")  # flushed: provisional rows are in the Cache now
    conn.rollback()
    assert value(conn, f"SELECT SUM(balance) FROM {accounts}") == 200
    assert value(connect(), f"SELECT COUNT(*) FROM {accounts}") == 2


def test_close_rolls_back(connect: Connect, accounts: str) -> None:
    conn = connect()
    conn.cursor().execute(f"UPDATE {accounts} SET balance = 0 WHERE id = 1")
    conn.close()
    assert value(connect(), f"SELECT balance FROM {accounts} WHERE id = 1") == 100


def test_concurrent_inserts_of_one_key_cannot_both_commit(connect: Connect, accounts: str) -> None:
    a, b = connect(), connect()
    a.cursor().execute(f"INSERT INTO {accounts} VALUES (9, 1)")
    b.cursor().execute(f"INSERT INTO {accounts} VALUES (9, 2)")
    a.commit()
    with pytest.raises(SerializationFailure):
        b.commit()
    assert value(connect(), f"SELECT balance FROM {accounts} WHERE id = 9") == 1


def test_first_committer_wins_even_on_disjoint_statements(connect: Connect, accounts: str) -> None:
    # a delete and an update of the same row conflict
    a, b = connect(), connect()
    a.cursor().execute(f"DELETE FROM {accounts} WHERE id = 2")
    b.cursor().execute(f"UPDATE {accounts} SET balance = 0 WHERE id = 2")
    b.commit()
    with pytest.raises(SerializationFailure):
        a.commit()
    assert value(connect(), f"SELECT balance FROM {accounts} WHERE id = 2") == 0


def test_read_only_transaction_writes_no_metadata(connect: Connect, accounts: str) -> None:
    conn = connect()
    before = value(conn, "SELECT COUNT(*) FROM tique.commits")
    conn.commit()
    value(conn, f"SELECT * FROM {accounts}")
    conn.commit()
    assert value(conn, "SELECT COUNT(*) FROM tique.commits") == before
    assert conn.last_commit is not None and conn.last_commit.cts is None


def test_session_sees_its_own_commits(connect: Connect, accounts: str) -> None:
    conn = connect()
    for i in range(5):
        conn.cursor().execute(f"UPDATE {accounts} SET balance = %s WHERE id = 1", (i,))
        conn.commit()
        assert value(conn, f"SELECT balance FROM {accounts} WHERE id = 1") == i
        conn.commit()


def test_run_retries_serialization_failures(connect: Connect, accounts: str) -> None:
    a, b = connect(), connect()
    attempts = []

    def transfer(conn: tique.Connection) -> int:
        attempts.append(1)
        bal = value(conn, f"SELECT balance FROM {accounts} WHERE id = 1")
        if len(attempts) == 1:  # a competitor commits in between, once
            b.cursor().execute(f"UPDATE {accounts} SET balance = balance + 1 WHERE id = 1")
            b.commit()
        conn.cursor().execute(f"UPDATE {accounts} SET balance = %s WHERE id = 1", (int(bal) - 10,))  # type: ignore[call-overload]
        return int(bal)  # type: ignore[call-overload]

    assert a.run(transfer) == 101
    assert len(attempts) == 2
    assert value(connect(), f"SELECT balance FROM {accounts} WHERE id = 1") == 91
