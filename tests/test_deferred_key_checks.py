"""Inserted keys still to check at COMMIT (insert_check='flush') are checked by the certification statement
(commit.publish_and_certify), one statement less per commit that inserts: a duplicate still fails the commit with
UniqueViolation naming the key and leaves nothing of the transaction; a key read as a string is still checked
before the rows are sent (append_guard.py keeps such reads from appends)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique
from tique import errors

Connect = Callable[..., tique.Connection]
Names = Callable[[str], str]


def _tables(conn: tique.Connection, unique_name: Names) -> tuple[str, str]:
    parent, child = unique_name("dk_orders"), unique_name("dk_lines")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {parent} (w INT, o INT, note VARCHAR(20), PRIMARY KEY (w, o))")
    cur.execute(f"CREATE TABLE {child} (w INT, o INT, n INT, info VARCHAR(20), PRIMARY KEY (w, o, n))")
    cur.execute(f"INSERT INTO {parent} VALUES (1, 1, 'first')")
    cur.execute(f"INSERT INTO {child} VALUES (1, 1, 1, 'line')")
    conn.commit()
    return parent, child


def _commit_statements(conn: tique.Connection) -> list[str]:
    sent: list[str] = []
    conn.statement_hooks.append(lambda sql, _s, _e: sent.append(sql))
    try:
        conn.commit()
    finally:
        conn.statement_hooks.pop()
    return sent


def test_new_keys_are_checked_by_the_certification_statement(connect: Connect, unique_name: Names) -> None:
    conn = connect(insert_check="flush")
    parent, child = _tables(conn, unique_name)
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {parent} VALUES (1, 2, 'second')")
    cur.executemany(f"INSERT INTO {child} VALUES (1, 2, %s, 'x')", [(n,) for n in range(1, 6)])
    sent = _commit_statements(conn)
    checks = [s for s in sent if "tq_n" in s]
    assert len(checks) == 1 and "tique.publish_own" in checks[0], sent  # no statement of its own
    cur.execute(f"SELECT COUNT(*) FROM {child} WHERE o = 2")
    assert cur.fetchone() == (5,)
    conn.commit()


@pytest.mark.parametrize("clash", ["parent", "child"])
def test_a_duplicate_found_at_commit_fails_it_naming_the_key_and_leaves_nothing(
    connect: Connect, unique_name: Names, clash: str
) -> None:
    conn = connect(insert_check="flush")
    parent, child = _tables(conn, unique_name)
    cur = conn.cursor()
    o = 1 if clash == "parent" else 2
    cur.execute(f"INSERT INTO {parent} VALUES (1, {o}, 'again')" if clash == "parent" else
                f"INSERT INTO {parent} VALUES (1, 2, 'second')")  # fmt: skip
    cur.execute(f"INSERT INTO {child} VALUES (1, 1, 1, 'again')" if clash == "child" else
                f"INSERT INTO {child} VALUES (1, 3, 1, 'new')")  # fmt: skip
    with pytest.raises(errors.UniqueViolation) as found:
        conn.commit()
    assert (parent if clash == "parent" else child) in str(found.value) and "w=1, o=1" in str(found.value)
    other = connect()
    read = other.cursor()
    read.execute(f"SELECT w, o, note FROM {parent} ORDER BY o")
    assert read.fetchall() == [(1, 1, "first")]
    read.execute(f"SELECT w, o, n, info FROM {child} ORDER BY o, n")
    assert read.fetchall() == [(1, 1, 1, "line")]
    other.commit()
    # its record was settled as aborted at once: the next commit is not held back behind it
    cur.execute(f"INSERT INTO {parent} VALUES (1, 7, 'after')")
    conn.commit()
    read.execute(f"SELECT note FROM {parent} WHERE o = 7")
    assert read.fetchall() == [("after",)]
    other.commit()


def test_a_key_committed_by_a_concurrent_transaction_is_a_serialization_failure(
    connect: Connect, unique_name: Names
) -> None:
    """Not in the snapshot, so not a duplicate of it: certification finds the write-write conflict."""
    conn = connect(insert_check="flush")
    parent, _ = _tables(conn, unique_name)
    cur = conn.cursor()
    cur.execute(f"SELECT COUNT(*) FROM {parent}")  # the snapshot is taken
    other = connect()
    other.cursor().execute(f"INSERT INTO {parent} VALUES (1, 5, 'other')")
    other.commit()
    cur.execute(f"INSERT INTO {parent} VALUES (1, 5, 'mine')")
    with pytest.raises(errors.SerializationFailure):
        conn.commit()
    cur.execute(f"SELECT note FROM {parent} WHERE o = 5")
    assert cur.fetchall() == [("other",)]
    conn.commit()


def test_a_string_key_is_checked_before_its_rows_are_sent(connect: Connect, unique_name: Names) -> None:
    conn = connect(insert_check="flush")
    name = unique_name("dk_named")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} (k VARCHAR(10) PRIMARY KEY, v INT)")
    cur.execute(f"INSERT INTO {name} VALUES ('a', 1)")
    conn.commit()
    cur.execute(f"INSERT INTO {name} VALUES ('b', 2)")
    sent = _commit_statements(conn)
    check = next(i for i, s in enumerate(sent) if "tq_dup" in s)
    record = next(i for i, s in enumerate(sent) if "tique.record_cts" in s)
    assert check < record, sent
    cur.execute(f"INSERT INTO {name} VALUES ('a', 3)")
    with pytest.raises(errors.UniqueViolation, match="'a'"):
        conn.commit()
    cur.execute(f"SELECT k, v FROM {name} ORDER BY k")
    assert cur.fetchall() == [("a", 1), ("b", 2)]
    conn.commit()
