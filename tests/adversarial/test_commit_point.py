"""Once COMMIT has recorded a committed outcome, the transaction is committed, and the caller must hear so.

After that point commit() returns (or, for a lost connection, may raise CommitOutcomeUnknown); it never raises
an error that reads as "not committed", which a caller (or a retry loop) would answer by running the
transaction again. The session's next transaction sees the commit. Earlier committers are held with a step
hook: there is no other way to keep a commit between two of its steps.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

import tique
from tests.pauses import Pause
from tique.errors import OperationalError, SerializationFailure
from tique.settings import COMMIT_LEASE_MS
from tique.transaction import Transaction

Names = Callable[[str], str]


@pytest.fixture
def table(embedded_url: str, unique_name: Names) -> str:
    name = unique_name("cpoint")
    conn = tique.connect(embedded_url)
    conn.cursor().execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT)")
    conn.cursor().executemany(f"INSERT INTO {name} VALUES (%s, 0)", [(1,), (2,)])
    conn.commit()
    conn.close()
    return name


def value(url: str, table: str, k: int) -> int:
    conn = tique.connect(url)
    cur = conn.cursor()
    cur.execute(f"SELECT v FROM {table} WHERE k = %s", (k,))
    (v,) = cur.fetchone()  # type: ignore[misc]
    conn.close()
    return int(v)


def test_visibility_time_out_after_the_commit_point_is_a_success(
    embedded_url: str, table: str, hooks: list[Callable[[str, Transaction], None]]
) -> None:
    """An earlier committer holds the snapshot back for longer than advance_timeout_ms (but less than the
    lease): the later commit is durable, so conn.run returns once and the next transaction sees it."""
    slow = tique.connect(embedded_url, lease_ms=10000)  # held for over a second: longer than the default lease
    fast = tique.connect(embedded_url, advance_timeout_ms=300)
    try:
        slow.cursor().execute(f"UPDATE {table} SET v = v + 1 WHERE k = 1")
        pause = Pause("published", slow)
        hooks.append(pause)
        slow_done: dict[str, object] = {}
        th = threading.Thread(target=lambda: slow_done.setdefault("r", slow.commit()))
        th.start()
        assert pause.reached.wait(30)
        runs = []

        def bump(conn: tique.Connection) -> None:
            runs.append(1)
            conn.cursor().execute(f"UPDATE {table} SET v = v + 1 WHERE k = 2")

        fast.run(bump)  # must not raise: its committed outcome is recorded before it waits to become visible
        assert len(runs) == 1
        assert fast.last_commit is not None and fast.last_commit.committed
        # the session's next transaction waits for its own commit rather than failing after advance_timeout_ms
        releaser = threading.Timer(1.0, pause.release.set)
        releaser.start()
        cur = fast.cursor()
        cur.execute(f"SELECT v FROM {table} WHERE k = 2")
        assert cur.fetchone() == (1,)
        fast.commit()
        releaser.join()
        th.join(30)
        assert not th.is_alive()
    finally:
        pause.release.set()
        slow.close()
        fast.close()
        tique.connect(embedded_url, lease_ms=COMMIT_LEASE_MS).close()  # the lease is the database's
    assert value(embedded_url, table, 2) == 1, "the commit was applied other than exactly once"
    assert value(embedded_url, table, 1) == 1


@pytest.mark.parametrize("error", [OperationalError, KeyboardInterrupt])
def test_an_error_after_the_commit_point_does_not_abort_the_commit(
    embedded_url: str, table: str, hooks: list[Callable[[str, Transaction], None]], error: type[BaseException]
) -> None:
    """Something fails right after the committed outcome is written (here a hook raises at "decided"). The
    commit stands: a concurrent writer of the same row must lose certification, and the session sees it."""
    writer = tique.connect(embedded_url)
    rival = tique.connect(embedded_url)
    try:
        rival.cursor().execute(f"SELECT v FROM {table} WHERE k = 1")  # rival's snapshot: before writer commits
        writer.cursor().execute(f"UPDATE {table} SET v = 10 WHERE k = 1")
        target = writer.transaction()

        def fail(step: str, txn: Transaction) -> None:
            if step == "decided" and txn is target:
                raise error("failure after the commit point")

        hooks.append(fail)
        if error is KeyboardInterrupt:
            with pytest.raises(KeyboardInterrupt):  # an interrupt still interrupts, but the commit is recorded
                writer.commit()
        else:
            writer.commit()  # the outcome is durable: a success
        hooks.clear()
        assert writer.last_commit is not None and writer.last_commit.committed
        cur = writer.cursor()
        cur.execute(f"SELECT v FROM {table} WHERE k = 1")
        assert cur.fetchone() == (10,), "the session does not see its own commit"
        writer.commit()
        rival.cursor().execute(f"UPDATE {table} SET v = 20 WHERE k = 1")
        with pytest.raises(SerializationFailure):
            rival.commit()
    finally:
        writer.close()
        rival.close()
    assert value(embedded_url, table, 1) == 10


def test_an_interrupt_before_the_commit_point_aborts_at_once(
    embedded_url: str, table: str, hooks: list[Callable[[str, Transaction], None]]
) -> None:
    """Ctrl-C after the commit record is written but before the outcome: the transaction is aborted there and
    then, so later committers do not wait for its lease (they would time out after publish_timeout_ms)."""
    interrupted = tique.connect(embedded_url)
    later = tique.connect(embedded_url, publish_timeout_ms=2000)
    try:
        interrupted.cursor().execute(f"UPDATE {table} SET v = 10 WHERE k = 1")
        target = interrupted.transaction()

        def interrupt(step: str, txn: Transaction) -> None:
            if step == "recorded" and txn is target:
                raise KeyboardInterrupt

        hooks.append(interrupt)
        with pytest.raises(KeyboardInterrupt):
            interrupted.commit()
        hooks.clear()
        assert interrupted.last_commit is None  # it did not commit
        later.cursor().execute(f"UPDATE {table} SET v = v + 1 WHERE k = 2")
        later.commit()  # not held up by the interrupted commit's timestamp
    finally:
        interrupted.close()
        later.close()
    assert value(embedded_url, table, 1) == 0
    assert value(embedded_url, table, 2) == 1
