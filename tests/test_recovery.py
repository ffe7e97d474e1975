"""Crashes with SIGKILL, not polite shutdowns, at every step of COMMIT; then recovery.

Whatever step a client dies at, afterwards: every transaction whose commit returned is there; one that died
before its outcome was written left nothing; one that died after it is committed (its client never heard,
the outcome was unknown to it); and the database keeps committing.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tique
from tests.conftest import ROOT, start_serve, thinned
from tique.errors import CommitOutcomeUnknown
from tique.transaction import step_hooks

STEPS = ["flushed", "sent", "recorded", "published", "decided", "advanced"]
VICTIM_COMMITTED = {s: s in ("decided", "advanced") for s in STEPS}


def run_script(name: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "tests" / name), *args], capture_output=True, text=True, cwd=ROOT, timeout=timeout
    )


def expected_rows(victim_committed: bool) -> list[list[int]]:
    rows = [[1, 1], [2, 1000 if victim_committed else 0], [3, 0]]
    return [*rows, [99, 99]] if victim_committed else rows


# `make test` kills each client at three of the six steps, an uncommitted and a committed one among them, the two
# tests' steps together every step; `make test-long` at every step
@pytest.mark.parametrize("step", thinned(STEPS, [0, 2, 4]))
def test_embedded_client_killed_during_commit(tmp_path: Path, step: str) -> None:
    url = f"monetdbe://{tmp_path / 'db'}"
    crashed = run_script("crash_client.py", url, step)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert "ready" in crashed.stdout and "committed" not in crashed.stdout
    checked = run_script("check_client.py", url)  # a new process: the database reopens and recovery runs
    assert checked.returncode == 0, checked.stderr
    state = json.loads(checked.stdout)
    assert state["rows"] == expected_rows(VICTIM_COMMITTED[step])
    assert state["undecided"] == 0  # recovery aborted what had no outcome
    assert state["after"] == 1  # and the database commits again


@pytest.mark.parametrize("step", thinned(STEPS, [1, 3, 5]))
def test_client_killed_while_the_server_keeps_running(tmp_path: Path, step: str) -> None:
    server = start_serve(tmp_path / "db")
    try:
        crashed = run_script("crash_client.py", server.url, step)
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr
        time.sleep(0.6)  # the dead client's lease (500 ms): until then its commit may still count
        # no restart: the others must get past the dead client (lease, or settling its recorded outcome)
        checked = run_script("check_client.py", server.url)
        assert checked.returncode == 0, checked.stderr
        state = json.loads(checked.stdout)
        assert state["rows"] == expected_rows(VICTIM_COMMITTED[step])
        assert state["after"] == 1
    finally:
        server.stop()
    server = start_serve(tmp_path / "db")  # and after a restart, the same
    try:
        checked = run_script("check_client.py", server.url)
        state = json.loads(checked.stdout)
        assert state["rows"][1] == [2, 1001 if VICTIM_COMMITTED[step] else 1] and state["undecided"] == 0
    finally:
        server.stop()


@pytest.mark.parametrize("step", thinned(["recorded", "published", "decided"], [0, 2]))  # unknown, and committed
def test_server_killed_during_commit(tmp_path: Path, step: str) -> None:
    # before the outcome is recorded the client cannot know it: CommitOutcomeUnknown, and recovery aborts it.
    # Once the committed outcome is recorded, the transaction is committed: commit() returns.
    server = start_serve(tmp_path / "db")
    conn = tique.connect(server.url)
    cur = conn.cursor()
    cur.execute("CREATE TABLE acct (id INT PRIMARY KEY, v INT)")
    cur.executemany("INSERT INTO acct VALUES (%s, 0)", [(i,) for i in range(1, 4)])
    conn.commit()
    cur.execute("UPDATE acct SET v = 1000 WHERE id = 2")

    def kill_server(s: str, _txn: object) -> None:
        if s == step:
            server.proc.send_signal(signal.SIGKILL)
            server.proc.wait(30)

    step_hooks.append(kill_server)
    try:
        if step == "decided":
            conn.commit()
        else:
            with pytest.raises(CommitOutcomeUnknown, match="outcome is unknown"):
                conn.commit()
    finally:
        step_hooks.clear()
    conn.close()
    restarted = start_serve(tmp_path / "db")
    try:
        checked = run_script("check_client.py", restarted.url)
        assert checked.returncode == 0, checked.stderr
        state = json.loads(checked.stdout)
        # recorded/published: no outcome, recovery aborted it; decided: its committed outcome stands
        assert state["rows"][1] == [2, 1000 if step == "decided" else 0]
        assert state["undecided"] == 0 and state["after"] == 1
    finally:
        restarted.stop()
