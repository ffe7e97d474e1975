"""Every race of the commit protocol we can think of, forced with pauses between its steps.

A committer is paused at a step (recorded, published, decided) while others commit, read, or wait; the
outcome must be what Snapshot Isolation with first-committer-wins says, and visibility must follow commit
order. Each test runs on both sequencers (tique/commit.py is one protocol over either): the C module on the
embedded kernel, and the SQL sequencer on a `tique serve` of its own (the two never share a database: their
timestamps would collide).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

import tique
from tests.conftest import ServeProcess, closing_connections, start_serve
from tests.pauses import Pause
from tique.errors import OperationalError, SerializationFailure
from tique.settings import COMMIT_LEASE_MS

Names = Callable[[str], str]


Connect = Callable[..., tique.Connection]


@dataclass(frozen=True)
class Target:
    url: str
    settings: dict[str, Any]

    def connect(self, **settings: Any) -> tique.Connection:
        return tique.connect(self.url, **{**self.settings, **settings})


@pytest.fixture(scope="module")
def sql_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    server = start_serve(tmp_path_factory.mktemp("sqlseq") / "db")  # installs the SQL sequencer too
    yield server
    server.stop()


@pytest.fixture(params=["c", "sql"])
def target(request: pytest.FixtureRequest, embedded_url: str) -> Target:
    if request.param == "c":
        return Target(embedded_url, {})
    return Target(request.getfixturevalue("sql_server").url, {"sequencer": "sql"})


@pytest.fixture
def tq(target: Target) -> Iterator[Connect]:
    """Tique connections on the target database, closed after the test: the kernel admits 64 sessions per
    process, and a connection paused in a step hook is still referenced when the test ends."""
    yield from closing_connections(target.url, **target.settings)


@pytest.fixture
def table(target: Target, unique_name: Names) -> str:
    name = unique_name("race")
    conn = target.connect()
    conn.cursor().execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT)")
    conn.cursor().executemany(f"INSERT INTO {name} VALUES (%s, 0)", [(k,) for k in range(1, 10)])
    conn.commit()
    conn.close()
    return name


def commit_in_thread(conn: tique.Connection, outcome: dict[str, object]) -> threading.Thread:
    def run() -> None:
        t0 = time.monotonic()
        try:
            conn.commit()
            outcome["result"] = "committed"
        except SerializationFailure:
            outcome["result"] = "aborted"
        except Exception as exc:  # pragma: no cover - reported by the assertion
            outcome["result"] = exc
        outcome["elapsed"] = time.monotonic() - t0

    th = threading.Thread(target=run)
    th.start()
    return th


def read(target: Target, sql: str) -> object:
    conn = target.connect()
    cur = conn.cursor()
    cur.execute(sql)
    value = cur.fetchone()
    conn.close()
    return None if value is None else value[0]


def test_later_committer_waits_for_an_earlier_one_that_has_not_published(
    hooks, tq: Connect, target: Target, table: str
) -> None:  # type: ignore[no-untyped-def]
    # T1 takes its timestamp and writes its record, then stalls before publishing. T2 (a later timestamp,
    # same key) must not certify until T1 is published, and then must see T1's write-set and abort.
    t1, t2 = tq(), tq()
    t1.cursor().execute(f"UPDATE {table} SET v = 1 WHERE k = 1")
    pause = Pause("recorded", t1)
    hooks.append(pause)
    t2.cursor().execute(f"UPDATE {table} SET v = 2 WHERE k = 1")
    out1: dict[str, object] = {}
    out2: dict[str, object] = {}
    th1 = commit_in_thread(t1, out1)
    assert pause.reached.wait(10), out1
    th2 = commit_in_thread(t2, out2)
    time.sleep(0.4)
    assert "result" not in out2, "T2 certified before T1 published"
    pause.release.set()
    th1.join(10)
    th2.join(10)
    assert out1["result"] == "committed" and out2["result"] == "aborted"
    assert read(target, f"SELECT v FROM {table} WHERE k = 1") == 1


def test_a_committing_transaction_counts_as_a_conflict(hooks, tq: Connect, target: Target, table: str) -> None:  # type: ignore[no-untyped-def]
    # T1 is published but not yet decided; T2 (later, same key) certifies meanwhile: first committer wins,
    # so T2 aborts; T1 then commits.
    t1, t2 = tq(), tq()
    t1.cursor().execute(f"UPDATE {table} SET v = 1 WHERE k = 2")
    pause = Pause("published", t1)
    hooks.append(pause)
    t2.cursor().execute(f"UPDATE {table} SET v = 2 WHERE k = 2")
    out1: dict[str, object] = {}
    out2: dict[str, object] = {}
    th1 = commit_in_thread(t1, out1)
    assert pause.reached.wait(10), out1
    th2 = commit_in_thread(t2, out2)
    th2.join(10)
    assert out2["result"] == "aborted"
    pause.release.set()
    th1.join(10)
    assert out1["result"] == "committed"
    assert read(target, f"SELECT v FROM {table} WHERE k = 2") == 1


def test_decided_but_not_advanced_is_invisible_and_holds_later_commits(
    hooks, tq: Connect, target: Target, table: str
) -> None:  # type: ignore[no-untyped-def]
    # T1 has written its committed outcome but not advanced. A reader must not see it yet; T2 (disjoint
    # key, later timestamp) commits but only returns once T1 is visible too (commit order).
    t1, t2 = tq(), tq()
    t1.cursor().execute(f"UPDATE {table} SET v = 1 WHERE k = 3")
    pause = Pause("decided", t1)
    hooks.append(pause)
    t2.cursor().execute(f"UPDATE {table} SET v = 2 WHERE k = 4")
    out1: dict[str, object] = {}
    out2: dict[str, object] = {}
    th1 = commit_in_thread(t1, out1)
    assert pause.reached.wait(10), out1
    assert read(target, f"SELECT v FROM {table} WHERE k = 3") == 0
    th2 = commit_in_thread(t2, out2)
    time.sleep(0.4)
    assert "result" not in out2, "T2 became visible before T1, which committed first"
    assert read(target, f"SELECT v FROM {table} WHERE k = 4") == 0
    pause.release.set()
    th1.join(10)
    th2.join(10)
    assert out1["result"] == out2["result"] == "committed"
    assert read(target, f"SELECT SUM(v) FROM {table} WHERE k IN (3, 4)") == 3


def test_a_dead_committer_is_abandoned_after_its_lease(hooks, tq: Connect, target: Target, table: str) -> None:  # type: ignore[no-untyped-def]
    # T1 stalls after writing its record (as if its client died). After the lease, T2 goes on; when T1
    # wakes up, it learns it was abandoned and aborts: nothing of it is visible.
    t1 = tq(lease_ms=300)
    t2 = tq(lease_ms=300)
    t1.cursor().execute(f"UPDATE {table} SET v = 1 WHERE k = 5")
    pause = Pause("recorded", t1)
    hooks.append(pause)
    t2.cursor().execute(f"UPDATE {table} SET v = 2 WHERE k = 6")
    out1: dict[str, object] = {}
    out2: dict[str, object] = {}
    th1 = commit_in_thread(t1, out1)
    assert pause.reached.wait(10), out1
    th2 = commit_in_thread(t2, out2)
    th2.join(10)
    assert out2["result"] == "committed" and 0.25 <= out2["elapsed"] < 5  # type: ignore[operator]
    pause.release.set()
    th1.join(10)
    assert out1["result"] == "aborted"
    assert read(target, f"SELECT v FROM {table} WHERE k = 5") == 0
    assert read(target, f"SELECT v FROM {table} WHERE k = 6") == 2
    t1.db.apply_lease(t1._raw, COMMIT_LEASE_MS)


def test_a_waiter_gets_an_error_not_a_hang(hooks, tq: Connect, target: Target, table: str) -> None:  # type: ignore[no-untyped-def]
    # T1 took its timestamp but stalls before publishing, within its lease (10 s). T2 waits for it with a
    # short timeout and gets a clear error naming the stuck commit; it is rolled back, nothing is visible.
    t1 = tq()
    t2 = tq(publish_timeout_ms=300)
    t1.cursor().execute(f"UPDATE {table} SET v = 1 WHERE k = 7")
    pause = Pause("recorded", t1)
    hooks.append(pause)
    t2.cursor().execute(f"UPDATE {table} SET v = 2 WHERE k = 8")
    out1: dict[str, object] = {}
    th1 = commit_in_thread(t1, out1)
    assert pause.reached.wait(10), out1
    with pytest.raises(OperationalError, match="waited 300 ms for commit") as info:
        t2.commit()
    assert info.value.sqlstate == "HYT00"
    pause.release.set()
    th1.join(10)
    assert out1["result"] == "committed"
    assert read(target, f"SELECT v FROM {table} WHERE k = 8") == 0


def test_a_waiter_settles_a_decided_predecessor_whose_client_stalled(
    hooks, tq: Connect, target: Target, table: str
) -> None:  # type: ignore[no-untyped-def]
    if target.settings.get("sequencer") == "sql":
        pytest.skip("the SQL sequencer keeps no verdict: only its owner or recovery settles a DECIDING commit")
    # T1 wrote its committed outcome, then stalled before advancing (as if its client died there). The module
    # never abandons it (its outcome is written); T2 sees that outcome, settles T1 for it, and commits.
    t1 = tq()
    t2 = tq(advance_timeout_ms=300)
    t1.cursor().execute(f"UPDATE {table} SET v = 10 WHERE k = 7")
    pause = Pause("decided", t1)
    hooks.append(pause)
    t2.cursor().execute(f"UPDATE {table} SET v = 20 WHERE k = 8")
    out1: dict[str, object] = {}
    th1 = commit_in_thread(t1, out1)
    assert pause.reached.wait(10), out1
    t2.commit()
    assert read(target, f"SELECT v FROM {table} WHERE k = 7") == 10  # T1 is visible: it committed
    pause.release.set()
    th1.join(10)
    assert out1["result"] == "committed"
    assert read(target, f"SELECT SUM(v) FROM {table} WHERE k IN (7, 8)") == 30


def test_many_concurrent_increments_lose_nothing(target: Target, table: str) -> None:
    # 4 threads x 25 increments of one counter with retries: every committed increment is there.
    def worker() -> None:
        conn = target.connect()
        for _ in range(25):
            conn.run(lambda c: c.cursor().execute(f"UPDATE {table} SET v = v + 1 WHERE k = 9"), retries=200)
        conn.close()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert read(target, f"SELECT v FROM {table} WHERE k = 9") == 100
