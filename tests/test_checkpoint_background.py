"""The checkpointer as a thread (tique serve --checkpoint-interval, start_background): it never stops for good
while the process runs. Before, whatever ended its loop (a lost connection, another checkpointer holding the lock,
an error outside a run) ended the thread silently, and the Cache tables then grew without bound."""

from __future__ import annotations

import io
import signal
import time
from collections.abc import Callable

import pytest

import tique
from tests.conftest import ServeProcess, start_serve
from tique.checkpoint import BackgroundCheckpointer, Checkpointer, CheckpointReport, run_loop
from tique.engine import open_engine
from tique.engine.base import Column, RawConnection, Result
from tique.errors import DatabaseError


def wait_for(condition: Callable[[], bool], seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_it_starts_again_on_a_new_connection_after_losing_one(served: ServeProcess) -> None:
    engine = open_engine(served.url)
    made: list[RawConnection] = []

    def connect() -> RawConnection:
        conn = engine.connect()
        made.append(conn)
        if len(made) == 1:
            conn.close()  # lost before the checkpointer used it
        return conn

    said: list[str] = []
    worker = BackgroundCheckpointer(connect, 0.1, on_error=said.append).start()
    try:
        assert wait_for(lambda: sum(not r.errors for r in worker.reports) >= 2), (worker.errors, worker.totals)
    finally:
        worker.stop()
    assert len(made) == 2 and worker.totals["restarts"] == 1
    assert len(worker.errors) == 1 and len(said) == 1 and "starting again in 0.1 s" in said[0], said
    assert not worker._thread.is_alive()


def test_it_waits_for_another_checkpointer_and_then_runs(served: ServeProcess) -> None:
    engine = open_engine(served.url)
    holder = Checkpointer(engine.connect())
    holder.acquire()
    said: list[str] = []
    worker = BackgroundCheckpointer(engine.connect, 0.1, on_error=said.append).start()
    try:
        assert wait_for(lambda: len(said) >= 2), said  # told, and still trying
        assert worker.totals["runs"] == 0
        assert all("another checkpointer" in s for s in said), said
        holder.release()
        assert wait_for(lambda: worker.totals["runs"] >= 1), (worker.errors, worker.totals)
    finally:
        worker.stop()
        holder.conn.close()


def test_a_stopped_checkpointer_is_not_restarted() -> None:
    said: list[str] = []

    def connect() -> RawConnection:
        raise tique.OperationalError("no engine here")

    worker = BackgroundCheckpointer(connect, 5.0, on_error=said.append).start()
    assert wait_for(lambda: len(said) == 1)
    began = time.monotonic()
    worker.stop()  # during its wait of 5 s
    assert time.monotonic() - began < 2 and not worker._thread.is_alive()
    assert len(said) == 1


def test_serve_prints_a_failed_run_and_not_the_same_one_each_tick() -> None:
    from tique.serve import _FailedRuns

    out = io.StringIO()
    failed = _FailedRuns(out)
    for _ in range(5):
        failed(CheckpointReport(time.time(), 0.0, 0, 0, 0, 0, errors=["tique_data.t: out of memory"]))
    failed(CheckpointReport(time.time(), 0.0, 0, 0, 0, 0))
    failed(CheckpointReport(time.time(), 0.0, 0, 0, 0, 0, errors=["another"]))
    text = out.getvalue()
    assert text.count("a checkpoint run failed") == 2 and "out of memory" in text and "another" in text


def test_serve_prints_every_threads_stack_on_sigusr1(tmp_path) -> None:  # type: ignore[no-untyped-def]
    proc = start_serve(tmp_path / "db", args=("--checkpoint-interval", "0.2"))
    try:
        proc.proc.send_signal(signal.SIGUSR1)
        time.sleep(1)
        assert proc.proc.poll() is None  # still serving
        conn = tique.connect(proc.url)
        conn.cursor().execute("SELECT 1")
        conn.close()
    finally:
        proc.stop()
    assert proc.proc.stderr is not None
    err = proc.proc.stderr.read()
    assert "most recent call first" in err and "scheduler.py" in err, err[-3000:]


def test_a_restarted_checkpointer_does_not_wait_for_its_own_lock(served: ServeProcess) -> None:
    """The loop stopped while holding the lock (here its connection is closed under it after a run): the lock
    stays taken for its lease (10 s) under the old owner. A restart under a new owner was told "another
    checkpointer" until the lease ran out, and then waited its doubled wait: 13 s without a run."""
    engine = open_engine(served.url)
    made: list[RawConnection] = []

    def connect() -> RawConnection:
        made.append(engine.connect())
        return made[-1]

    def lose_the_first(report: CheckpointReport) -> None:
        if len(made) == 1:
            made[0].close()

    said: list[str] = []
    worker = BackgroundCheckpointer(connect, 0.1, on_report=lose_the_first, on_error=said.append).start()
    try:
        assert wait_for(lambda: len(made) == 2, 10), (worker.errors, worker.totals)
        runs = worker.totals["runs"]
        assert wait_for(lambda: worker.totals["runs"] > runs, 4), (said, worker.totals)
    finally:
        worker.stop()
    assert not any("another checkpointer" in s for s in said), said


def test_serve_prints_few_lines_for_failures_that_alternate_or_differ_in_numbers() -> None:
    """Every 100 ms a run may fail; two failures taking turns, or one naming a different id each time, were each
    printed every tick. The serve's stderr may be a pipe nobody reads until it exits (tests/conftest.py
    start_serve): once full, the print blocks the checkpointer thread, holding the lock, and nothing checkpoints."""

    from tique.serve import _FailedRuns

    out = io.StringIO()
    failed = _FailedRuns(out)
    for i in range(600):  # a minute of ticks
        failed(CheckpointReport(time.time(), 0.0, 0, 0, 0, 0, errors=[f"tique_data.t: out of memory ({i % 2})"]))
        failed(CheckpointReport(time.time(), 0.0, 0, 0, 0, 0, errors=[f"commit {1000 + i} (state deciding)"]))
    assert out.getvalue().count("\n") <= 10, out.getvalue()[:2000]


def test_it_runs_when_writers_go_quiet_not_before(served: ServeProcess, unique_name: Callable[[str], str]) -> None:
    """With an interval far away, a run comes within a poll or two after the last commit of a burst (versions
    left in the Cache slow every analytical read of the table), and none while commits keep coming."""
    engine = open_engine(served.url)
    table = unique_name("quiet")
    conn = tique.connect(served.url)
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {table} (k INT PRIMARY KEY, v INT)")
    conn.commit()
    worker = BackgroundCheckpointer(engine.connect, 3600).start()
    try:
        assert wait_for(lambda: worker.totals["runs"] >= 1)  # the first run, at start
        runs = worker.totals["runs"]
        ends = time.monotonic() + 3
        k = 0
        while time.monotonic() < ends:  # a steady writer: a commit every 50 ms
            k += 1
            cur.execute(f"INSERT INTO {table} VALUES (%s, %s)", (k, k))
            conn.commit()
            time.sleep(0.05)
        during = worker.totals["runs"] - runs
        assert during == 0, f"{during} runs while commits kept coming"
        assert wait_for(lambda: worker.totals["moved"] >= k, 10), worker.totals  # quiet now: moved within seconds
        runs = worker.totals["runs"]
        time.sleep(2)  # and idle: no more runs
        assert worker.totals["runs"] == runs
    finally:
        worker.stop()
        conn.close()


def test_the_first_run_comes_at_once_on_a_machine_just_booted(
    served: ServeProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Monotonic time counts from boot: the loop took its last run to be at 0.0, so a machine up for less than
    the interval waited that long for its first run (a fresh CI machine, 28 minutes up, with a 1-hour interval)."""
    real = time.monotonic
    booted = real() - 5.0  # as if the machine had been up for 5 s
    monkeypatch.setattr(time, "monotonic", lambda: real() - booted)
    worker = BackgroundCheckpointer(open_engine(served.url).connect, 3600).start()
    try:
        assert wait_for(lambda: worker.totals["runs"] >= 1, 10), (worker.errors, worker.reports)
    finally:
        worker.stop()


class _Counter:
    """A checkpointer's connection that answers only the loop's reads of the last commit timestamp."""

    def __init__(self, owner: _ScriptedCheckpointer) -> None:
        self.owner = owner

    def execute(self, sql: str) -> Result:
        assert "last_cts" in sql, sql
        return self.owner.counter()


class _ScriptedCheckpointer:
    """What run_loop asks of a Checkpointer, scripted: ``script(kind, n)`` runs at the n-th run or counter read."""

    def __init__(self, script: Callable[[str, int], None]) -> None:
        self.script, self.cts, self.reads, self.runs = script, 10, 0, 0
        self.conn, self.catalog = _Counter(self), None

    def acquire(self) -> None:
        pass

    def counter(self) -> Result:
        self.reads += 1
        self.script("read", self.reads)
        return Result(columns=[Column("c", "bigint")], rows=[(self.cts,)])

    def run_once(self, release: bool = True) -> CheckpointReport:
        self.runs += 1
        self.script("run", self.runs)
        return CheckpointReport(time.time(), 0.0, 0, 0, 0, self.cts)


def _polls(ckpt: _ScriptedCheckpointer, polls: int) -> list[CheckpointReport]:
    """run_loop for ``polls`` polls (its waits return at once), with an interval of an hour."""
    waits = [0]

    class Polls:
        def is_set(self) -> bool:
            return waits[0] >= polls

        def wait(self, _seconds: float) -> bool:
            waits[0] += 1
            return False

    reports: list[CheckpointReport] = []
    run_loop(ckpt, 3600, None, Polls(), reports.append)  # type: ignore[arg-type]
    return reports


def test_a_burst_that_ends_during_a_run_is_seen_at_the_next_poll() -> None:
    def script(kind: str, n: int) -> None:
        if kind == "run" and n == 1:
            ckpt.cts += 5  # commits while the first run moves versions, none after

    ckpt = _ScriptedCheckpointer(script)
    _polls(ckpt, 2)
    assert ckpt.runs == 2  # the first at once, the quiet one at the next poll (not one poll later)
    _polls(ckpt, 4)
    assert ckpt.runs == 3  # (a new loop's first run) then none while idle


def test_a_failed_counter_read_after_a_run_is_not_a_failed_run() -> None:
    def script(kind: str, n: int) -> None:
        if kind == "read" and n == 2:  # the read right after the first run
            raise DatabaseError("a transient failure")

    ckpt = _ScriptedCheckpointer(script)
    reports = _polls(ckpt, 3)
    assert ckpt.runs == 1
    assert [r.errors for r in reports] == [[]]
