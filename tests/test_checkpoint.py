"""The checkpointer: stable versions move to Storage, Cache and metadata shrink, readers never notice.

These tests use their own ``tique serve`` (one per module): the horizon is global to a database, and the
session's shared databases hold other tests' snapshots.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import tique
from tests.conftest import ROOT, ServeProcess, sized, start_serve, thinned
from tests.physical import cache, storage
from tique.checkpoint import STEPS as CHECKPOINT_STEPS
from tique.checkpoint import Checkpointer, CheckpointerBusy, NotATiqueDatabase, check_database, stats
from tique.engine import open_engine
from tique.errors import SerializationFailure

ACCOUNTS = 40
TOTAL = ACCOUNTS * 100


@pytest.fixture
def raw(served: ServeProcess) -> Iterator[tique.engine.RawConnection]:
    engine = open_engine(served.url)
    conn = engine.connect()
    yield conn
    conn.close()


def tables(conn: tique.Connection, suffix: str) -> None:
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE acc_{suffix} (id INT PRIMARY KEY, bal INT)")
    cur.execute(f"CREATE TABLE ol_{suffix} (a INT, b INT, v VARCHAR(10), PRIMARY KEY (a, b))")
    cur.execute(f"CREATE TABLE nk_{suffix} (x INT)")
    conn.commit()
    for i in range(ACCOUNTS):
        cur.execute(f"INSERT INTO acc_{suffix} VALUES (%s, 100)", (i,))
        cur.execute(f"INSERT INTO ol_{suffix} VALUES (%s, %s, 'x')", (i % 3, i))
        cur.execute(f"INSERT INTO nk_{suffix} VALUES (%s)", (i,))
    conn.commit()


def contents(conn: tique.Connection, suffix: str) -> tuple[object, ...]:
    cur = conn.cursor()
    out = []
    for sql in (
        f"SELECT id, bal FROM acc_{suffix} ORDER BY id",
        f"SELECT a, b, v FROM ol_{suffix} ORDER BY a, b",
        f"SELECT x FROM nk_{suffix} ORDER BY x",
        f"SELECT a, COUNT(*), MAX(v) FROM ol_{suffix} GROUP BY a ORDER BY a",  # the analytical formulation
    ):
        cur.execute(sql)
        out.append(cur.fetchall())
    conn.commit()
    return tuple(out)


def checkpoint_cli(url: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``tique checkpoint URL ARGS``, run to its end."""
    return subprocess.run(
        [sys.executable, "-m", "tique.cli", "checkpoint", url, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
    )


def cache_rows(raw: tique.engine.RawConnection, suffix: str) -> int:
    return sum(
        int(raw.execute(f"SELECT COUNT(*) FROM {cache(raw, f'{t}_{suffix}')}").scalar()) for t in ("acc", "ol", "nk")
    )


def test_moves_stable_versions_and_keeps_every_answer(served: ServeProcess, raw: tique.engine.RawConnection) -> None:
    conn = tique.connect(served.url)
    tables(conn, "a")
    cur = conn.cursor()
    for _ in range(3):
        cur.execute("UPDATE acc_a SET bal = bal + 1 WHERE id < 10")
        cur.execute("UPDATE ol_a SET v = 'y' WHERE a = 1")
        conn.commit()
    cur.execute("DELETE FROM acc_a WHERE id = 3")
    cur.execute("DELETE FROM ol_a WHERE a = 2")
    cur.execute("DELETE FROM nk_a WHERE x < 5")
    cur.execute("INSERT INTO acc_a VALUES (1000, 7)")
    conn.commit()
    cur.execute("INSERT INTO acc_a VALUES (2000, 1)")
    conn.rollback()  # rolled back: never visible, cleaned away
    before = contents(conn, "a")
    ckpt = Checkpointer(raw)
    report = ckpt.run_once()
    assert not report.errors, report.errors
    assert report.moved >= ACCOUNTS * 3 - 5 and report.cleaned > 0
    assert contents(conn, "a") == before
    conn.close()  # ends the last snapshot: everything is stable now
    report = ckpt.run_once()
    assert cache_rows(raw, "a") == 0
    assert int(raw.execute(f"SELECT COUNT(*) FROM {storage(raw, 'acc_a')}").scalar()) == ACCOUNTS  # 40 - 1 + 1
    assert int(raw.execute(f"SELECT COUNT(*) FROM {storage(raw, 'nk_a')}").scalar()) == ACCOUNTS - 5
    m = stats(raw)
    assert m["metadata_rows"]["commits"] == 0 and m["metadata_rows"]["outcomes"] == 0
    assert m["cache_rows"]["sys.acc_a"] == 0 and m["last_run"]["errors"] == 0 and m["horizon_lag"] == 0
    again = tique.connect(served.url)
    assert contents(again, "a") == before
    cur = again.cursor()  # and writing goes on over checkpointed data
    cur.execute("UPDATE acc_a SET bal = bal - 7 WHERE id = 1000")
    again.commit()
    cur.execute("SELECT bal FROM acc_a WHERE id = 1000")
    assert cur.fetchall() == [(0,)]
    again.close()


def test_moved_keys_replace_only_their_own_rows_where_others_share_their_probe_value(
    served: ServeProcess, raw: tique.engine.RawConnection
) -> None:
    """The Storage DELETE of moved composite keys first selects by one key column's values (the probe: an IN list
    answered from a hash), which other stored keys share; only the whole key may decide what goes."""
    conn = tique.connect(served.url)
    cur = conn.cursor()
    cur.execute("CREATE TABLE probe_share (a INT, b INT, c INT, v INT, PRIMARY KEY (a, b, c))")
    conn.commit()
    conn.bulk_load("probe_share", [(a, b, c, 0) for a in range(4) for b in range(5) for c in range(3)])
    cur.execute("UPDATE probe_share SET v = 1 WHERE a = 1 AND b = 2 AND c = 0")
    cur.execute("UPDATE probe_share SET v = 2 WHERE a = 3 AND c = 2")
    cur.execute("DELETE FROM probe_share WHERE a = 0 AND b = 4 AND c = 1")
    conn.commit()
    conn.close()
    report = Checkpointer(raw).run_once()
    assert not report.errors, report.errors
    stored = sorted(raw.execute(f"SELECT a, b, c, v FROM {storage(raw, 'probe_share')}").rows)
    expected = sorted(
        (a, b, c, 1 if (a, b, c) == (1, 2, 0) else 2 if (a, c) == (3, 2) else 0)
        for a in range(4)
        for b in range(5)
        for c in range(3)
        if (a, b, c) != (0, 4, 1)
    )
    assert stored == expected
    assert int(raw.execute(f"SELECT COUNT(*) FROM {cache(raw, 'probe_share')}").scalar()) == 0


def test_running_snapshot_keeps_its_versions(served: ServeProcess, raw: tique.engine.RawConnection) -> None:
    setup = tique.connect(served.url)
    tables(setup, "b")
    setup.close()
    reader, writer = tique.connect(served.url), tique.connect(served.url)
    rc, wc = reader.cursor(), writer.cursor()
    rc.execute("SELECT SUM(bal) FROM acc_b")
    assert rc.fetchall() == [(TOTAL,)]
    wc.execute("UPDATE acc_b SET bal = bal + 1")
    writer.commit()
    report = Checkpointer(raw).run_once()
    assert report.horizon < report.sts  # the reader's snapshot holds the horizon back
    rc.execute("SELECT SUM(bal), MIN(bal) FROM acc_b")
    assert rc.fetchall() == [(TOTAL, 100)]  # it still reads its snapshot
    reader.commit()
    reader.close()
    writer.close()
    report = Checkpointer(raw).run_once()
    assert report.horizon == report.sts and cache_rows(raw, "b") == 0
    check = tique.connect(served.url)
    assert contents(check, "b")[0] == [(i, 101) for i in range(ACCOUNTS)]
    check.close()


def test_an_expired_snapshot_aborts_instead_of_reading_moved_versions(
    served: ServeProcess, raw: tique.engine.RawConnection
) -> None:
    setup = tique.connect(served.url)
    tables(setup, "c")
    setup.close()
    reader = tique.connect(served.url, snapshot_lease_ms=300)
    writer = tique.connect(served.url)
    rc = reader.cursor()
    rc.execute("SELECT SUM(bal) FROM acc_c")
    writer.cursor().execute("UPDATE acc_c SET bal = 0")
    writer.commit()
    writer.close()
    time.sleep(0.5)  # the reader stalls past its lease; the checkpointer folds the update
    Checkpointer(raw).run_once()
    assert cache_rows(raw, "c") == 0
    with pytest.raises(SerializationFailure, match="snapshot lease"):
        rc.execute("SELECT SUM(bal) FROM acc_c")  # it would have read 0: it must not read at all
    reader.rollback()
    rc.execute("SELECT SUM(bal) FROM acc_c")
    assert rc.fetchall() == [(0,)]
    reader.close()


def test_invariants_hold_while_checkpoints_interleave(served: ServeProcess, raw: tique.engine.RawConnection) -> None:
    """Writers move money between accounts, readers check in multi-statement transactions that the total
    never changes, and a checkpointer runs every 50 ms."""
    setup = tique.connect(served.url)
    tables(setup, "d")
    setup.close()
    stop = threading.Event()
    broken: list[str] = []
    counts = {"commits": 0, "reads": 0}

    def writer(seed: int) -> None:
        rng = random.Random(seed)
        conn = tique.connect(served.url)
        cur = conn.cursor()
        while not stop.is_set():
            a, b = rng.sample(range(ACCOUNTS), 2)
            try:
                cur.execute("UPDATE acc_d SET bal = bal - 1 WHERE id = %s", (a,))
                cur.execute("UPDATE acc_d SET bal = bal + 1 WHERE id = %s", (b,))
                if rng.random() < 0.2:
                    cur.execute("DELETE FROM nk_d WHERE x = %s", (a,))
                    cur.execute("INSERT INTO nk_d VALUES (%s)", (a,))
                conn.commit()
                counts["commits"] += 1
            except SerializationFailure:
                conn.rollback()
        conn.close()

    def reader() -> None:
        conn = tique.connect(served.url)
        cur = conn.cursor()
        while not stop.is_set():
            cur.execute("SELECT SUM(bal) FROM acc_d")
            first = cur.fetchall()[0][0]
            cur.execute("SELECT bal FROM acc_d")
            second = sum(r[0] for r in cur.fetchall())
            cur.execute("SELECT COUNT(*) FROM acc_d WHERE id >= 0")
            n = cur.fetchall()[0][0]
            cur.execute("SELECT COUNT(*) FROM nk_d")
            k = cur.fetchall()[0][0]
            conn.commit()
            counts["reads"] += 1
            if (first, second, n, k) != (TOTAL, TOTAL, ACCOUNTS, ACCOUNTS):
                broken.append(f"sum {first}/{second}, {n} accounts, {k} rows")
        conn.close()

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(2)] + [threading.Thread(target=reader)]
    for t in threads:
        t.start()
    ckpt = Checkpointer(raw)
    reports = []
    deadline = time.monotonic() + sized(5, 12)
    try:
        while time.monotonic() < deadline and not broken:
            reports.append(ckpt.run_once())
            time.sleep(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    assert not broken, broken[:5]
    moving = [r for r in reports if r.moved]
    assert len(moving) >= 10, [r.line() for r in reports[-5:]]
    assert counts["commits"] >= 50 and counts["reads"] >= 20, counts
    assert not [r for r in reports if r.errors and "deferred" not in " ".join(r.errors)]
    final = tique.connect(served.url)
    assert contents(final, "d")[0][-1][0] == ACCOUNTS - 1
    cur = final.cursor()
    cur.execute("SELECT SUM(bal), COUNT(*) FROM acc_d")
    assert cur.fetchall() == [(TOTAL, ACCOUNTS)]
    final.close()


def test_two_checkpointers_take_turns(served: ServeProcess, raw: tique.engine.RawConnection) -> None:
    other = open_engine(served.url).connect()
    first, second = Checkpointer(raw), Checkpointer(other)
    first.acquire()
    with pytest.raises(CheckpointerBusy, match="another checkpointer"):
        second.run_once()
    cli = checkpoint_cli(served.url, "--once")
    assert cli.returncode == 2 and "another checkpointer" in cli.stderr
    first.release()
    assert not second.run_once().errors
    other.close()


def test_refuses_a_database_without_tique(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    proc = start_serve(plain)  # tique serve installs its tables: drop them to make a plain MonetDB database
    try:
        engine = open_engine(proc.url)
        conn = engine.connect()
        conn.execute("DROP TABLE tique.commits")
        with pytest.raises(NotATiqueDatabase, match="not a tique database"):
            check_database(conn)
        conn.close()
        cli = checkpoint_cli(proc.url, "--once")
        assert cli.returncode == 3 and "not a tique database" in cli.stderr, cli.stderr
    finally:
        proc.stop()
    missing = checkpoint_cli(f"monetdbe://{tmp_path / 'nope'}", "--once")
    assert missing.returncode == 1 and "does not exist" in missing.stderr


STEPS = list(CHECKPOINT_STEPS)


# `make test`: the first and the last step and every other one between them (tests/adversarial/
# test_counters_never_go_back.py's kills take the others); `make test-long`: every step
@pytest.mark.parametrize("step", thinned(STEPS, [0, 1, 3, 5, 7, len(STEPS) - 1]))
def test_checkpointer_killed_mid_run_resumes(served: ServeProcess, step: str) -> None:
    suffix = f"k{STEPS.index(step)}"
    conn = tique.connect(served.url)
    tables(conn, suffix)
    cur = conn.cursor()
    for i in range(3):
        cur.execute(f"UPDATE acc_{suffix} SET bal = bal + 1 WHERE id >= %s", (i * 10,))
        cur.execute(f"DELETE FROM nk_{suffix} WHERE x = %s", (i,))
        conn.commit()
    expected = contents(conn, suffix)
    conn.close()
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "checkpoint_client.py"), served.url, step],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith(f"paused at {step}"), (line, proc.stderr.read() if proc.stderr else "")
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    check = tique.connect(served.url)
    assert contents(check, suffix) == expected  # a half-done checkpoint changes no answer
    check.close()
    # the dead one's lock is free once its lease ran out: --wait takes it then
    resumed = checkpoint_cli(served.url, "--once", "--wait", timeout=90)
    assert resumed.returncode == 0, resumed.stderr
    check = tique.connect(served.url)
    assert contents(check, suffix) == expected
    check.close()
    engine = open_engine(served.url)
    raw = engine.connect()
    assert cache_rows(raw, suffix) == 0
    raw.close()


def test_serve_killed_under_load_with_its_checkpointer(tmp_path: Path) -> None:
    """SIGKILL ``tique serve`` (running its checkpointer every 100 ms) under three writers; after the restart,
    every acknowledged commit is there, nothing unacknowledged is (except commits whose outcome the client
    could not learn), the transfers' total holds, and checkpointing goes on."""
    proc = start_serve(tmp_path / "db", args=("--checkpoint-interval", "0.1"))
    setup = tique.connect(proc.url)
    tables(setup, "s")
    setup.cursor().execute("CREATE TABLE log_s (id INT PRIMARY KEY, w INT)")
    setup.commit()
    setup.close()
    acked: set[int] = set()
    doubt: set[int] = set()

    def writer(w: int) -> None:
        rng = random.Random(w)
        conn = tique.connect(proc.url)
        cur = conn.cursor()
        for i in range(1_000_000):
            tid = w * 1_000_000 + i
            a, b = rng.sample(range(ACCOUNTS), 2)
            try:
                cur.execute("UPDATE acc_s SET bal = bal - 1 WHERE id = %s", (a,))
                cur.execute("UPDATE acc_s SET bal = bal + 1 WHERE id = %s", (b,))
                cur.execute("INSERT INTO log_s VALUES (%s, %s)", (tid, w))
            except SerializationFailure:
                conn.rollback()
                continue
            except tique.Error:
                return  # the server is gone before COMMIT: nothing of this transaction may survive
            try:
                conn.commit()
                acked.add(tid)
            except SerializationFailure:
                pass
            except tique.Error:
                doubt.add(tid)  # the server died during COMMIT: either outcome is allowed
                return

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
    for t in threads:
        t.start()
    began = time.monotonic()
    watcher = open_engine(proc.url).connect()
    while True:  # killed once the load did what the checks below need (make test-long: after 5 s at least)
        runs = int(watcher.execute("SELECT COUNT(*) FROM tique.checkpoints WHERE moved > 0").scalar())
        waited = time.monotonic() - began
        if (runs >= 3 and len(acked) >= 30 and waited >= sized(0, 5)) or waited > 60:
            break
        time.sleep(0.2)
    log = watcher.execute("SELECT * FROM tique.checkpoints ORDER BY started_ms DESC LIMIT 5").rows
    watcher.close()
    if runs < 3:
        proc.proc.send_signal(signal.SIGUSR1)  # every thread's stack on its stderr, to say where it stood
        time.sleep(1)
    proc.stop(signal.SIGKILL)
    for t in threads:
        t.join(60)
    assert proc.proc.stderr is not None
    assert runs >= 3 and len(acked) >= 30, (runs, len(acked), log, proc.proc.stderr.read()[-6000:])
    proc = start_serve(tmp_path / "db", args=("--checkpoint-interval", "0.1"))
    try:
        check = tique.connect(proc.url)
        cur = check.cursor()
        cur.execute("SELECT id FROM log_s")
        present = {r[0] for r in cur.fetchall()}
        assert acked <= present, sorted(acked - present)[:10]
        assert present <= acked | doubt, sorted(present - acked - doubt)[:10]
        cur.execute("SELECT SUM(bal), COUNT(*) FROM acc_s")
        assert cur.fetchall() == [(TOTAL, ACCOUNTS)]
        check.commit()
        check.close()
        raw = open_engine(proc.url).connect()
        deadline = time.monotonic() + 30
        while cache_rows(raw, "s") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert cache_rows(raw, "s") == 0  # the restarted checkpointer finished what the killed one started
        raw.close()
        again = tique.connect(proc.url)
        cur = again.cursor()
        cur.execute("SELECT id FROM log_s")
        assert {r[0] for r in cur.fetchall()} == present  # all in Storage now, the same answer
        again.close()
    finally:
        proc.stop()
    # and durable: a clean restart finds every row in Storage. (Right after the checkpoints, a plain scan or
    # COUNT(*) of the Storage table sometimes came up short on this kernel: README, "Engine facts".)
    proc = start_serve(tmp_path / "db")
    try:
        raw = open_engine(proc.url).connect()
        assert {r[0] for r in raw.execute(f"SELECT id FROM {storage(raw, 'log_s')}").rows} == present
        raw.close()
    finally:
        proc.stop()
