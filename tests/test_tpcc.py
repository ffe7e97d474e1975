"""TPC-C at its smallest scale for every system, so the runners cannot rot (the real runs are benchmarks)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

ALL = "tique,tique-mapi,monetdb,monetdb-mapi,postgres"


def bench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


def test_tpcc_runs_on_every_system_and_stays_consistent(tmp_path: Path) -> None:
    out = tmp_path / "tpcc.json"
    proc = bench("tpcc", "--systems", ALL, "--warehouses", "1", "--scale", "0.01", "--clients", "2",
                 "--duration", "3", "--warmup", "1", "--out", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(out.read_text())
    assert set(data["systems"]) | set(data["skipped"]) == set(ALL.split(","))
    assert not data["skipped"] or set(data["skipped"]) == {"postgres"}, data["skipped"]
    for name, m in data["systems"].items():
        assert m["tpmC"] > 0 and m["errors"] == 0, (name, m["error_samples"])
        assert m["consistency"]["all_ok"], (name, m["consistency"])
        assert {"p50", "p95", "p99"} <= set(m["latency_ms"]["NewOrder"]) and 0 <= m["abort_rate"] < 1
    assert out.with_suffix(".md").read_text().count("|") > 20 and out.with_suffix(".png").stat().st_size > 0


def test_contention_and_a_missing_server_is_skipped_with_its_reason(tmp_path: Path) -> None:
    out = tmp_path / "contention.json"
    proc = bench("contention", "--systems", "postgres,tique", "--warehouses", "2", "--scale", "0.01",
                 "--clients", "2", "--duration", "2", "--warmup", "0.5", "--out", str(out),
                 env={"PG_BIN_DIR": str(tmp_path / "no-postgres")})  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(out.read_text())
    assert "was not found" in data["skipped"]["postgres"]
    assert set(data["by_warehouses"]) == {"2", "1"}
    assert all(data["by_warehouses"][k]["tique"]["tpmC"] > 0 for k in ("2", "1"))
    assert data["consistency"]["tique"]["all_ok"]
