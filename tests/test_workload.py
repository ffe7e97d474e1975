"""Analytical reads yield to transactions while others write (tique/workload.py), and only then: one turn per
database in the process, MonetDB's sequential pipeline, embedded the process's low-priority thread, and a rest
after each; point reads, writers' own reads and explicit settings are left alone."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator

import pytest

import tique
from tests.conftest import sized
from tests.interrupts import Interrupt, Interrupter
from tique import workload
from tique.checkpoint import Checkpointer
from tique.workload import LOW_PRIORITY_NICE, LowPriorityThread, Workload

Connect = Callable[..., tique.Connection]
ANALYTICAL = "SELECT SUM(v) FROM {t}"
POINT = "SELECT v FROM {t} WHERE id = 7"


@pytest.fixture
def table(connect: Connect, unique_name: Callable[[str], str]) -> Iterator[str]:
    """A table of 100 rows, and a fresh record of writers for the database (tests share one per session)."""
    name = unique_name("wl")
    conn = connect(autocommit=True)
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, v INT)")
    cur.execute(f"INSERT INTO {name} VALUES " + ", ".join(f"({i}, {i})" for i in range(100)))
    conn.db.workload = Workload()
    yield name


def write(conn: tique.Connection, table: str) -> None:
    conn.cursor().execute(f"UPDATE {table} SET v = v + 1 WHERE id = 1")
    conn.commit()


class Watch:
    """The statements a connection sends, each with whether the database's turn was taken while it ran and the
    nice value of the thread that ran it (hooks run on that thread)."""

    def __init__(self, conn: tique.Connection) -> None:
        self.conn, self.sent = conn, []
        conn.statement_hooks.append(self)

    def __call__(self, sql: str, seconds: float, error: BaseException | None) -> None:
        nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        self.sent.append((sql, self.conn.db.workload.turn.locked(), nice, seconds))

    def run(self, sql: str) -> list[tuple[str, bool, int, float]]:
        """``sql`` as a transaction of its own; what it sent."""
        self.sent.clear()
        cur = self.conn.cursor()
        cur.execute(sql)
        cur.fetchall()
        self.conn.commit()
        return list(self.sent)


Sent = list[tuple[str, bool, int, float]]


def pipelines(sent: Sent) -> list[str]:
    return [sql for sql, *_ in sent if sql.startswith("SET optimizer")]


def under_turn(sent: Sent) -> bool:
    return any(taken for sql, taken, *_ in sent if not sql.startswith("SET optimizer"))


def the_read(sent: Sent, table: str) -> tuple[str, bool, int, float]:
    # the first that names the table: embedded, a PREPARE after it asks the result's types (result_types.py)
    return next(s for s in sent if table in s[0])


def test_a_reader_yields_while_another_connection_writes_and_stops_after(
    connect: Connect, table: str, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    writer, reader = connect(), connect(analytical_rest=0)
    watch = Watch(reader)
    alone = watch.run(ANALYTICAL.format(t=table))
    assert pipelines(alone) == ["SET optimizer = 'default_pipe'"] and not under_turn(alone)
    assert the_read(alone, table)[2] == os.getpriority(os.PRIO_PROCESS, 0)  # on the caller's thread
    write(writer, table)
    busy = watch.run(ANALYTICAL.format(t=table))
    assert pipelines(busy) == ["SET optimizer = 'sequential_pipe'"]
    assert under_turn(busy)
    if url.startswith("monetdb://"):  # the server runs it: nothing to gain from a thread here
        assert reader.db.low_priority is None
    elif sys.platform.startswith("linux"):
        assert the_read(busy, table)[2] == LOW_PRIORITY_NICE
    again = watch.run(ANALYTICAL.format(t=table))  # still yielding: the pipeline is not sent again
    assert pipelines(again) == [] and under_turn(again)
    monkeypatch.setattr(workload, "WRITERS_WINDOW_S", 0.0)  # the writer has gone quiet
    quiet = watch.run(ANALYTICAL.format(t=table))
    assert pipelines(quiet) == ["SET optimizer = 'default_pipe'"]
    assert not under_turn(quiet)


def test_a_yielding_read_rests_before_the_next_one_and_returns_at_once(connect: Connect, table: str) -> None:
    writer, reader = connect(), connect()
    # past the setting's bound (10), so that the rest dwarfs the engine's time however loaded the machine is
    # (`make test`: 100 times, `make test-long`: 500; embedded, 500 times the read took ~40 s on a busy machine)
    rest = sized(100.0, 500.0)
    reader.settings = reader.settings.model_copy(update={"analytical_rest": rest})
    write(writer, table)
    watch = Watch(reader)
    cur = reader.cursor()
    began = time.monotonic()
    cur.execute(ANALYTICAL.format(t=table))
    first = time.monotonic() - began
    ran = the_read(watch.sent, table)[3]  # the engine's time: the rest is at least ``rest`` times that
    assert cur.fetchall() == [(sum(range(100)) + 1,)]
    assert first < (rest + 1) * ran, "the first read waited for its own rest"
    cur.execute(ANALYTICAL.format(t=table))
    second = time.monotonic() - began
    assert second >= (rest + 1) * ran * 0.99, (second, ran)
    assert cur.fetchall() == [(sum(range(100)) + 1,)]
    reader.rollback()


def test_a_failing_yielding_read_raises_on_the_caller_and_the_connection_goes_on(connect: Connect, table: str) -> None:
    writer, reader = connect(), connect(analytical_rest=0)
    write(writer, table)
    cur = reader.cursor()
    with pytest.raises(tique.DatabaseError):
        cur.execute(f"SELECT SUM(v / (id - id)) FROM {table}")  # division by zero, in the engine
    reader.rollback()
    cur.execute(ANALYTICAL.format(t=table))
    assert cur.fetchall() == [(sum(range(100)) + 1,)]
    assert not reader.db.workload.turn.locked()  # given back


def test_the_low_priority_thread_runs_one_call_at_a_time_and_hands_back_results_and_errors() -> None:
    low = LowPriorityThread()
    running, most = [0], [0]
    lock = threading.Lock()

    def job(i: int) -> int:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.01)
        with lock:
            running[0] -= 1
        if i == 3:
            raise ValueError("three")
        return i * i

    results: dict[int, object] = {}

    def caller(i: int) -> None:
        try:
            results[i] = low.call(lambda: job(i))
        except ValueError as exc:
            results[i] = exc

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert most[0] == 1
    assert {i: r for i, r in results.items() if i != 3} == {i: i * i for i in range(6) if i != 3}
    assert isinstance(results[3], ValueError)
    if sys.platform.startswith("linux"):
        assert low.nice == LOW_PRIORITY_NICE
        assert low.call(lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id())) == LOW_PRIORITY_NICE
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) != LOW_PRIORITY_NICE  # the caller's stays


def test_a_connection_that_writes_itself_never_yields(connect: Connect, table: str) -> None:
    """TPC-C's StockLevel is an aggregate inside transactional work: it must not queue behind reports."""
    writer, other = connect(), connect()
    watch = Watch(writer)
    write(other, table)
    write(writer, table)
    sent = watch.run(ANALYTICAL.format(t=table))
    assert "SET optimizer = 'sequential_pipe'" not in pipelines(sent) and not under_turn(sent)


def test_read_only_work_and_checkpoints_are_not_writers(
    connect: Connect, table: str, raw: tique.engine.RawConnection
) -> None:
    other, reader = connect(), connect()
    for _ in range(3):
        Watch(other).run(ANALYTICAL.format(t=table))
        Watch(other).run(POINT.format(t=table))
    Checkpointer(raw).run_once()
    sent = Watch(reader).run(ANALYTICAL.format(t=table))
    assert "SET optimizer = 'sequential_pipe'" not in pipelines(sent) and not under_turn(sent)


def test_point_reads_never_wait_for_the_turn(connect: Connect, table: str) -> None:
    writer, reader = connect(), connect()
    write(writer, table)
    turn = reader.db.workload.turn
    turn.acquire()  # a report is running
    try:
        done = threading.Event()

        def point() -> None:
            Watch(reader).run(POINT.format(t=table))
            done.set()

        thread = threading.Thread(target=point, daemon=True)
        thread.start()
        assert done.wait(30), "a point read waited for the analytical turn"
    finally:
        turn.release()


def test_an_analytical_read_waits_for_the_turn_while_others_write(connect: Connect, table: str) -> None:
    writer, reader = connect(), connect()
    write(writer, table)
    turn = reader.db.workload.turn
    turn.acquire()
    done = threading.Event()
    thread = threading.Thread(target=lambda: (Watch(reader).run(ANALYTICAL.format(t=table)), done.set()))
    try:
        thread.start()
        assert not done.wait(0.5), "an analytical read ran beside another while a writer was busy"
    finally:
        turn.release()
    assert done.wait(30)
    thread.join(30)


@pytest.mark.parametrize("settings", [{"analytical_yield": False}, {"worker_limit": 2}, {"analytical_slots": 1}])
def test_settings_win(connect: Connect, table: str, settings: dict[str, object]) -> None:
    """Given how analytical reads run, a connection never yields: it neither takes the turn nor goes sequential."""
    writer = connect()
    reader = connect(**settings)
    write(writer, table)
    sent = Watch(reader).run(ANALYTICAL.format(t=table))
    assert "SET optimizer = 'sequential_pipe'" not in pipelines(sent)
    assert not under_turn(sent)


def test_another_process_writing_makes_readers_yield(connect: Connect, table: str, url: str) -> None:
    if not url.startswith("monetdb://"):
        pytest.skip("an embedded database belongs to one process")
    reader = connect()
    Watch(reader).run(ANALYTICAL.format(t=table))  # this process has seen the snapshot as it is
    code = (
        "import sys, tique\n"
        "c = tique.connect(sys.argv[1])\n"
        f"c.cursor().execute('UPDATE {table} SET v = v + 1 WHERE id = 2')\n"
        "c.commit()\n"
        "c.close()\n"
    )
    subprocess.run([sys.executable, "-c", code, url], check=True, timeout=120)
    sent = Watch(reader).run(ANALYTICAL.format(t=table))
    assert pipelines(sent) == ["SET optimizer = 'sequential_pipe'"]
    assert under_turn(sent)


def test_the_rest_is_longer_where_reads_cannot_run_at_low_priority(connect: Connect, url: str) -> None:
    embedded = not url.startswith("monetdb://")
    assert connect().rest_factor() == (1.0 if embedded else 3.0)
    assert connect(analytical_rest=0).rest_factor() == 0.0
    assert connect(analytical_rest=2.5).rest_factor() == 2.5


def test_interrupts_at_any_instant_never_hang_the_low_priority_thread() -> None:
    """Calls on the low-priority thread, each interrupted at a random instant (tests/interrupts.py): every call
    ends, the interrupt is raised only once a started fn has ended, and the thread keeps serving. The thread's own
    Condition and job slot hung a caller within seconds (a review reproduced it)."""
    interrupted = early = 0
    with Interrupter(7, 400) as interrupt:
        for _ in range(20):
            low = LowPriorityThread()
            for _ in range(100):
                started: list[bool] = []
                ended: list[bool] = []
                try:
                    interrupt.arm()
                    low.call(lambda s=started, e=ended: (s.append(True), time.sleep(0.0002), e.append(True)))
                    interrupt.disarm()
                except Interrupt:
                    interrupted += 1
                    early += bool(started) and not ended  # (an interrupt before the call was queued: it never runs)
            assert low.call(lambda: 7) == 7
    assert interrupted > 100 and early == 0


@pytest.mark.parametrize("slots", [1, 2])
def test_analytical_gate_keeps_its_slots_through_interrupts_at_any_instant(connect: Connect, slots: int) -> None:
    """The analytical_slots gate: interrupts at random instants of taking and giving back a slot lose none (a
    Python semaphore's counter could be lowered and never raised again: every later analytical read then waited
    for good) and give none twice; afterwards ``slots`` threads hold a slot at once, and one more waits."""
    db = connect().db
    interrupted = 0
    with Interrupter(11, 60, timer=True) as interrupt:
        for _ in range(20_000):
            try:
                interrupt.arm()
                with db.analytical_gate(slots):
                    pass
                interrupt.disarm()
            except Interrupt:
                interrupted += 1
    assert interrupted > 100
    held, release = threading.Semaphore(0), threading.Event()

    def hold() -> None:
        with db.analytical_gate(slots):
            held.release()
            release.wait(10)

    threads = [threading.Thread(target=hold, daemon=True) for _ in range(slots + 1)]
    try:
        for t in threads[:slots]:  # one after another: each finds a free slot
            t.start()
            assert held.acquire(timeout=5), "a slot was lost to an interrupt"
        threads[slots].start()
        assert not held.acquire(timeout=0.3), "a slot was given twice"
    finally:
        release.set()
    assert held.acquire(timeout=5)  # the last one gets a slot once one is given back
    for t in threads:
        t.join(5)


def test_analytical_gate_uses_every_slot_when_readers_read_back_to_back(connect: Connect) -> None:
    """Three readers of back-to-back 10 ms reads beside two slots, all first queued on the same one: the slots
    share the reads. A reader that left a slot and read again at once queued behind the waiter it had just woken
    (that waiter holds the lock before it shows as held), and the other slot stayed idle (a review measured 240
    reads on one slot and none on the other)."""
    db = connect().db
    db.analytical_gate(2)
    gate_slots = db._gates[2]._slots
    busy, free = threading.Event(), threading.Event()

    def occupy() -> None:  # both slots busy: the readers below are given slots in turn
        with gate_slots[0], gate_slots[1]:
            busy.set()
            free.wait(10)

    threading.Thread(target=occupy, daemon=True).start()
    assert busy.wait(5)
    uses: dict[int, int] = {id(lock): 0 for lock in gate_slots}
    running, most = [0], [0]
    count = threading.Lock()
    stop = time.monotonic() + 2.0

    def reader() -> None:
        while time.monotonic() < stop:
            gate = db.analytical_gate(2)
            with gate:
                with count:
                    running[0] += 1
                    most[0] = max(most[0], running[0])
                uses[id(gate)] += 1
                time.sleep(0.01)
                with count:
                    running[0] -= 1

    threads = [threading.Thread(target=reader, daemon=True) for _ in range(3)]
    for t in threads:
        t.start()
        time.sleep(0.05)
        db._gates[2].slot()  # a turn taken here: the next reader is given the same slot as this one
    free.set()
    for t in threads:
        t.join(10)
    total = sum(uses.values())
    assert most[0] <= 2 and total > 100, (most, uses)
    assert min(uses.values()) >= total // 4, uses


@pytest.mark.parametrize("slots", [1, 2])
def test_a_read_nested_in_a_gated_read_runs_under_its_slot(connect: Connect, slots: int) -> None:
    """A gated read inside another on the same thread (a statement hook reading through another connection) runs
    under the slot its thread holds, while another thread holds every other slot: it neither takes a second slot
    nor waits for its own (the semaphore hung with one slot; per-slot locks given in turn hung with two)."""
    db = connect().db
    release, others = threading.Event(), threading.Semaphore(0)

    def hold() -> None:
        with db.analytical_gate(slots):
            others.release()
            release.wait(10)

    holders = [threading.Thread(target=hold, daemon=True) for _ in range(slots - 1)]
    for t in holders:
        t.start()
        assert others.acquire(timeout=5)
    done = threading.Event()

    def nested() -> None:
        with db.analytical_gate(slots), db.analytical_gate(slots), db.analytical_gate(slots):
            done.set()

    try:
        threading.Thread(target=nested, daemon=True).start()
        assert done.wait(5), "the nested read waited for a slot"
    finally:
        release.set()
