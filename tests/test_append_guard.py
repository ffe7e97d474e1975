"""AppendGuard (tique/append_guard.py): a read an append to its tables overlapped runs again; after RERUNS such
runs it holds appends back for one run, and lets them go whatever the run does.
The engine race it keeps reads from is measured by benchmarks/string_race.py (tests/test_smoke_scripts.py)."""

from __future__ import annotations

import threading
import time

import tique
from tique.append_guard import RERUNS, AppendGuard
from tique.database import Database


def _in_thread(fn) -> threading.Thread:  # type: ignore[no-untyped-def]
    thread = threading.Thread(target=fn)
    thread.start()
    return thread


def test_a_read_no_append_overlaps_runs_once() -> None:
    guard = AppendGuard()
    runs = []
    with guard.appending(["other"]):
        assert guard.reading(["t"], lambda: runs.append(1) or len(runs)) == 1
    assert runs == [1] and guard.reruns == 0


def test_a_read_an_append_overlapped_runs_again() -> None:
    guard = AppendGuard()
    runs: list[int] = []

    def read() -> int:
        runs.append(1)
        if len(runs) == 1:  # an append to the table starts and ends while the first run is running
            with guard.appending(["t"]):
                pass
        return len(runs)

    assert guard.reading(["t"], read) == 2 and guard.reruns == 1


def test_a_read_started_during_an_append_runs_again() -> None:
    guard = AppendGuard()
    started, release = threading.Event(), threading.Event()

    def append() -> None:
        with guard.appending(["t"]):
            started.set()
            release.wait(5)

    writer = _in_thread(append)
    started.wait(5)
    runs: list[int] = []

    def read() -> int:
        runs.append(1)
        release.set()  # the append ends while the read runs (or before its next run)
        time.sleep(0.01)
        return len(runs)

    assert guard.reading(["t"], read) >= 2
    writer.join(5)


def test_after_its_reruns_a_read_holds_appends_back() -> None:
    guard = AppendGuard()
    order: list[str] = []

    def read() -> str:
        n = len([x for x in order if x == "read"])
        order.append("read")
        if n < RERUNS + 1:  # every free run is overlapped by an append
            with guard.appending(["t"]):
                order.append("append")
        else:  # the held run: an append from another thread must wait for it
            late = _in_thread(lambda: _append_and_note(guard, order))
            time.sleep(0.05)
            order.append("held run ends")
            holding.append(late)
        return "ok"

    holding: list[threading.Thread] = []
    assert guard.reading(["t"], read) == "ok"
    holding[0].join(5)
    assert order[-2:] == ["held run ends", "late append"], order
    assert guard.reruns == RERUNS + 1


def _append_and_note(guard: AppendGuard, order: list[str]) -> None:
    with guard.appending(["t"]):
        order.append("late append")


def test_a_held_read_that_fails_releases_the_appends() -> None:
    guard = AppendGuard()
    calls = [0]

    def read() -> None:
        calls[0] += 1
        if calls[0] <= RERUNS + 1:
            with guard.appending(["t"]):
                pass
            return
        raise KeyboardInterrupt  # the held run interrupted

    try:
        guard.reading(["t"], read)
    except KeyboardInterrupt:
        pass
    done = threading.Event()
    late = _in_thread(lambda: (_append_and_note(guard, []), done.set()))
    assert done.wait(2), "an append waits for good behind a read that ended"
    late.join(2)


def test_a_read_beside_commits_to_its_string_table_is_guarded(embedded_url: str) -> None:
    """In the process that has the database open, commits' rows and reads of a table with string columns go
    through the guard: a read that a commit's flush overlapped ran again."""
    guard = Database.get(embedded_url).append_guard
    assert guard is not None
    setup = tique.connect(embedded_url)
    name = f"guarded_{time.monotonic_ns()}"
    setup.cursor().execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, s VARCHAR(40))")
    setup.commit()
    stop = threading.Event()

    def write() -> None:
        conn = tique.connect(embedded_url)
        n = 0
        while not stop.is_set():
            n += 1
            conn.cursor().execute(f"INSERT INTO {name} VALUES (%s, %s)", (n, f"v{n}" * 5))
            conn.commit()
        conn.close()

    before = guard.reruns
    writer = _in_thread(write)
    reader = tique.connect(embedded_url)
    try:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and guard.reruns == before:
            cur = reader.cursor()
            cur.execute(f"SELECT COUNT(*), MAX(s) FROM {name}")
            cur.fetchall()
            reader.commit()
    finally:
        stop.set()
        writer.join(10)
        reader.close()
        setup.cursor().execute(f"DROP TABLE {name}")
        setup.commit()
        setup.close()
    assert guard.reruns > before
