"""With autocommit on, START TRANSACTION opens a transaction that lasts until COMMIT or ROLLBACK, as MonetDB and
pymonetdb keep it: tique committed each statement anyway, so ROLLBACK undid nothing and other sessions saw the rows
at once (found by a pymonetdb parity review)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique

Connect = Callable[..., tique.Connection]


def count(conn: tique.Connection, table: str) -> int:
    return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


@pytest.mark.parametrize("begin", ["START TRANSACTION", "BEGIN", "BEGIN TRANSACTION"])
def test_a_block_in_autocommit_mode_lasts_until_its_end(
    connect: Connect, unique_name: Callable[[str], str], begin: str
) -> None:
    conn, other = connect(autocommit=True, on_statement_error="continue"), connect(autocommit=True)
    t = unique_name("blk")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY)")
    cur.execute(begin)
    cur.execute(f"INSERT INTO {t} VALUES (1)")
    assert count(other, t) == 0  # not committed yet
    with pytest.raises(tique.IntegrityError):
        cur.execute(f"INSERT INTO {t} VALUES (1)")  # a failed statement leaves the block open
    cur.execute(f"INSERT INTO {t} VALUES (2)")
    assert count(conn, t) == 2 and count(other, t) == 0
    cur.execute("ROLLBACK")
    assert count(conn, t) == 0 and count(other, t) == 0
    cur.execute(begin)
    cur.execute(f"INSERT INTO {t} VALUES (3)")
    cur.execute("COMMIT AND CHAIN")  # commits, and the next transaction is a block too
    cur.execute(f"INSERT INTO {t} VALUES (4)")
    assert count(other, t) == 1
    conn.rollback()  # the DB-API call ends it as ROLLBACK does
    cur.execute(f"INSERT INTO {t} VALUES (5)")  # autocommit again
    assert sorted(r[0] for r in other.execute(f"SELECT k FROM {t}").fetchall()) == [3, 5]


def test_switching_autocommit_on_inside_a_block_commits_it(connect: Connect, unique_name: Callable[[str], str]) -> None:
    """As MonetDB does; tique ended the block and left its transaction open (found by a review)."""
    conn, other = connect(autocommit=True), connect(autocommit=True)
    t = unique_name("blk")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY)")
    cur.execute("START TRANSACTION")
    cur.execute(f"INSERT INTO {t} VALUES (1)")
    conn.set_autocommit(True)
    assert count(other, t) == 1


def test_a_read_only_transaction_is_refused_as_monetdb_refuses_it(connect: Connect) -> None:
    """tique began it and let it write (found by a review)."""
    conn = connect(autocommit=True)
    with pytest.raises(tique.NotSupportedError, match="read-only"):
        conn.cursor().execute("START TRANSACTION READ ONLY")
    with pytest.raises(tique.NotSupportedError, match="read-only"):
        conn.cursor().execute("SET TRANSACTION READ ONLY")
    assert conn.cursor().execute("START TRANSACTION READ WRITE") is None
    conn.rollback()
