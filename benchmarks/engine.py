"""Latency of the engine's building blocks, embedded and over MAPI: one counter call (tique's C module),
a point read by primary key, a single-row insert. Prints p50/p99 and writes a JSON file."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import machine_info, percentiles_ms, served_database, time_calls, write_json
from tique.engine import RawConnection, open_engine
from tique.sequencer import CSequencer


def measure(conn: RawConnection, n: int) -> dict[str, Any]:
    CSequencer().install(conn)
    conn.execute("CREATE TABLE bench_kv (k INT PRIMARY KEY, v VARCHAR(32))")
    conn.execute("CREATE TABLE bench_ins (k INT, v VARCHAR(32))")
    for start in range(0, 10000, 1000):
        values = ", ".join(f"({k}, 'v{k}')" for k in range(start, start + 1000))
        conn.execute(f"INSERT INTO bench_kv VALUES {values}")
    return {
        "counter_call": percentiles_ms(time_calls(lambda i: conn.execute("SELECT tique.next_txid()"), n)),
        "point_read": percentiles_ms(
            time_calls(lambda i: conn.execute(f"SELECT v FROM bench_kv WHERE k = {abs(i) % 10000}"), n)
        ),
        "insert": percentiles_ms(time_calls(lambda i: conn.execute(f"INSERT INTO bench_ins VALUES ({i}, 'x')"), n)),
    }


def run(n: int) -> dict[str, Any]:
    results: dict[str, Any] = {"machine": machine_info(), "settings": {"calls": n}, "systems": {}}
    with tempfile.TemporaryDirectory(prefix="tique-bench-") as tmp:
        engine = open_engine(f"monetdbe://{Path(tmp) / 'db'}")
        conn = engine.connect()
        results["systems"]["embedded"] = measure(conn, n)
        conn.close()
        engine.close()
    with served_database() as url:
        conn = open_engine(url).connect()
        results["systems"]["mapi"] = measure(conn, n)
        conn.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks engine", description=__doc__)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--out", default="results/engine.json")
    args = parser.parse_args(argv)
    results = run(args.calls)
    print(f"{'operation':<14}{'system':<10}{'p50 ms':>9}{'p99 ms':>9}")
    for system, ops in results["systems"].items():
        for op, stats in ops.items():
            print(f"{op:<14}{system:<10}{stats['p50']:>9.3f}{stats['p99']:>9.3f}")
    print(f"written to {write_json(args.out, results)}")
    return 0
