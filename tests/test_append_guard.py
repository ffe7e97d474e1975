"""AppendGuard (tique/append_guard.py): per table, a readers-writer lock between string reads and appends, with
turns in the order requests came; an interrupt leaves nothing waiting.
The engine race it keeps reads from is measured by benchmarks/string_race.py (tests/test_smoke_scripts.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

import tique
from tests.interrupts import Interrupt, Interrupter
from tique.append_guard import AppendGuard
from tique.database import Database


def _in_thread(fn: Callable[[], object]) -> threading.Thread:
    thread = threading.Thread(target=fn, daemon=True)
    thread.start()
    return thread


def _until(condition: Callable[[], bool], seconds: float = 5) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)
    return True


def test_a_read_beside_an_append_to_another_table_runs_at_once() -> None:
    guard = AppendGuard()
    with guard.appending(["other"]):
        assert guard.reading(["t"], lambda: "ran") == "ran"
    assert guard.reads == 1 and guard.read_waits == 0


def test_reads_run_together_and_appends_run_together() -> None:
    guard = AppendGuard()
    assert guard.reading(["t"], lambda: guard.reading(["t"], lambda: 2)) == 2  # no append between them: no wait
    with guard.appending(["t"]), guard.appending(["t"]):
        pass
    assert guard.read_waits == 0 and guard.append_waits == 0


class _Held:
    """A read (or an append) of ``tables`` running in a thread until ``release()``; then notes "<name> ends"."""

    def __init__(self, guard: AppendGuard, appends: bool, tables: list[str], order: list[str], name: str) -> None:
        inside, self._release = threading.Event(), threading.Event()

        def hold() -> None:
            inside.set()
            self._release.wait(5)
            order.append(f"{name} ends")

        def run() -> None:
            if appends:
                with guard.appending(tables):
                    hold()
            else:
                guard.reading(tables, hold)

        self.thread = _in_thread(run)
        assert inside.wait(5)

    def release(self) -> None:
        self._release.set()
        self.thread.join(5)


def _read_and_note(guard: AppendGuard, order: list[str], tables: tuple[str, ...] = ("t",)) -> threading.Thread:
    return _in_thread(lambda: guard.reading(tables, lambda: order.append("read")))


def test_an_append_waits_for_a_running_read_of_its_table() -> None:
    guard, order = AppendGuard(), []
    reading = _Held(guard, False, ["t"], order, "read")
    writer = _in_thread(lambda: _append_and_note(guard, order))
    assert _until(lambda: guard.append_waits == 1)
    time.sleep(0.05)
    assert order == []  # the append is still waiting
    reading.release()
    writer.join(5)
    assert order == ["read ends", "append"]


def test_a_read_waits_for_a_running_append_of_its_table() -> None:
    guard, order = AppendGuard(), []
    appending = _Held(guard, True, ["t"], order, "append")
    reader = _read_and_note(guard, order)
    assert _until(lambda: guard.read_waits == 1)
    time.sleep(0.05)
    assert order == []
    appending.release()
    reader.join(5)
    assert order == ["append ends", "read"]


def test_a_waiting_append_goes_before_reads_that_come_after_it() -> None:
    """Else 4 clients reading stock in turn could keep a commit's flush of stock waiting for good."""
    guard, order = AppendGuard(), []
    first = _Held(guard, False, ["t"], order, "first read")
    writer = _in_thread(lambda: _append_and_note(guard, order))
    assert _until(lambda: guard.append_waits == 1)
    second = _read_and_note(guard, order)
    assert _until(lambda: guard.read_waits == 1)
    first.release()
    for thread in (writer, second):
        thread.join(5)
    assert order == ["first read ends", "append", "read"]


def test_a_waiting_read_goes_before_appends_that_come_after_it() -> None:
    """Else a writer committing in a loop could keep a read (the checkpointer's copy) waiting for good."""
    guard, order = AppendGuard(), []
    first = _Held(guard, True, ["t"], order, "first append")
    reader = _read_and_note(guard, order)
    assert _until(lambda: guard.read_waits == 1)
    second = _in_thread(lambda: _append_and_note(guard, order))
    assert _until(lambda: guard.append_waits == 1)
    first.release()
    for thread in (reader, second):
        thread.join(5)
    assert order == ["first append ends", "read", "append"]


def test_a_read_of_two_tables_waits_for_an_append_to_either_and_not_for_others() -> None:
    guard, order = AppendGuard(), []
    appending = _Held(guard, True, ["u"], order, "append")
    assert guard.reading(["t", "v"], lambda: "ran") == "ran" and guard.read_waits == 0
    reader = _read_and_note(guard, order, ("t", "u"))
    assert _until(lambda: guard.read_waits == 1)
    appending.release()
    reader.join(5)
    assert order == ["append ends", "read"]


def test_a_read_nested_in_an_append_of_its_table_does_not_wait_for_reads_queued_behind_that_append() -> None:
    """A statement hook of an append (run once its statement ended) that reads the table: the read must not wait
    for reads that wait for the append it is nested in (tests/adversarial/test_attack_bulk_load.py runs a
    checkpoint from such a hook, and hung)."""
    guard, order = AppendGuard(), []
    done = threading.Event()

    def append_then_read_inside() -> None:
        with guard.appending(["t"]):
            assert _until(lambda: guard.read_waits == 1)  # another thread's read queued behind this append
            guard.reading(["t"], lambda: order.append("nested read"))
        done.set()

    outer = _in_thread(append_then_read_inside)
    queued = _read_and_note(guard, order)
    assert done.wait(5), "the nested read waited for a read that waits for its own append"
    outer.join(5)
    queued.join(5)
    assert order == ["nested read", "read"]


def test_an_append_queued_before_a_nested_read_does_not_run_beside_it() -> None:
    """The nested read runs before an append queued earlier (behind another read): that append must then wait
    for the nested read too, or it would grow the heap the nested read is reading."""
    guard, order = AppendGuard(), []
    first = _Held(guard, False, ["t"], order, "first read")
    queued = _in_thread(lambda: _append_and_note(guard, order))  # waits for the first read
    assert _until(lambda: guard.append_waits == 1)
    inside, release = threading.Event(), threading.Event()

    def hold() -> None:
        inside.set()
        release.wait(5)
        order.append("nested read ends")

    def outer_then_nested() -> None:
        with guard.appending(["u"]):
            guard.reading(["t"], hold)

    nested = _in_thread(outer_then_nested)
    assert inside.wait(5), "the nested read waited for the queued append"
    first.release()  # the queued append's earlier read ends while the nested read still runs
    time.sleep(0.05)
    assert order == ["first read ends"], order
    release.set()
    for thread in (nested, queued):
        thread.join(5)
    assert order == ["first read ends", "nested read ends", "append"]


def test_a_nested_read_still_waits_for_another_threads_running_append() -> None:
    guard, order = AppendGuard(), []
    appending = _Held(guard, True, ["t"], order, "append")

    def nested() -> None:
        with guard.appending(["u"]):
            guard.reading(["t"], lambda: order.append("nested read"))

    thread = _in_thread(nested)
    assert _until(lambda: guard.read_waits == 1)
    time.sleep(0.05)
    assert order == []
    appending.release()
    thread.join(5)
    assert order == ["append ends", "nested read"]


def test_a_loop_of_appends_does_not_starve_a_reader() -> None:
    guard = AppendGuard()
    stop = threading.Event()

    def append_in_a_loop() -> None:
        while not stop.is_set():
            with guard.appending(["t"]):
                time.sleep(0.001)

    writers = [_in_thread(append_in_a_loop) for _ in range(2)]  # overlapping: some append always runs
    done = threading.Event()
    reader = _in_thread(lambda: ([guard.reading(["t"], lambda: time.sleep(0.001)) for _ in range(50)], done.set()))
    try:
        assert done.wait(10), "50 reads did not get their turns among the appends in 10 s"
    finally:
        stop.set()
        for thread in (*writers, reader):
            thread.join(5)


def _append_and_note(guard: AppendGuard, order: list[str]) -> None:
    with guard.appending(["t"]):
        order.append("append")


def test_a_read_that_fails_lets_the_appends_go() -> None:
    guard = AppendGuard()

    def read() -> None:
        raise KeyboardInterrupt  # the read interrupted

    with pytest.raises(KeyboardInterrupt):
        guard.reading(["t"], read)
    done = threading.Event()
    _in_thread(lambda: (_append_and_note(guard, []), done.set()))
    assert done.wait(2), "an append waits for good behind a read that ended"


def test_an_append_interrupted_while_it_waits_lets_the_reads_go() -> None:
    guard = AppendGuard()
    inside, release = threading.Event(), threading.Event()
    reader = _in_thread(lambda: guard.reading(["t"], lambda: (inside.set(), release.wait(5))))
    assert inside.wait(5)

    class Interrupted(Exception):
        pass

    def interrupt_when_waiting() -> bool:  # raised from inside the append's wait, as a KeyboardInterrupt would be
        raise Interrupted

    waiting = guard.appending(["t"])  # (entered below, inside pytest.raises)
    real_wait_for = guard._changed.wait_for
    guard._changed.wait_for = lambda predicate, timeout=None: interrupt_when_waiting()  # type: ignore[method-assign]
    with pytest.raises(Interrupted), waiting:
        pass
    guard._changed.wait_for = real_wait_for  # type: ignore[method-assign]
    release.set()
    reader.join(5)
    assert guard.reading(["t"], lambda: "ran") == "ran"  # no append is left waiting
    assert guard.read_waits == 0


def test_a_read_beside_commits_to_its_string_table_is_guarded(embedded_url: str) -> None:
    """In the process that has the database open, commits' rows and reads of a table with string columns go
    through the guard: with a writer committing beside it, a read or an append waited for the other."""
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

    reads, waits = guard.reads, guard.read_waits + guard.append_waits
    writer = _in_thread(write)
    reader = tique.connect(embedded_url)
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and guard.read_waits + guard.append_waits == waits:
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
    assert guard.reads > reads
    assert guard.read_waits + guard.append_waits > waits


def test_interrupts_at_any_instant_leave_no_request_in_the_way() -> None:
    """Reads that end normally, each interrupted at a random instant (tests/interrupts.py), so that the interrupt
    lands anywhere in the guard's code: no request may stay in the guard, or another thread's append of the same
    table would wait for good. Before the leaving was written out in the callers' finally (an interrupt as
    _leave was entered skipped it), or with the Condition's own Python __enter__, every guard of 20 broke."""
    interrupted = 0
    with Interrupter(5, 60, timer=True) as interrupt:
        for _ in range(10):
            guard = AppendGuard()
            for _ in range(2000):
                try:
                    interrupt.arm()
                    guard.reading(["t\x00cache"], lambda: None)
                    interrupt.disarm()
                except Interrupt:
                    interrupted += 1
                    assert not guard._active, "an interrupted read left its request in the guard"
            entered = threading.Event()

            def append(g: AppendGuard = guard, e: threading.Event = entered) -> None:
                with g.appending(["t\x00cache"]):
                    e.set()

            threading.Thread(target=append, daemon=True).start()
            assert entered.wait(5), "another thread's append of the table waits for good"
    assert interrupted > 100  # the interrupts came, at many instants
