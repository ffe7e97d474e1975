"""TPC-C at its smallest scale for every system, so the runners cannot rot (the real runs are benchmarks)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

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


def test_clients_as_processes_of_their_own_where_the_system_has_a_server(tmp_path: Path) -> None:
    """--client-processes: tique-mapi's clients run as processes, each counted back; embedded tique keeps threads."""
    out = tmp_path / "tpcc.json"
    proc = bench("tpcc", "--systems", "tique-mapi,tique", "--warehouses", "1", "--scale", "0.01", "--clients", "2",
                 "--duration", SECONDS, "--warmup", "3", "--client-processes", "--out", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(out.read_text())
    assert not data["skipped"], data["skipped"]
    runs = data["systems"]
    assert runs["tique-mapi"]["client_processes"] and not runs["tique"]["client_processes"]
    for name, m in runs.items():
        assert m["tpmC"] > 0 and m["errors"] == 0, (name, m["error_samples"])
        assert m["consistency"]["all_ok"], (name, m["consistency"])
        assert sum(m["committed"].values()) == sum(t["n"] for t in m["latency_ms"].values())  # every process's
    assert "2 processes | tique-mapi" in out.with_suffix(".md").read_text()


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


class _Recording:
    """A stand-in for a database: no engine, since this checks only which rows the driver asks for."""

    def __init__(self, conflicts: int = 0) -> None:
        self.items: list[tuple[int, ...]] = []  # per NewOrder attempt, the items it read
        self.conflicts = conflicts  # NewOrder attempts to fail as a serialization conflict
        self.rows: list[tuple[Any, ...]] = []

    def connect(self) -> _Recording:
        return self

    def cursor(self) -> _Recording:
        return self

    def is_conflict(self, exc: Exception) -> bool:
        return "conflict" in str(exc)

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        if sql.startswith("SELECT i_price"):
            self.items[-1] += (int(params[0]),)
        if sql.startswith("SELECT w_tax"):
            self.items.append(())
        self.rows = [(1, 1, 1)] if "FROM customer" not in sql or "c_last =" not in sql else [(1,)]
        if sql.startswith("SELECT d_tax"):
            self.rows = [(0.1, 3001)]
        if sql.startswith("INSERT INTO order_line") and self.conflicts:
            self.conflicts -= 1
            raise RuntimeError("conflict")

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self.rows

    def fetchone(self) -> tuple[Any, ...] | None:
        return self.rows[0] if self.rows else None

    def commit(self) -> None:
        pass

    def rollback(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_clients_transactions_draw_independent_items_and_a_retry_the_same() -> None:
    """Each NewOrder orders its own items (TPC-C's NURand over 100,000), not its predecessor's shifted by one (as
    when the driver rewound the client's stream after each transaction); a retried NewOrder orders the same."""
    from benchmarks.tpcc.data import Scale
    from benchmarks.tpcc.run import Stats, client

    db = _Recording()
    end = time.monotonic() + 0.5
    client(db, Scale(1, 1.0), 1, 7, 0.0, end, Stats(), mix=lambda rng: "NewOrder")  # type: ignore[arg-type]
    orders = [set(items) for items in db.items if items]
    assert len(orders) > 50
    shared = [len(a & b) / len(a) for a, b in itertools.pairwise(orders)]
    assert sum(shared) / len(shared) < 0.05, shared[:10]
    retried = _Recording(conflicts=3)
    client(retried, Scale(1, 1.0), 1, 7, 0.0, time.monotonic() + 0.05, Stats(), mix=lambda rng: "NewOrder")  # type: ignore[arg-type]
    first = [items for items in retried.items if items]
    assert len({first[0][:1], first[1][:1], first[2][:1], first[3][:1]}) == 1, first[:4]  # 3 conflicts, then done
