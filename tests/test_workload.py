"""Analytical reads yield to transactions while others write (tique/workload.py), and only then: one MonetDB
worker thread and one turn per database in the process; point reads, writers' own reads and explicit settings
are left alone."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator

import pytest

import tique
from tique import workload
from tique.checkpoint import Checkpointer
from tique.workload import Workload

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
    """The statements a connection sends, each with whether the database's turn was taken while it ran."""

    def __init__(self, conn: tique.Connection) -> None:
        self.conn, self.sent = conn, []
        conn.statement_hooks.append(self)

    def __call__(self, sql: str, seconds: float, error: BaseException | None) -> None:
        self.sent.append((sql, self.conn.db.workload.turn._value == 0))  # type: ignore[attr-defined]

    def run(self, sql: str) -> list[tuple[str, bool]]:
        """``sql`` as a transaction of its own; what it sent."""
        self.sent.clear()
        cur = self.conn.cursor()
        cur.execute(sql)
        cur.fetchall()
        self.conn.commit()
        return list(self.sent)


def worker_calls(sent: list[tuple[str, bool]]) -> list[str]:
    return [sql for sql, _ in sent if "setworkerlimit" in sql]


def under_turn(sent: list[tuple[str, bool]]) -> bool:
    return any(taken for sql, taken in sent if "setworkerlimit" not in sql)


def test_a_reader_yields_while_another_connection_writes_and_stops_after(
    connect: Connect, table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer, reader = connect(), connect()
    watch = Watch(reader)
    alone = watch.run(ANALYTICAL.format(t=table))
    assert worker_calls(alone) == [] and not under_turn(alone)
    write(writer, table)
    busy = watch.run(ANALYTICAL.format(t=table))
    assert worker_calls(busy) == ["CALL sys.setworkerlimit(1)"]
    assert under_turn(busy)
    again = watch.run(ANALYTICAL.format(t=table))  # still yielding: the limit is not sent again
    assert worker_calls(again) == [] and under_turn(again)
    monkeypatch.setattr(workload, "WRITERS_WINDOW_S", 0.0)  # the writer has gone quiet
    quiet = watch.run(ANALYTICAL.format(t=table))
    assert worker_calls(quiet) == ["CALL sys.setworkerlimit(0)"]
    assert not under_turn(quiet)


def test_a_connection_that_writes_itself_never_yields(connect: Connect, table: str) -> None:
    """TPC-C's StockLevel is an aggregate inside transactional work: it must not queue behind reports."""
    writer, other = connect(), connect()
    watch = Watch(writer)
    write(other, table)
    write(writer, table)
    sent = watch.run(ANALYTICAL.format(t=table))
    assert worker_calls(sent) == [] and not under_turn(sent)


def test_read_only_work_and_checkpoints_are_not_writers(
    connect: Connect, table: str, raw: tique.engine.RawConnection
) -> None:
    other, reader = connect(), connect()
    for _ in range(3):
        Watch(other).run(ANALYTICAL.format(t=table))
        Watch(other).run(POINT.format(t=table))
    Checkpointer(raw).run_once()
    sent = Watch(reader).run(ANALYTICAL.format(t=table))
    assert worker_calls(sent) == [] and not under_turn(sent)


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


@pytest.mark.parametrize(
    ("settings", "turn"),
    [({"analytical_yield": False}, False), ({"worker_limit": 2}, True)],  # a given worker limit is never switched
)
def test_settings_win(connect: Connect, table: str, settings: dict[str, object], turn: bool) -> None:
    writer = connect()
    reader = connect(**settings)
    write(writer, table)
    sent = Watch(reader).run(ANALYTICAL.format(t=table))
    assert worker_calls(sent) == []
    assert under_turn(sent) == turn


def test_explicit_slots_use_their_own_gate(connect: Connect, table: str) -> None:
    writer, reader = connect(), connect(analytical_slots=1)
    write(writer, table)
    sent = Watch(reader).run(ANALYTICAL.format(t=table))
    assert worker_calls(sent) == ["CALL sys.setworkerlimit(1)"]  # the worker limit still follows the writers
    assert not under_turn(sent)  # analytical_slots=1 has its own gate


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
    assert worker_calls(sent) == ["CALL sys.setworkerlimit(1)"]
    assert under_turn(sent)
