"""Analytical reads and large results: analytical reads are sent as text every time (MonetDB's prepared plans
for joins ran slower than the plans it makes for the text), and a large result is built with Python's collector
paused (tique/gc_paused.py), which is left as the application had it."""

from __future__ import annotations

import datetime
import gc
import os
import threading
from collections.abc import Callable, Iterator

import pytest

import tique
from tique import gc_paused
from tique.rewrite import exact

Connect = Callable[..., tique.Connection]
ROWS = 3000  # above gc_paused.LARGE_RESULT_ROWS


@pytest.fixture
def table(connect: Connect, unique_name: Callable[[str], str]) -> str:
    name = unique_name("large")
    conn = connect()
    conn.cursor().execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, ts TIMESTAMP, c CHAR(4))")
    conn.commit()
    start = datetime.datetime(2020, 1, 1)
    conn.bulk_load(name, [(i, start + datetime.timedelta(seconds=i), "ab") for i in range(ROWS)])
    return name


@pytest.fixture
def statements(connect: Connect) -> Iterator[tuple[tique.Connection, list[str]]]:
    conn = connect()
    sent: list[str] = []
    conn._raw.hooks.append(lambda sql, _elapsed, _error: sent.append(sql))  # the analytical session shares them
    yield conn, sent


def test_analytical_reads_are_sent_as_text_and_key_reads_prepared(
    statements: tuple[tique.Connection, list[str]], table: str
) -> None:
    conn, sent = statements
    cur = conn.cursor()
    for _ in range(4):
        cur.execute(f"SELECT c, COUNT(*) FROM {table} WHERE k >= %s GROUP BY c", (10,))
        assert cur.fetchall() == [("ab", ROWS - 10)]
        conn.commit()
    # every run as text (embedded, one PREPARE of the same text too: the result's types are asked once)
    texts = [s for s in sent if "COUNT(*)" in s.upper() and not s.lstrip().upper().startswith("PREPARE")]
    assert len(texts) == 4, sent
    sent.clear()
    for k in range(4):
        cur.execute(f"SELECT ts FROM {table} WHERE k = %s", (k,))
        assert cur.fetchall() == [(datetime.datetime(2020, 1, 1) + datetime.timedelta(seconds=k),)]
        conn.commit()
    assert any(s.lstrip().upper().startswith("EXEC") for s in sent), sent  # key reads are still prepared


def test_a_large_result_is_decoded_with_the_collector_paused_and_left_as_it_was(
    connect: Connect, table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    decoded = exact._decoded

    def watched(result: object, plan: object) -> object:
        seen.append(gc.isenabled())
        return decoded(result, plan)  # type: ignore[arg-type]

    monkeypatch.setattr(exact, "_decoded", watched)
    conn = connect()
    cur = conn.cursor()
    expected = [(datetime.datetime(2020, 1, 1) + datetime.timedelta(seconds=i),) for i in range(ROWS)]
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            seen.clear()
            cur.execute(f"SELECT ts FROM {table} ORDER BY k")
            assert cur.fetchall() == expected  # the TIMESTAMPs read as text and decoded
            conn.commit()
            assert seen == [False]  # paused while the rows were built
            assert gc.isenabled() is enabled  # and as the application had it afterwards
        finally:
            gc.enable()


def test_the_pause_is_lifted_by_the_last_thread_out() -> None:
    assert gc.isenabled()
    inside, release = threading.Barrier(3), threading.Event()
    after_first: list[bool] = []

    def hold(wait: bool) -> None:
        with gc_paused.paused(gc_paused.LARGE_RESULT_ROWS):
            inside.wait()
            if wait:
                release.wait(10)

    long = threading.Thread(target=hold, args=(True,))
    short = threading.Thread(target=hold, args=(False,))
    long.start()
    short.start()
    inside.wait()
    short.join(10)
    after_first.append(gc.isenabled())
    release.set()
    long.join(10)
    assert after_first == [False]  # one thread still building: still paused
    assert gc.isenabled()
    with gc_paused.paused(gc_paused.LARGE_RESULT_ROWS - 1):
        assert gc.isenabled()  # a small result: nothing paused


def test_a_child_forked_during_a_pause_starts_with_the_collector_running() -> None:
    """The thread holding the pause is not in a forked child: nothing there would lift it."""
    inside, release = threading.Event(), threading.Event()

    def hold() -> None:
        with gc_paused.paused(gc_paused.LARGE_RESULT_ROWS):
            inside.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert inside.wait(10)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child
            with gc_paused.paused(gc_paused.LARGE_RESULT_ROWS):
                pass
            os.write(write, b"1" if gc.isenabled() else b"0")
            os._exit(0)
        os.close(write)
        answer = os.read(read, 1)
        os.close(read)
        os.waitpid(pid, 0)
    finally:
        release.set()
        holder.join(10)
    assert answer == b"1"
    assert gc.isenabled()


def test_only_building_rows_is_paused_not_the_engines_hand_over(
    connect: Connect, table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large column's hand-over lets other threads run (and make garbage): the collector runs meanwhile."""
    from tique.engine import monetdbe_values

    fetched: list[bool] = []
    fetch = monetdbe_values.fetch_column

    def watched(*args: object) -> object:
        fetched.append(gc.isenabled())
        return fetch(*args)

    monkeypatch.setattr(monetdbe_values, "fetch_column", watched)
    conn = connect()
    if conn.db.url.kind != "embedded":
        pytest.skip("the embedded kernel's hand-over")
    cur = conn.cursor()
    cur.execute(f"SELECT k, ts FROM {table} ORDER BY k")
    assert len(cur.fetchall()) == ROWS
    assert fetched and all(fetched)
