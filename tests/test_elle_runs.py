"""The list-append workload against the real engine, checked: tique valid for snapshot isolation (embedded
and over tique serve with processes), each negative control caught, native MonetDB checked too. The full
runs (8 clients x 20000 transactions) are benchmarks: python -m benchmarks elle."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, sized
from tique.elle.checker import analyze
from tique.elle.workload import Plan, run

TXNS = sized(500, 1500)  # embedded runs; over MAPI with processes and natively, fewer
FEW = sized(300, 600)
# A negative control breaks isolation, but whether a run shows it depends on how the clients interleave: read-latest
# shows only where another commit lands between two reads of one transaction (4 to 8 or more internal anomalies and
# 0-2 G-single in 1,500 transactions on a quiet machine; none at all once, in a CI run beside other tests). So its
# runs use half the keys (more contention) and a control gets up to three runs: a checker or a control that stopped
# working is still caught every time.
NEGATIVE_TXNS = 1500
NEGATIVE_KEYS = 4
NEGATIVE_RUNS = 3


def elle(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tique.cli", "elle", *args], capture_output=True, text=True, cwd=ROOT, timeout=600
    )


def test_tique_embedded_is_snapshot_isolated(tmp_path: Path) -> None:
    # its own process: the embedded database of the workload must be the only one there
    proc = elle("run", f"monetdbe://{tmp_path / 'db'}", "--clients", "8", "--txns", str(TXNS), "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((tmp_path / "results.json").read_text())
    # the anomalies themselves in the message: a CI run once failed strong-snapshot-isolation alone, and 145 reruns
    # under heavier load did not (its results.json was gone by the time it was looked for)
    found = json.dumps({k: result.get(k) for k in ("verdicts", "anomaly-types", "anomalies")}, default=str)[:6000]
    assert result["valid?"] and result["verdicts"]["strong-snapshot-isolation"], found
    assert result["counts"]["ok"] > TXNS // 4
    # the history file is also checkable on its own
    assert elle("check", str(tmp_path / "history.json")).returncode == 0


def test_tique_over_mapi_with_processes_is_snapshot_isolated(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ops = run(Plan(server.url, clients=4, txns=FEW), processes=True)
    result = analyze(ops)
    assert result.valid("snapshot-isolation") and result.valid("strong-snapshot-isolation"), result.to_json(
        "snapshot-isolation"
    )
    assert sum(op.type == "ok" for op in ops) > FEW // 4


@pytest.mark.parametrize(
    ("negative", "expected"),
    [
        ("read-latest", {"G-single", "G1c", "G-nonadjacent", "G0", "internal", "lost-update", "G1b"}),
        ("skip-certification", {"G0", "lost-update", "incompatible-order", "G-single", "G1c"}),
    ],
)
def test_negative_controls_are_caught(tmp_path: Path, negative: str, expected: set[str]) -> None:
    outputs = []
    for attempt in range(NEGATIVE_RUNS):
        out = tmp_path / str(attempt)
        out.mkdir()
        proc = elle(
            "run",
            f"monetdbe://{out / 'db'}",
            "--clients",
            "8",
            "--txns",
            str(NEGATIVE_TXNS),
            "--keys",
            str(NEGATIVE_KEYS),
            "--negative",
            negative,
            "--out",
            str(out),
        )
        result = json.loads((out / "results.json").read_text())
        assert proc.returncode == (0 if result["valid?"] else 1), proc.stdout[-2000:] + proc.stderr[-2000:]
        forbidden = set(result["anomaly-types"]) - {"G2-item"}
        assert forbidden <= expected | {f"{a}-realtime" for a in expected}, result["anomaly-types"]
        if forbidden:
            assert not result["valid?"]
            return
        outputs.append(proc.stdout[-1500:])
    pytest.fail(f"{NEGATIVE_RUNS} runs of the {negative} control showed no anomaly:\n" + "\n".join(outputs))


def test_native_monetdb_is_checked_and_aborts_a_lot(tmp_path: Path) -> None:
    proc = elle(
        "run",
        f"monetdbe://{tmp_path / 'db'}",
        "--system",
        "native",
        "--clients",
        "4",
        "--txns",
        str(FEW),
        "--out",
        str(tmp_path),
    )
    assert proc.returncode in (0, 1), proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads((tmp_path / "results.json").read_text())
    assert result["system"] == "native" and 0 < result["abort_rate"] < 1


def test_tique_with_a_busy_checkpointer_is_snapshot_isolated(tmp_path: Path) -> None:
    """The same workload while the checkpointer folds versions into Storage every 20 ms."""
    url = f"monetdbe://{tmp_path / 'db'}"
    args = ("--clients", "6", "--txns", str(TXNS), "--checkpoint-interval", "0.02", "--out", str(tmp_path))
    proc = elle("run", url, *args)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((tmp_path / "results.json").read_text())
    assert result["valid?"] and result["verdicts"]["strong-snapshot-isolation"]
    # versions moved: 94-126 in six runs on a quiet machine (96 in a CI run); runs: 9 in a loaded CI run. The bounds
    # only show that it ran several times among the transactions and moved their versions
    assert result["checkpointer"]["checkpoints"] >= 4 and result["checkpointer"]["versions_moved"] > 40
    assert not result["checkpointer"]["errors"]
