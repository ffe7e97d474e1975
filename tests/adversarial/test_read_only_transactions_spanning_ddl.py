"""A read-only transaction writes no commit record, so the commit check that fails a writer overlapping another
session's DDL of a table it read never ran for it: a column swap by three RENAME COLUMNs (or DROP and ADD COLUMN)
between two of its reads made the second read the changed table - (1, 10, 100) read again as (1, 100, 10) - and
COMMIT succeeded (found by a review, across processes; the sessions here share one process, which runs the same
check). Such a transaction now fails at COMMIT with SerializationFailure, as a writer does."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

import tique

Connect = Callable[..., tique.Connection]


def _table(connect: Connect, name: str) -> None:
    conn = connect()
    conn.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, a INT, b INT)")
    conn.execute(f"INSERT INTO {name} VALUES (1, 10, 100), (2, 20, 200)")
    conn.commit()
    conn.close()


SWAP = ["RENAME COLUMN a TO tmp", "RENAME COLUMN b TO a", "RENAME COLUMN tmp TO b"]
READD = ["DROP COLUMN a", "ADD COLUMN a INT DEFAULT 5"]


def _alter_elsewhere(url: str, table: str, changes: list[str]) -> None:
    """The changes by a client in another process: this process's catalog learns of them at its next begin."""
    code = (
        "import sys, tique\n"
        "conn = tique.connect(sys.argv[1], autocommit=True)\n"
        "for change in sys.argv[3:]:\n"
        "    conn.execute(f'ALTER TABLE {sys.argv[2]} {change}')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, url, table, *changes], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("changes", [SWAP, READD], ids=["swap", "drop-add"])
def test_a_read_only_transaction_spanning_another_processs_ddl_fails_at_commit(
    server: Any, unique_name: Callable[[str], str], changes: list[str]
) -> None:
    t = unique_name("rod")
    conn = tique.connect(server.url)
    try:
        conn.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, a INT, b INT)")
        conn.execute(f"INSERT INTO {t} VALUES (1, 10, 100), (2, 20, 200)")
        conn.commit()
        assert conn.execute(f"SELECT SUM(a), SUM(b) FROM {t}").fetchall() == [(30, 300)]
        _alter_elsewhere(server.url, t, changes)
        conn.execute(f"SELECT SUM(a), SUM(b) FROM {t}").fetchall()  # read the changed table: (300, 30)
        with pytest.raises(tique.SerializationFailure, match="read-only transaction"):
            conn.commit()
        again = conn.execute(f"SELECT SUM(a), SUM(b) FROM {t}").fetchall()  # a new transaction, the new table
        conn.commit()
        assert again == ([(300, 30)] if changes is SWAP else [(10, 300)])
    finally:
        conn.close()


@pytest.mark.parametrize("changes", [SWAP, READD], ids=["swap", "drop-add"])
def test_in_one_process_the_read_after_the_ddl_fails(
    connect: Connect, unique_name: Callable[[str], str], changes: list[str]
) -> None:
    t = unique_name("rod")
    _table(connect, t)
    reader, other = connect(), connect()
    assert reader.execute(f"SELECT SUM(a), SUM(b) FROM {t}").fetchall() == [(30, 300)]
    for change in changes:
        other.execute(f"ALTER TABLE {t} {change}")
    with pytest.raises(tique.SerializationFailure):  # the process's catalog knows: at the read already
        reader.execute(f"SELECT SUM(a), SUM(b) FROM {t}").fetchall()
    reader.rollback()


def test_read_only_transactions_that_cannot_have_read_two_catalogs_commit(
    connect: Connect, unique_name: Callable[[str], str]
) -> None:
    t, u = unique_name("rod"), unique_name("rod")
    _table(connect, t)
    _table(connect, u)
    reader, other = connect(), connect()
    reader.execute(f"SELECT SUM(a) FROM {t}").fetchall()
    other.execute(f"ALTER TABLE {t} RENAME COLUMN b TO c")
    reader.commit()  # one read: one engine statement sees one catalog
    reader.execute(f"SELECT SUM(a) FROM {t}").fetchall()
    reader.execute(f"SELECT SUM(a) FROM {u}").fetchall()
    other.execute(f"ALTER TABLE {t} RENAME COLUMN c TO b")  # a table it read, but after both reads...
    other.execute(f"CREATE TABLE {unique_name('rod')} (k INT PRIMARY KEY)")
    with pytest.raises(tique.SerializationFailure):  # ...is still a DDL of it in its lifetime: conservative
        reader.commit()
    reader.execute(f"SELECT SUM(a) FROM {u}").fetchall()
    reader.execute(f"SELECT SUM(b) FROM {u}").fetchall()
    other.execute(f"ALTER TABLE {t} RENAME COLUMN b TO d")  # a table it did not read
    reader.commit()
