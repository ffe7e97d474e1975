"""The counters and the commit-order advance, for both sequencers, embedded and over MAPI."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from tests.conftest import ServeProcess, sized, start_serve
from tique.engine import RawConnection, open_engine
from tique.engine.base import Engine
from tique.errors import NotSupportedError, OperationalError, SerializationFailure
from tique.sequencer import ABANDONED, DECIDING, CSequencer, Sequencer, SqlSequencer, make_sequencer


@pytest.fixture(scope="module")
def sql_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """A throw-away server for the pure-SQL sequencer: concurrent NEXT VALUE FOR corrupts the write-ahead log
    of this kernel (README), and its background flush then kills the process that owns the database. It must
    never be the test session's own database."""
    proc = start_serve(tmp_path_factory.mktemp("sqlseq") / "sqlseq")
    yield proc
    proc.stop()


@pytest.fixture(params=["c", "sql"])
def seq_engine(request: pytest.FixtureRequest, embedded_engine: Engine) -> Engine:
    if request.param == "c":
        return embedded_engine
    return open_engine(request.getfixturevalue("sql_server").url)


@pytest.fixture
def seq(seq_engine: Engine) -> Iterator[Sequencer]:
    conn = seq_engine.connect()
    sequencer = make_sequencer("c" if seq_engine.kind == "embedded" else "sql", lease_ms=60000, unsafe_sequences=True)
    sequencer.install(conn)
    conn.close()
    yield sequencer


# values each of four threads or processes takes at once (500 under make test-long)
EACH = sized(250, 500)


def settle(seq: Sequencer, conn: RawConnection, *cts: int) -> None:
    """Leave no hole behind for the next test: abandon what is unsettled, then advance."""
    for c in cts:
        seq.abandon(conn, c)
    for c in cts:
        seq.advance(conn, c, 5000)


def test_threads_get_unique_increasing_values(seq: Sequencer, seq_engine: Engine) -> None:
    results: dict[int, list[tuple[int, int]]] = {}

    def work(n: int) -> None:
        conn = seq_engine.connect()
        results[n] = [(seq.next_txid(conn), seq.next_cts(conn)) for _ in range(EACH)]
        settle(seq, conn, *(c for _, c in results[n]))
        conn.close()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for kind in (0, 1):
        values = [pair[kind] for n in results for pair in results[n]]
        assert len(values) == 4 * EACH and len(set(values)) == 4 * EACH
        for n in results:
            mine = [pair[kind] for pair in results[n]]
            assert mine == sorted(mine) and len(set(mine)) == len(mine)


CLIENT = """
import sys, pymonetdb
port, db, kind, each = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
conn = pymonetdb.connect(database=db, hostname="127.0.0.1", port=port, username="monetdb",
                         password="monetdb", autocommit=True)
cur = conn.cursor()
sql = "SELECT tique.next_cts()" if kind == "c" else "SELECT NEXT VALUE FOR tique.cts_seq"
out = []
for _ in range(each):
    cur.execute(sql)
    out.append(cur.fetchone()[0])
print(" ".join(map(str, out)))
"""


@pytest.mark.parametrize("kind", ["c", "sql"])
def test_processes_over_mapi_get_unique_increasing_values(request: pytest.FixtureRequest, kind: str) -> None:
    server = request.getfixturevalue("server" if kind == "c" else "sql_server")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLIENT, str(server.port), server.directory.name, kind, str(EACH)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    per_process = [[int(v) for v in out.split()] for out in outputs]
    every = [v for values in per_process for v in values]
    assert len(every) == 4 * EACH and len(set(every)) == 4 * EACH
    for values in per_process:
        assert values == sorted(values)
    # settle what the clients took, so the server's snapshot can move on
    from tique.engine import open_engine

    conn = open_engine(server.url).connect()
    sequencer = make_sequencer(kind, unsafe_sequences=True)  # type: ignore[arg-type]
    settle(sequencer, conn, *sorted(every))
    assert sequencer.sts(conn) >= max(every)
    conn.close()


def test_advance_follows_commit_order_when_callers_arrive_out_of_order(seq: Sequencer, seq_engine: Engine) -> None:
    conn = seq_engine.connect()
    c1, c2, c3 = (seq.next_cts(conn) for _ in range(3))
    base = seq.sts(conn)
    assert base == c1 - 1
    returned: dict[int, tuple[float, int]] = {}
    seen_sts: list[int] = []

    def advance(c: int, delay: float) -> None:
        time.sleep(delay)
        own = seq_engine.connect()
        sts = seq.advance(own, c, 10000)
        returned[c] = (time.monotonic(), sts)
        own.close()

    started = time.monotonic()
    threads = [threading.Thread(target=advance, args=(c, d)) for c, d in ((c3, 0.0), (c2, 0.3), (c1, 0.6))]
    for th in threads:
        th.start()
    while any(th.is_alive() for th in threads):
        seen_sts.append(seq.sts(conn))
        time.sleep(0.01)
    for th in threads:
        th.join()
    seen_sts.append(seq.sts(conn))
    # the snapshot never jumped ahead of an unsettled predecessor
    assert seen_sts == sorted(seen_sts)
    first_half = [s for s in seen_sts[: len(seen_sts) // 3]]
    assert all(s == base for s in first_half)
    assert seen_sts[-1] == c3
    # c3 arrived first but returned only after c1 (the last to arrive) settled
    assert returned[c3][0] - started >= 0.55
    assert all(returned[c][1] >= c for c in (c1, c2, c3))
    conn.close()


def test_waiter_whose_predecessor_never_arrives_times_out(seq: Sequencer, seq_engine: Engine) -> None:
    conn = seq_engine.connect()
    c1, c2 = seq.next_cts(conn), seq.next_cts(conn)
    t0 = time.monotonic()
    with pytest.raises(OperationalError) as info:
        seq.advance(conn, c2, 300)
    assert 0.25 <= time.monotonic() - t0 < 5
    assert info.value.sqlstate == "HYT00"
    assert f"commit {c1}" in str(info.value)
    seq.advance(conn, c1, 5000)  # the predecessor shows up after all: both settle in order
    assert seq.sts(conn) == c2
    conn.close()


def test_publish_waits_for_every_earlier_timestamp(seq: Sequencer, seq_engine: Engine) -> None:
    conn = seq_engine.connect()
    c1, c2 = seq.next_cts(conn), seq.next_cts(conn)
    done = threading.Event()

    def late_publish() -> None:
        time.sleep(0.3)
        own = seq_engine.connect()
        seq.publish(own, c1, 5000)
        done.set()
        own.close()

    th = threading.Thread(target=late_publish)
    th.start()
    seq.publish(conn, c2, 5000)
    assert done.is_set() or (th.join(5) is None and done.is_set())
    th.join()
    settle(seq, conn, c1, c2)
    conn.close()


def test_stale_predecessor_is_abandoned_after_its_lease(embedded_engine: Engine, sql_server: ServeProcess) -> None:
    pairs = (
        (CSequencer(), embedded_engine),
        (SqlSequencer(lease_ms=200, unsafe_sequences=True), open_engine(sql_server.url)),
    )
    for seq, engine in pairs:
        conn = engine.connect()
        seq.install(conn)
        if isinstance(seq, CSequencer):
            old = seq.set_lease(conn, 200)
        dead, alive = seq.next_cts(conn), seq.next_cts(conn)
        t0 = time.monotonic()
        seq.publish(conn, alive, 5000)  # the dead client's slot is abandoned after 200 ms
        assert 0.15 <= time.monotonic() - t0 < 4
        if isinstance(seq, CSequencer):
            assert seq.state(conn, dead) == ABANDONED
        with pytest.raises(SerializationFailure, match="abandoned"):
            seq.publish(conn, dead, 1000)  # the late owner learns it lost
        seq.advance(conn, alive, 5000)
        assert seq.sts(conn) >= alive
        if isinstance(seq, CSequencer):
            seq.set_lease(conn, old)
        conn.close()


def test_a_deciding_predecessor_is_never_abandoned(embedded_engine: Engine, sql_server: ServeProcess) -> None:
    pairs = (
        (CSequencer(), embedded_engine),
        (SqlSequencer(lease_ms=100, unsafe_sequences=True), open_engine(sql_server.url)),
    )
    for seq, engine in pairs:
        conn = engine.connect()
        if isinstance(seq, CSequencer):
            old = seq.set_lease(conn, 100)
        deciding, waiter = seq.next_cts(conn), seq.next_cts(conn)
        seq.publish(conn, deciding, 1000)
        seq.decide(conn, deciding)
        with pytest.raises(OperationalError, match=f"commit {deciding}"):
            seq.advance(conn, waiter, 500)
        if isinstance(seq, CSequencer):
            assert seq.state(conn, deciding) == DECIDING
            seq.set_lease(conn, old)
        assert seq.abandon(conn, deciding) is (not isinstance(seq, SqlSequencer))
        seq.advance(conn, deciding, 1000)
        seq.advance(conn, waiter, 1000)
        conn.close()


def test_sql_sequencer_is_refused_on_this_kernel(embedded_engine: Engine) -> None:
    conn = embedded_engine.connect()
    with pytest.raises(NotSupportedError, match="write-ahead log"):
        SqlSequencer().install(conn)
    conn.close()


def test_reset_restores_counters(embedded_engine: Engine) -> None:
    seq = CSequencer()
    conn = embedded_engine.connect()
    txid, cts = seq.counters(conn)
    seq.reset(conn, txid + 100, cts + 100)
    assert seq.next_txid(conn) == txid + 101
    assert seq.sts(conn) == cts + 100
    c = seq.next_cts(conn)
    assert c == cts + 101
    seq.advance(conn, c, 1000)
    conn.close()
