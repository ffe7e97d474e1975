"""Priority mode: a long read-write transaction is not starved by a stream of short ones (section 2.3.4)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

import tique


@pytest.fixture
def contended(embedded_url: str, unique_name: Callable[[str], str]) -> tuple[str, threading.Event, threading.Thread]:
    """A table, and a short writer committing increments of key 1 every few milliseconds until stopped."""
    table = unique_name("prio")
    conn = tique.connect(embedded_url)
    conn.cursor().execute(f"CREATE TABLE {table} (k INT PRIMARY KEY, v INT)")
    conn.bulk_load(table, [(k, 0) for k in range(10)])
    conn.close()
    stop = threading.Event()

    def short_writer() -> None:
        c = tique.connect(embedded_url)
        while not stop.is_set():
            c.run(lambda x: x.cursor().execute(f"UPDATE {table} SET v = v + 1 WHERE k = 1"), retries=10_000)
            time.sleep(0.005)
        c.close()

    th = threading.Thread(target=short_writer)
    th.start()
    yield table, stop, th
    stop.set()
    th.join(30)


def long_transaction(table: str, attempts: list[int]) -> Callable[[tique.Connection], None]:
    def run(conn: tique.Connection) -> None:
        attempts.append(1)
        cur = conn.cursor()
        for k in range(10):
            cur.execute(f"UPDATE {table} SET v = v + 100 WHERE k = %s", (k,))
        time.sleep(0.3)  # long work: short transactions commit key 1 meanwhile

    return run


def test_without_priority_the_long_transaction_keeps_losing(embedded_url: str, contended) -> None:  # type: ignore[no-untyped-def]
    table, _, _ = contended
    attempts: list[int] = []
    conn = tique.connect(embedded_url)
    with pytest.raises(tique.SerializationFailure):
        conn.run(long_transaction(table, attempts), retries=3)
    conn.close()
    assert len(attempts) == 4


def test_with_priority_it_aborts_at_most_once(embedded_url: str, contended) -> None:  # type: ignore[no-untyped-def]
    table, stop, writer = contended
    attempts: list[int] = []
    conn = tique.connect(embedded_url)
    conn.run(long_transaction(table, attempts), retries=3, priority=True)
    assert len(attempts) <= 2
    stop.set()
    writer.join(30)
    conn.commit()
    cur = conn.cursor()
    cur.execute(f"SELECT v FROM {table} WHERE k = 2")
    assert cur.fetchone() == (100,)  # the long transaction's writes are there, once
    cur.execute(f"SELECT v FROM {table} WHERE k = 1")
    assert cur.fetchone()[0] >= 100  # and the short writer's increments kept theirs
    conn.close()  # its snapshot pin would hold the checkpointer's horizon back for later tests
