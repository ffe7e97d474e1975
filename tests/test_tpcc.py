"""TPC-C at its smallest scale for every system, so the runners cannot rot (the real runs are benchmarks)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, sized

ALL = "tique,tique-mapi,monetdb,monetdb-mapi,postgres"
# seconds each measured run lasts (most of a test's time is starting the systems and loading their data)
SECONDS = sized("1.5", "3")


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
                 "--duration", SECONDS, "--warmup", sized("0.5", "1"), "--out", str(out))  # fmt: skip
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
                 "--clients", "2", "--duration", sized("2", "4"), "--warmup", "0.5", "--out", str(out),
                 env={"PG_BIN_DIR": str(tmp_path / "no-postgres")})  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(out.read_text())
    assert "was not found" in data["skipped"]["postgres"]
    assert set(data["by_warehouses"]) == {"2", "1"}
    assert all(data["by_warehouses"][k]["tique"]["tpmC"] > 0 for k in ("2", "1"))
    assert data["consistency"]["tique"]["all_ok"]


def test_every_ch_query_returns_rows_and_tique_answers_as_monetdb_does(tmp_path: Path) -> None:
    out = tmp_path / "ch.json"
    proc = bench("ch", "--systems", "tique,monetdb", "--warehouses", "1", "--scale", "0.02", "--oltp-seconds", "0",
                 "--repeat", "1", "--out", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(out.read_text())
    assert set(data["systems"]) == {"tique", "monetdb"}, data["skipped"]
    tq, native = data["systems"]["tique"], data["systems"]["monetdb"]
    assert not tq["errors"] and not native["errors"], (tq["errors"], native["errors"])
    assert sorted(tq["rows"], key=int) == [str(q) for q in range(1, 23)]
    assert all(n > 0 for n in tq["rows"].values()), tq["rows"]
    assert tq["checksums"] == native["checksums"]  # every statement went through tique's rewriting
    assert tq["total_s"] > 0 and set(tq["queries"]) == set(tq["rows"])


def test_htap_and_long_transactions_run(tmp_path: Path) -> None:
    out = tmp_path / "htap.json"
    proc = bench("htap", "--systems", "tique", "--warehouses", "1", "--scale", "0.01", "--grid", "1:0,1:1",
                 "--duration", SECONDS, "--warmup", "0.5", "--out", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = json.loads(out.read_text())["systems"]["tique"]["runs"]
    assert runs["1-0"]["tpmC"] > 0 and runs["1-1"]["olap_queries"] > 0
    out = tmp_path / "longtx.json"
    proc = bench("longtx", "--systems", "tique", "--warehouses", "1", "--scale", "0.01", "--clients", "1",
                 "--rows", "5", "--duration", SECONDS, "--warmup", "0.5", "--out", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = json.loads(out.read_text())["systems"]["tique"]["runs"]
    assert set(runs) == {"plain", "priority"} and runs["priority"]["long_committed"] > 0


def test_profile_traces_the_engine_calls_behind_each_transaction(tmp_path: Path) -> None:
    out = tmp_path / "profile.json"
    proc = bench("profile", "--systems", "tique,monetdb", "--warehouses", "1", "--scale", "0.01", "--count", "3",
                 "--out", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    systems = json.loads(out.read_text())["systems"]
    tq, native = systems["tique"]["types"], systems["monetdb"]["types"]
    assert set(tq) == {"NewOrder", "Payment", "OrderStatus", "Delivery", "StockLevel"}
    for kind in tq:  # the same application statements on both (same seed, same data)
        assert tq[kind]["statements"] == native[kind]["statements"] > 0, kind
        assert tq[kind]["engine_calls"] >= 1 and tq[kind]["engine_ms"] > 0, kind
    assert systems["tique"]["top_engine_calls"] and "EXEC: SELECT" in str(systems["tique"]["top_engine_calls"])
