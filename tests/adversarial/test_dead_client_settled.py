"""A client that dies in the middle of COMMIT does not stop the checkpointer: while the database stays open,
its commit is settled by lease (aborted if it had not decided, made visible if its outcome was recorded), and
the Cache below and including its id is cleaned within the lease plus a few runs."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tique
from tests.conftest import ROOT, start_serve
from tests.physical import cache
from tique.checkpoint import Checkpointer
from tique.engine import open_engine

COMMITTED = {"recorded": False, "published": False, "decided": True}


@pytest.mark.parametrize("step", list(COMMITTED))
def test_checkpointer_settles_a_dead_committer(tmp_path: Path, step: str) -> None:
    server = start_serve(tmp_path / "db")
    try:
        crashed = subprocess.run(
            [sys.executable, str(ROOT / "tests" / "crash_client.py"), server.url, step],  # sets a 500 ms lease
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr
        raw = open_engine(server.url).connect()
        victim = int(raw.execute("SELECT MAX(txid) FROM tique.commits").scalar())
        assert int(raw.execute(f"SELECT COUNT(*) FROM {cache(raw, 'acct')} WHERE tq_txid = {victim}").scalar()) > 0
        ckpt = Checkpointer(raw)
        deadline = time.monotonic() + 0.5 + 5  # the lease, then a few runs
        while True:
            report = ckpt.run_once()
            left = int(raw.execute(f"SELECT COUNT(*) FROM {cache(raw, 'acct')} WHERE tq_txid <= {victim}").scalar())
            if report.low_txid > victim and not left:
                break
            assert time.monotonic() < deadline, f"still stuck at txid {victim}: {report.line()}, {left} rows"
            time.sleep(0.2)
        assert not report.errors, report.errors
        undecided = "SELECT COUNT(*) FROM tique.commits WHERE txid NOT IN (SELECT txid FROM tique.outcomes)"
        assert int(raw.execute(undecided).scalar()) == 0
        conn = tique.connect(server.url)
        cur = conn.cursor()
        cur.execute("SELECT id, v FROM acct ORDER BY id")
        expected = [(1, 1), (2, 1000 if COMMITTED[step] else 0), (3, 0)] + ([(99, 99)] if COMMITTED[step] else [])
        assert cur.fetchall() == expected
        conn.close()
        raw.close()
    finally:
        server.stop()
