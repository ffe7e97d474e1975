"""Attacks on yielding analytical reads (tique/connection.py Connection._read, tique/workload.py): while another
connection writes, a scan or aggregate of a connection that has not written recently runs under the database's
turn, on the sequential pipeline and (embedded) the one low-priority thread, then rests. Its answers must be the
answers of a read that does not yield, its failures must leave nothing held, and many of them at once must
neither deadlock nor run side by side."""

from __future__ import annotations

import decimal
import threading
import time
from collections.abc import Callable, Iterator

import pytest

import tique
from tique import transaction, workload
from tique.statements import ReadPlan
from tique.workload import Workload

Connect = Callable[..., tique.Connection]


@pytest.fixture
def fresh(connect: Connect, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], None]]:
    """A fresh record of writers for the database (restored afterwards), writers counted as busy for an hour, and
    a function that makes a writer exist: a connection of its own commits a write."""
    probe = connect()
    monkeypatch.setattr(probe.db, "workload", Workload())
    monkeypatch.setattr(workload, "WRITERS_WINDOW_S", 3600.0)
    writer = connect(autocommit=True)
    cur = writer.cursor()
    cur.execute("CREATE TABLE IF NOT EXISTS yield_attack_writer (id INT PRIMARY KEY, v INT)")
    cur.execute("DELETE FROM yield_attack_writer")
    cur.execute("INSERT INTO yield_attack_writer VALUES (1, 1)")

    def make_writer() -> None:
        writer.cursor().execute("UPDATE yield_attack_writer SET v = v + 1 WHERE id = 1")

    make_writer()
    yield make_writer


class Reads:
    """The statements of a connection that read ``table``, with whether the turn was held while each ran and the
    engine time each took (hooks run where the statement ran, after it)."""

    def __init__(self, conn: tique.Connection, table: str) -> None:
        self.conn, self.table, self.sent = conn, table, []
        conn.statement_hooks.append(self)

    def __call__(self, sql: str, seconds: float, error: BaseException | None) -> None:
        if sql.startswith("PREPARE "):  # compiles, reads nothing (a statement's own, or its result types asked)
            return
        if self.table in sql or sql.upper().startswith("EXEC"):  # a prepared statement's run names no table
            ended = time.monotonic()
            held = self.conn.db.workload.turn.locked()
            self.sent.append((sql, held, ended - seconds, ended, threading.current_thread().name))

    def yielded(self) -> bool:
        """The last statement that read the table ran under the turn (a write's own reads and a shared-rows
        scan before it do not)."""
        return bool(self.sent) and self.sent[-1][1]


def make_table(connect: Connect, name: str, rows: int) -> None:
    conn = connect(autocommit=True)
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, v INT, g INT)")
    for lo in range(0, rows + 1, 2000):
        values = ", ".join(f"({i}, {i}, {i % 7})" for i in range(lo, min(lo + 2000, rows + 1)))
        cur.execute(f"INSERT INTO {name} VALUES {values}")
    conn.close()


def alive(conn: tique.Connection) -> None:
    """The turn is free and, embedded, the low-priority thread answers."""
    assert not conn.db.workload.turn.locked()
    if conn.db.low_priority is not None:
        assert conn.db.low_priority.call(lambda: 42) == 42


def test_wide_and_big_results_of_a_yielding_read_equal_a_plain_one(
    connect: Connect, unique_name: Callable[[str], str], fresh: Callable[[], None]
) -> None:
    name = unique_name("ywide")
    setup = connect(autocommit=True)
    cur = setup.cursor()
    cur.execute(
        f"CREATE TABLE {name} (id INT PRIMARY KEY, b BIGINT, d DECIMAL(18,4), f DOUBLE, s VARCHAR(40), "
        "dt DATE, ok BOOLEAN, c2 INT, c3 INT, c4 INT, c5 INT, c6 INT, c7 INT, c8 INT, c9 INT, c10 INT)"
    )
    words = ["grüße", "日本語", "emoji 😀", "", "a'b\"c", "tab\there", None]
    rows = []
    for i in range(1500):
        rows.append(
            (
                i,
                None if i % 11 == 0 else i * 10_000_000_007,
                None if i % 13 == 0 else decimal.Decimal(i) / 7,
                None if i % 17 == 0 else i / 3,
                words[i % len(words)],
                None if i % 5 == 0 else f"2020-01-{1 + i % 28:02d}",
                None if i % 3 == 0 else i % 2 == 0,
                *[None if (i + k) % 9 == 0 else i * k for k in range(2, 11)],
            )
        )
    setup.autocommit = False  # one transaction: 1500 commits cost ten seconds
    cur.executemany(f"INSERT INTO {name} VALUES ({', '.join(['%s'] * 16)})", rows)
    setup.commit()
    fresh()
    plain, reader = connect(analytical_yield=False), connect(analytical_rest=0)
    reads = Reads(reader, name)
    queries = [
        f"SELECT * FROM {name} ORDER BY id",
        f"SELECT s, COUNT(*), SUM(d), MAX(b), MIN(dt), COUNT(ok) FROM {name} GROUP BY s ORDER BY s",
        f"SELECT SUM(c2) + SUM(c10), AVG(f), COUNT(*) FROM {name} WHERE s IS NOT NULL",
        f"SELECT id, s || '!' FROM {name} WHERE s LIKE '%ü%' OR s LIKE '%😀%' ORDER BY id",
    ]
    for q in queries:
        reads.sent.clear()
        a, b = plain.cursor(), reader.cursor()
        a.execute(q)
        b.execute(q)
        expected, got = a.fetchall(), b.fetchall()
        assert got == expected, q
        assert [d[:2] for d in b.description] == [d[:2] for d in a.description]
        assert reads.yielded(), f"did not yield: {q}"
        plain.rollback()
        reader.rollback()
    assert len(expected) > 0
    alive(reader)


def test_a_yielding_read_with_parameters_in_autocommit(
    connect: Connect, unique_name: Callable[[str], str], fresh: Callable[[], None]
) -> None:
    name = unique_name("yparam")
    make_table(connect, name, 5000)
    fresh()
    reader = connect(analytical_rest=0, autocommit=True)
    reads = Reads(reader, name)
    cur = reader.cursor()
    for g in range(7):
        cur.execute(f"SELECT COUNT(*), SUM(v) FROM {name} WHERE g = %s", (g,))
        expected = [i for i in range(5001) if i % 7 == g]
        assert cur.fetchall() == [(len(expected), sum(expected))]
    assert reads.yielded()
    assert not reader.in_transaction
    alive(reader)


def test_a_yielding_read_sees_its_own_pending_writes_and_the_commit_keeps_them(
    connect: Connect, unique_name: Callable[[str], str], fresh: Callable[[], None]
) -> None:
    name = unique_name("yown")
    make_table(connect, name, 1000)
    fresh()
    conn = connect(analytical_rest=0)  # fresh: never committed, so it yields though it has pending writes
    reads = Reads(conn, name)
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {name} VALUES (5000, 5000, 100), (5001, NULL, 100)")
    cur.execute(f"UPDATE {name} SET v = v + 1000 WHERE g = 3")
    cur.execute(f"DELETE FROM {name} WHERE id < 10")
    rows = {i: (i, i % 7) for i in range(10, 1001)}
    rows = {i: (v + 1000 if g == 3 else v, g) for i, (v, g) in rows.items()}
    rows[5000], rows[5001] = (5000, 100), (None, 100)
    cur.execute(f"SELECT COUNT(*), COUNT(v), SUM(v) FROM {name}")
    assert cur.fetchall() == [(len(rows), len(rows) - 1, sum(v for v, _ in rows.values() if v is not None))]
    assert reads.yielded()
    cur.execute(f"SELECT g, COUNT(*), SUM(v) FROM {name} GROUP BY g ORDER BY g")
    by_g: dict[int, list[int]] = {}
    for v, g in rows.values():
        by_g.setdefault(g, []).append(v)
    want = [(g, len(vs), sum(v for v in vs if v is not None) or None) for g, vs in sorted(by_g.items())]
    assert cur.fetchall() == want
    cur.execute(f"SELECT id, v FROM {name} WHERE id = 5000")  # a point read after: short pipeline, right row
    assert cur.fetchall() == [(5000, 5000)]
    conn.commit()
    alive(conn)
    other = connect(analytical_yield=False)
    oc = other.cursor()
    oc.execute(f"SELECT COUNT(*), SUM(v) FROM {name}")
    assert oc.fetchall() == [(len(rows), sum(v for v, _ in rows.values() if v is not None))]
    other.rollback()


def test_point_reads_and_writes_after_yielding_reads_go_back_to_the_short_pipeline(
    connect: Connect, unique_name: Callable[[str], str], fresh: Callable[[], None]
) -> None:
    name = unique_name("ypoint")
    make_table(connect, name, 2000)
    fresh()
    reader = connect(analytical_rest=0)
    optimizers: list[str] = []
    reader.statement_hooks.append(lambda sql, s, e: optimizers.append(sql) if sql.startswith("SET optimizer") else 0)
    reads = Reads(reader, name)
    cur = reader.cursor()
    for i in range(3):
        cur.execute(f"SELECT SUM(v) FROM {name}")
        assert cur.fetchall() == [(sum(range(2001)),)]
        cur.execute(f"SELECT id, v, g FROM {name} WHERE id = %s", (i * 100 + 7,))
        assert cur.fetchall() == [(i * 100 + 7, i * 100 + 7, (i * 100 + 7) % 7)]
    assert not reads.yielded()  # the last, a point read, did not take the turn
    assert any(held for _, held, *_ in reads.sent)
    assert "SET optimizer = 'sequential_pipe'" in optimizers
    short = reader.settings.short_pipeline
    if short:  # analytical reads ran on the connection's second session: its own stayed on the short pipeline
        assert reader._raw.pipeline == short, optimizers
    reader.rollback()
    alive(reader)


def yields_and_answers(reader: tique.Connection, name: str, top: int) -> None:
    """After a failure: the next analytical read of ``name`` (rows 0..top) still yields and answers right, and the
    low-priority thread still runs."""
    reads = Reads(reader, name)
    cur = reader.cursor()
    cur.execute(f"SELECT SUM(v) FROM {name}")
    assert cur.fetchall() == [(sum(range(top + 1)),)]
    assert reads.yielded()
    reader.rollback()
    alive(reader)


@pytest.mark.parametrize(
    "query",
    [
        "SELECT SUM(v / (id - id)) FROM {t}",
        "SELECT SUM(CAST(g AS INT) / (g - g)) FROM {t} GROUP BY g",
        "SELECT SUM(nosuchcolumn) FROM {t}",
        "SELECT SUM(CAST('x' || v AS INT)) FROM {t}",
    ],
)
def test_a_failing_yielding_read_leaves_the_turn_the_thread_and_the_connection(
    connect: Connect, unique_name: Callable[[str], str], fresh: Callable[[], None], query: str
) -> None:
    name = unique_name("yfail")
    make_table(connect, name, 500)
    fresh()
    reader = connect(analytical_rest=0)
    cur = reader.cursor()
    for _ in range(2):  # twice: the thread must survive the first failure
        with pytest.raises(tique.DatabaseError) as raised:
            cur.execute(query.format(t=name))
        assert "tique" not in str(raised.value).lower() or name in str(raised.value)
        alive(reader)
        reader.rollback()
    yields_and_answers(reader, name, 500)


def test_a_yielding_read_of_a_table_another_connection_dropped(
    connect: Connect, unique_name: Callable[[str], str], fresh: Callable[[], None]
) -> None:
    name, other_name = unique_name("ylost"), unique_name("ykept")
    make_table(connect, name, 300)
    make_table(connect, other_name, 300)
    fresh()
    reader = connect(analytical_rest=0)
    cur = reader.cursor()
    cur.execute(f"SELECT COUNT(*) FROM {other_name}")  # the snapshot begins
    assert cur.fetchall() == [(301,)]
    dropper = connect(autocommit=True)
    dropper.cursor().execute(f"DROP TABLE {name}")
    try:
        cur.execute(f"SELECT SUM(v) FROM {name}")
        assert cur.fetchall() == [(sum(range(301)),)]  # read from the snapshot: fine too
    except tique.DatabaseError:
        pass
    alive(reader)
    reader.rollback()
    yields_and_answers(reader, other_name, 300)


def test_many_threads_yielding_at_once_get_their_answers_one_engine_read_at_a_time(
    connect: Connect, unique_name: Callable[[str], str], fresh: Callable[[], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    name = unique_name("ymany")
    make_table(connect, name, 20000)
    fresh()
    readers = [connect(analytical_rest=0) for _ in range(6)]
    db = readers[0].db
    lock = threading.Lock()
    running, most, seen = [0], [0], []
    real_execute = transaction.Transaction.execute

    def counted(self: transaction.Transaction, plan: object, bound: object) -> object:
        if not (isinstance(plan, ReadPlan) and plan.analytical):
            return real_execute(self, plan, bound)  # type: ignore[arg-type]
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
            seen.append((db.workload.turn.locked(), threading.current_thread().name))
        try:
            time.sleep(0.002)  # widen the window two reads would share
            return real_execute(self, plan, bound)  # type: ignore[arg-type]
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(transaction.Transaction, "execute", counted)
    errors: list[BaseException] = []
    answers: list[object] = []

    def work(conn: tique.Connection, k: int) -> None:
        try:
            cur = conn.cursor()
            for j in range(5):
                g = (k + j) % 7
                cur.execute(f"SELECT COUNT(*), SUM(v) FROM {name} WHERE g = %s", (g,))
                expected = [i for i in range(20001) if i % 7 == g]
                got = cur.fetchall()
                answers.append(got)
                assert got == [(len(expected), sum(expected))], (k, j, got)
                if j == 2:
                    with pytest.raises(tique.DatabaseError):
                        cur.execute(f"SELECT SUM(v / (g - g)) FROM {name}")
                conn.rollback()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(r, k), daemon=True) for k, r in enumerate(readers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "deadlock: yielding readers did not finish"
    assert not errors, errors
    assert len(answers) == 30
    assert len(seen) == 36  # 30 answers and 6 divisions by zero
    assert most[0] == 1, "two yielding reads ran in the engine at once"
    assert all(held for held, _ in seen), "a yielding read ran without the turn"
    if db.low_priority is not None:
        assert {thread for _, thread in seen} == {"tique-low-priority"}
    alive(readers[0])


def test_no_rest_never_sleeps(
    connect: Connect, unique_name: Callable[[str], str], fresh: Callable[[], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    name = unique_name("yrest")
    make_table(connect, name, 2000)
    fresh()
    reader = connect(analytical_rest=0)
    reads = Reads(reader, name)
    slept: list[float] = []
    real_sleep = time.sleep

    def spy(seconds: float) -> None:
        if threading.current_thread() is threading.main_thread():
            slept.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(time, "sleep", spy)
    cur = reader.cursor()
    for _ in range(10):
        cur.execute(f"SELECT SUM(v) FROM {name}")
        assert cur.fetchall() == [(sum(range(2001)),)]
        reader.rollback()
    assert reads.yielded()
    assert all(s == 0 for s in slept), slept
    assert reader.db.workload.rested_at <= time.monotonic()


def test_a_long_rest_makes_the_next_reader_wait_but_not_its_own_result(
    connect: Connect, unique_name: Callable[[str], str], fresh: Callable[[], None]
) -> None:
    name = unique_name("yrest2")
    make_table(connect, name, 2000)
    fresh()
    first, second = connect(analytical_rest=0), connect(analytical_rest=0)
    cur = first.cursor()
    cur.execute(f"SELECT SUM(v) FROM {name}")
    cur.fetchall()
    first.db.workload.rested_at = time.monotonic() + 0.5  # as if the last read had run long with a rest
    began = time.monotonic()
    c2 = second.cursor()
    c2.execute(f"SELECT SUM(v) FROM {name}")
    assert c2.fetchall() == [(sum(range(2001)),)]
    assert time.monotonic() - began >= 0.45
    first.rollback()
    second.rollback()
    alive(second)


def test_an_absurd_rest_of_one_connection_does_not_break_the_others(
    connect: Connect, unique_name: Callable[[str], str], fresh: Callable[[], None]
) -> None:
    name = unique_name("yinf")
    make_table(connect, name, 200)
    fresh()
    for absurd in (float("inf"), float("nan"), 1e6):
        with pytest.raises(tique.InterfaceError, match="analytical_rest"):
            connect(analytical_rest=absurd)
    greedy = connect(analytical_rest=10)  # the most it takes
    cur = greedy.cursor()
    cur.execute(f"SELECT SUM(v) FROM {name}")
    assert cur.fetchall() == [(sum(range(201)),)]
    greedy.rollback()
    polite = connect(analytical_rest=0)
    pc = polite.cursor()
    pc.execute(f"SELECT SUM(v) FROM {name}")  # waits out the greedy read's rest: at most 10 times that read
    assert pc.fetchall() == [(sum(range(201)),)]
    polite.rollback()
