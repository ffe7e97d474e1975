"""A statement that would open a transaction in the engine's session (SET TRANSACTION, START TRANSACTION behind a
comment) never does: tique handles it as it handles START TRANSACTION, so the session's COMMITs still go to the
engine as transactions of their own. (SET TRANSACTION went to MonetDB as it was and opened a transaction there:
embedded, every later COMMIT of the connection failed; over MAPI the next COMMIT's rows and record went into that
open transaction and were never committed, though COMMIT returned.)"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique

Connect = Callable[..., tique.Connection]

SPELLINGS = [
    "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
    "set local transaction read write;",
    "/* the ORM's */ START TRANSACTION",
    "-- a comment line\nSTART TRANSACTION",
    "/* a */ /* b */ BEGIN",
    "/* before */ COMMIT",
]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_commits_after_a_transaction_statement_reach_other_sessions(
    connect: Connect, unique_name: Callable[[str], str], spelling: str
) -> None:
    table = unique_name("txstmt")
    conn, other = connect(), connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {table} (k INT PRIMARY KEY, v INT)")
    conn.commit()
    cur.execute(spelling)
    for k in range(3):
        cur.execute(f"INSERT INTO {table} VALUES (%s, %s)", (k, k))
        conn.commit()
    o = other.cursor()
    o.execute(f"SELECT COUNT(*) FROM {table}")
    assert o.fetchone() == (3,), "every acknowledged COMMIT is visible to another session"
    other.commit()
    cur.execute(f"UPDATE {table} SET v = 10 WHERE k = 0")  # the session goes on as before
    conn.commit()
    o.execute(f"SELECT v FROM {table} WHERE k = 0")
    assert o.fetchone() == (10,)
    other.commit()
