"""Transaction control statements, in every spelling MonetDB or SQL accepts, end tique's transaction.

COMMIT/END [WORK|TRANSACTION] [AND [NO] CHAIN] commit it; ROLLBACK/ABORT [...] roll it back; AND CHAIN starts
the next transaction at once. Savepoints are refused with NotSupportedError that quotes the statement as the
user wrote it, and the refusal leaves the transaction as it was.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique
from tique.errors import NotSupportedError

Names = Callable[[str], str]
Connect = Callable[..., tique.Connection]

ROLLBACKS = [
    "ROLLBACK AND NO CHAIN",
    "ROLLBACK WORK AND NO CHAIN",
    "rollback transaction and no chain;",
    "ROLLBACK WORK",
    "ABORT",
    "ABORT WORK",
]
COMMITS = ["COMMIT AND NO CHAIN", "COMMIT WORK AND NO CHAIN", "COMMIT WORK", "END", "END TRANSACTION", "commit;"]
SAVEPOINTS = [
    "SAVEPOINT sp1",
    "RELEASE SAVEPOINT sp1",
    "RELEASE sp1",
    "ROLLBACK TO SAVEPOINT sp1",
    "ROLLBACK TO sp1",
    "ROLLBACK WORK TO SAVEPOINT sp1",
]


@pytest.fixture
def table(connect: Connect, unique_name: Names) -> str:
    name = unique_name("ctl")
    conn = connect()
    conn.cursor().execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT)")
    conn.commit()
    return name


def keys(connect: Connect, table: str) -> list[int]:
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"SELECT k FROM {table} ORDER BY k")
    found = [int(r[0]) for r in cur.fetchall()]
    conn.close()
    return found


@pytest.mark.parametrize("statement", ROLLBACKS)
def test_rollback_forms_roll_back(connect: Connect, table: str, statement: str) -> None:
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {table} VALUES (1, 1)")
    cur.execute(statement)
    assert not conn.in_transaction
    cur.execute(f"INSERT INTO {table} VALUES (2, 2)")
    conn.commit()  # commits the second transaction only
    assert keys(connect, table) == [2]


@pytest.mark.parametrize("statement", COMMITS)
def test_commit_forms_commit(connect: Connect, table: str, statement: str) -> None:
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {table} VALUES (1, 1)")
    cur.execute(statement)
    assert not conn.in_transaction
    assert keys(connect, table) == [1]  # visible to others without another commit()
    cur.execute(f"INSERT INTO {table} VALUES (2, 2)")
    conn.rollback()
    assert keys(connect, table) == [1]


def test_commit_and_chain_starts_the_next_transaction(connect: Connect, table: str) -> None:
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {table} VALUES (1, 1)")
    cur.execute("COMMIT AND CHAIN")
    assert keys(connect, table) == [1]
    assert conn.in_transaction  # the chained transaction runs, and sees the commit
    other = connect()
    other.cursor().execute(f"INSERT INTO {table} VALUES (3, 3)")
    other.commit()
    cur.execute(f"SELECT k FROM {table} ORDER BY k")
    assert cur.fetchall() == [(1,)]  # its snapshot was taken at the chained begin
    cur.execute(f"INSERT INTO {table} VALUES (2, 2)")
    cur.execute("ROLLBACK WORK AND CHAIN")
    assert conn.in_transaction
    cur.execute(f"SELECT k FROM {table} ORDER BY k")
    assert cur.fetchall() == [(1,), (3,)]
    conn.commit()
    assert keys(connect, table) == [1, 3]


@pytest.mark.parametrize("statement", SAVEPOINTS)
def test_savepoints_are_refused_in_the_users_words(connect: Connect, table: str, statement: str) -> None:
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {table} VALUES (1, 1)")
    with pytest.raises(NotSupportedError) as info:
        cur.execute(statement)
    assert statement in str(info.value)
    assert conn.in_transaction
    conn.commit()  # the refusal changed nothing: the insert commits
    assert keys(connect, table) == [1]
