"""Transaction ids and commit timestamps never go backwards, whatever step of a checkpoint a crash hits.

Tables without a primary key derive hidden row ids from the transaction id: an id handed out twice gives a new
row the id of a committed one, and the committed row vanishes. The process owning an embedded database dies by
SIGKILL inside the checkpointer, at every step boundary; a new process reopens the database."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, thinned
from tique.checkpoint import STEPS as CHECKPOINT_STEPS

STEPS = list(CHECKPOINT_STEPS)  # a kill at every step boundary (`make test-long`)
# `make test`: every other step and the last (tests/test_checkpoint.py's kills take the others)
KILL_STEPS = thinned(STEPS, [0, 2, 4, 6, 8, len(STEPS) - 1])


def client(*args: str) -> subprocess.CompletedProcess[str]:
    script = ROOT / "tests" / "adversarial" / "counters_client.py"
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, cwd=ROOT, timeout=120)


@pytest.mark.parametrize(("step", "how"), [*((s, "kill") for s in KILL_STEPS), ("trimmed", "raise")])
def test_counters_survive_a_crash_at_every_checkpoint_step(tmp_path: Path, step: str, how: str) -> None:
    url = f"monetdbe://{tmp_path / 'db'}"
    crashed = client(url, "crash", step, how)
    assert crashed.returncode == -signal.SIGKILL, (crashed.stdout, crashed.stderr[-2000:])
    used = json.loads(crashed.stdout.splitlines()[0])
    assert used["rows"] == 5 * 12
    checked = client(url, "check")
    assert checked.returncode == 0, checked.stderr[-2000:]
    state = json.loads(checked.stdout)
    assert state["after"] == {"rows": 5 * 12 + 40, "distinct": 5 * 12 + 40, "v": 6}  # no committed row vanished
    assert state["txid"] >= used["txid"] and state["cts"] >= used["cts"], (state, used)
    assert state["final"] == state["after"]
