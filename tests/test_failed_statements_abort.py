"""A statement that fails inside a transaction aborts it, as MonetDB does under pymonetdb: the transaction can only
be rolled back, and a COMMIT after a caught error keeps nothing. tique let the transaction go on instead, so
code that caught the error and committed kept the statements before it: a script's earlier statements, the
chunks of a pandas to_sql before the failing one (found by a review). ``on_statement_error="continue"`` keeps
that behaviour for applications that want it."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

import tique

Connect = Callable[..., tique.Connection]


def _table(conn: tique.Connection, name: str) -> None:
    conn.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT)")
    conn.execute(f"INSERT INTO {name} VALUES (1, 1)")
    conn.commit()


def _keys(conn: tique.Connection, name: str) -> list[int]:
    keys = [r[0] for r in conn.execute(f"SELECT k FROM {name} ORDER BY k").fetchall()]
    conn.commit()
    return keys


FAILURES = {
    "duplicate key": "INSERT INTO {t} VALUES (1, 9)",
    "script failing at its second statement": "INSERT INTO {t} VALUES (60, 6); INSERT INTO {t} VALUES (1, 1)",
    "division by zero": "UPDATE {t} SET v = v / 0 WHERE k = 1",
    "syntax": "SELEC k FROM {t}",
    "no such column": "SELECT nope FROM {t}",
}


@pytest.mark.parametrize("failure", list(FAILURES), ids=list(FAILURES))
def test_a_failed_statement_aborts_the_transaction(
    connect: Connect, unique_name: Callable[[str], str], failure: str
) -> None:
    conn = connect()
    t = unique_name("ab")
    _table(conn, t)
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {t} VALUES (50, 5)")
    with pytest.raises(tique.DatabaseError):
        cur.execute(FAILURES[failure].format(t=t))
    with pytest.raises(tique.TransactionFailed, match="call rollback"):
        cur.execute(f"SELECT COUNT(*) FROM {t}")
    with pytest.raises(tique.TransactionFailed):
        conn.commit()
    conn.rollback()
    assert _keys(conn, t) == [1]  # nothing of the transaction
    cur.execute(f"INSERT INTO {t} VALUES (51, 5)")  # the next transaction is a new one
    conn.commit()
    assert _keys(conn, t) == [1, 51]


def test_executemany_failing_at_its_first_set_after_earlier_writes_aborts_too(
    connect: Connect, unique_name: Callable[[str], str]
) -> None:
    """pandas' to_sql with a chunksize: each chunk one executemany, the second failing at its first set."""
    conn = connect()
    t = unique_name("ab")
    _table(conn, t)
    cur = conn.cursor()
    cur.executemany(f"INSERT INTO {t} VALUES (%s, %s)", [(10, 1), (11, 1)])
    with pytest.raises(tique.IntegrityError):
        cur.executemany(f"INSERT INTO {t} VALUES (%s, %s)", [(1, 1), (12, 1)])
    with pytest.raises(tique.TransactionFailed):
        conn.commit()
    conn.rollback()
    assert _keys(conn, t) == [1]


def test_what_aborts_nothing(connect: Connect, unique_name: Callable[[str], str]) -> None:
    """A parameter list refused before anything is sent (pymonetdb refuses it in the client too), and a failed
    statement in autocommit mode, which is its own transaction."""
    conn = connect()
    t = unique_name("ab")
    _table(conn, t)
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {t} VALUES (%s, %s)", (20, 2))
    with pytest.raises(tique.ProgrammingError):
        cur.execute(f"INSERT INTO {t} VALUES (%s, %s)", (21,))  # one value for two placeholders
    conn.commit()
    assert _keys(conn, t) == [1, 20]
    auto = connect(autocommit=True)
    with pytest.raises(tique.IntegrityError):
        auto.execute(f"INSERT INTO {t} VALUES (1, 1)")
    auto.execute(f"INSERT INTO {t} VALUES (22, 2)")
    assert _keys(conn, t) == [1, 20, 22]


def test_continue_keeps_the_transaction_going(connect: Connect, unique_name: Callable[[str], str]) -> None:
    conn = connect(on_statement_error="continue")
    t = unique_name("ab")
    _table(conn, t)
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {t} VALUES (30, 3)")
    with pytest.raises(tique.IntegrityError):
        cur.execute(f"INSERT INTO {t} VALUES (1, 9)")
    cur.execute(f"INSERT INTO {t} VALUES (31, 3)")
    conn.commit()
    assert _keys(conn, t) == [1, 30, 31]


def test_a_commit_that_outlasts_the_lease_says_a_retry_would_too(
    connect: Connect, unique_name: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A COMMIT of a million rows took longer than the 60 s lease and failed with "its lease ran out, so the
    checkpointer may have folded what it read; retry it", though no checkpointer ran, and every retry failed the
    same way (found by a review). The error now says the COMMIT outlasted the lease and which setting to raise."""
    from tique.transaction import Transaction

    conn = connect(snapshot_lease_ms=300)
    t = unique_name("ab")
    _table(conn, t)
    conn.execute(f"INSERT INTO {t} VALUES (70, 7)")
    flush = Transaction.flush

    def slow_flush(self: Transaction, *args: object, **kwargs: object) -> object:
        time.sleep(0.6)  # as a flush of a million rows would take a minute
        return flush(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Transaction, "flush", slow_flush)
    with pytest.raises(tique.SerializationFailure, match="longer than the snapshot lease"):
        conn.commit()
    monkeypatch.undo()
    assert _keys(conn, t) == [1]
