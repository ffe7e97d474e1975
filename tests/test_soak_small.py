"""A short run of the randomized soak (benchmarks/soak.py): two client processes through ``tique serve`` with
the checkpointer every 50 ms, the server killed with SIGKILL at least once; the committed state, read after
every step, must equal the model of acknowledged commits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, sized


@pytest.fixture(scope="module")
def soak(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("soak") / "soak.json"
    minutes, step = sized(("0.3", "5"), ("0.5", "7"))
    command = [sys.executable, "-m", "benchmarks", "soak", "--minutes", minutes, "--clients", "2", "--seed", "11"]
    command += ["--step-seconds", step, "--min-server-kills", "1", "--out", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr[-3000:]  # 1: violations found (the next test reports them)
    result: dict[str, Any] = json.loads(Path(out).read_text())
    result["exit_status"] = done.returncode
    return result


def test_the_soak_runs_its_checks_across_a_server_kill(soak: dict[str, Any]) -> None:
    assert soak["server_kills"] >= 1 and soak["server_restarts"] >= 2  # the kill and the clean final restart
    # a check before and after the kill at least: a busy machine fits 2 steps into the short run's 18 s
    assert soak["invariant_checks"] >= 2 and not soak["check_errors"]
    assert soak["transactions"]["committed"] >= 50
    assert soak["client_read_checks"] > 0 and soak["ddl_cycles"] > 0
    assert soak["exit_status"] == (1 if soak["violations"] else 0)


def test_the_committed_state_always_equals_the_model(soak: dict[str, Any]) -> None:
    details = json.dumps(soak["violation_groups"], default=str, ensure_ascii=False)[:3000]
    assert soak["violations"] == 0, details
