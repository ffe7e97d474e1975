"""Where a TPC-C transaction's CPU goes (issue 14): the full mix with N embedded tique clients for D seconds, and
per committed transaction the process's CPU split into the engine calls (the calling thread's CPU inside each,
by kind: begin, reads per table, flush, commit steps), result decoding, the checkpointer's thread, and the rest:
Python of tique and of the application. On two cores the throughput is bounded by this total (and, in one
process, by the GIL its Python part holds), so it says what a change must cut.

    python -m benchmarks.cpu_budget --clients 1 --duration 20 --out benchmarks/results_scale/budget
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.profile_scale import classify
from benchmarks.tpcc import run as tpcc_run
from benchmarks.tpcc.cli import DATA_CACHE
from benchmarks.tpcc.data import DATA_VERSION, Scale, generate
from benchmarks.tpcc.systems import make


class Meter:
    """Thread CPU and wall time inside the engine calls of every tique session of the process."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])  # count, wall, cpu
        self.decode = [0, 0.0]  # results, cpu
        self.checkpointer = [0, 0.0]  # runs, cpu

    def clear(self) -> None:
        with self.lock:
            self.calls.clear()
            self.decode[:] = [0, 0.0]
            self.checkpointer[:] = [0, 0.0]

    def install(self) -> None:
        from tique import prepared
        from tique.checkpoint import algorithm
        from tique.engine import embedded

        def timed(kind_of: Any, original: Any) -> Any:
            def call(conn: Any, sql: Any) -> Any:
                wall, cpu = time.perf_counter(), time.thread_time()
                try:
                    return original(conn, sql)
                finally:
                    kind = kind_of(conn, sql)
                    with self.lock:
                        entry = self.calls[kind]
                        entry[0] += 1
                        entry[1] += time.perf_counter() - wall
                        entry[2] += time.thread_time() - cpu

            return call

        def shape(conn: Any, sql: str) -> str:
            if sql.startswith("EXEC "):
                text = conn.prepared_text(int(sql[5 : sql.index("(")]))
                return classify(text) if text else "EXEC (unknown)"
            return classify(sql)

        cls = prepared.PreparingConnection
        cls.execute = timed(shape, cls.execute)  # type: ignore[method-assign]
        cls.execute_atomically = timed(lambda c, s: classify(";".join(s)), cls.execute_atomically)  # type: ignore[method-assign]
        read_result = embedded.read_result

        def decode(ffi: Any, lib: Any, res: Any) -> Any:
            cpu = time.thread_time()
            try:
                return read_result(ffi, lib, res)
            finally:
                with self.lock:
                    self.decode[0] += 1
                    self.decode[1] += time.thread_time() - cpu

        embedded.read_result = decode
        run_once = algorithm.Checkpointer.run_once

        def checkpoint(checkpointer: Any, *args: Any, **kwargs: Any) -> Any:
            cpu = time.thread_time()
            try:
                return run_once(checkpointer, *args, **kwargs)
            finally:
                with self.lock:
                    self.checkpointer[0] += 1
                    self.checkpointer[1] += time.thread_time() - cpu

        algorithm.Checkpointer.run_once = checkpoint  # type: ignore[method-assign]


def budget(meter: Meter, committed: int, process_cpu: float, wall: float) -> dict[str, Any]:
    per = 1000 / committed  # ms per committed transaction
    engine_cpu = sum(c for _, _, c in meter.calls.values())
    engine_wall = sum(w for _, w, _ in meter.calls.values())
    decode_cpu = meter.decode[1]
    calls = {
        kind: {"per_txn": round(n / committed, 2), "wall_ms": round(w / n * 1000, 3), "cpu_ms": round(c / n * 1000, 3)}
        for kind, (n, w, c) in sorted(meter.calls.items(), key=lambda kv: -kv[1][2])
        if n
    }
    return {
        "committed": committed,
        "wall_s": round(wall, 1),
        "process_cpu_ms_per_txn": round(process_cpu * per, 2),
        # of the machine's cores: below their number with every client busy, the clients wait for something else
        "cores_used": round(process_cpu / wall, 2),
        # inside the clients' engine calls, not on a CPU: waiting for a core, a lock, the disk (the log's fsync), or
        # the GIL, which a call gives up and must take again to return (decoding's calls too)
        "engine_calls_waiting_ms_per_txn": round((engine_wall - engine_cpu) * per, 2),
        "engine_calls_cpu_ms_per_txn": round((engine_cpu - decode_cpu) * per, 2),  # decoding runs inside calls
        "decoding_cpu_ms_per_txn": round(decode_cpu * per, 2),
        "checkpointer_cpu_ms_per_txn": round(meter.checkpointer[1] * per, 2),
        "checkpointer_runs": meter.checkpointer[0],
        "rest_cpu_ms_per_txn": round((process_cpu - engine_cpu - meter.checkpointer[1]) * per, 2),
        "engine_calls_per_txn": round(sum(n for n, _, _ in meter.calls.values()) / committed, 2),
        "calls": calls,
    }


def markdown(result: dict[str, Any]) -> str:
    b = result["budget"]
    lines = [
        f"TPC-C, {result['warehouses']} warehouses, scale {result['scale']}, {result['clients']} embedded tique "
        f"client(s), {result['duration_s']} s: {b['committed']} transactions, {result['tpmC']} tpmC",
        "",
        "| CPU per committed transaction | ms |",
        "|---|---|",
        f"| process (all threads; {b['cores_used']} cores used) | {b['process_cpu_ms_per_txn']} |",
        f"| engine calls of the clients (calling thread), decoding excluded | {b['engine_calls_cpu_ms_per_txn']} |",
        f"| result decoding | {b['decoding_cpu_ms_per_txn']} |",
        f"| checkpointer thread ({b['checkpointer_runs']} runs) | {b['checkpointer_cpu_ms_per_txn']} |",
        f"| the rest: Python of tique and of the application | {b['rest_cpu_ms_per_txn']} |",
        "",
        "Inside the engine calls, off any CPU (waiting for a core, a lock, the log's fsync, the GIL back): "
        f"{b['engine_calls_waiting_ms_per_txn']} ms per transaction.",
        "",
        f"{b['engine_calls_per_txn']} engine calls per transaction:",
        "",
        "| call | per txn | wall ms | CPU ms |",
        "|---|---|---|---|",
    ]
    lines += [f"| {k} | {v['per_txn']} | {v['wall_ms']} | {v['cpu_ms']} |" for k, v in list(b["calls"].items())[:20]]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--warehouses", type=int, default=4)
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--clients", type=int, default=1)
    p.add_argument("--duration", type=float, default=20)
    p.add_argument("--warmup", type=float, default=8)
    p.add_argument("--out", default=None, help="path without suffix: writes .json and .md")
    args = p.parse_args()
    size = Scale(args.warehouses, args.scale)
    csv_dir = generate(DATA_CACHE / f"v{DATA_VERSION}-w{size.warehouses}-s{size.scale}", size)
    meter = Meter()
    meter.install()
    system = make("tique")
    system.start()
    try:
        system.load(csv_dir)
        tpcc_run.run_clients(system, size, args.clients, args.warmup, 0.0)
        meter.clear()
        cpu, wall = time.process_time(), time.perf_counter()
        res = tpcc_run.run_clients(system, size, args.clients, args.duration, 0.0)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        system.stop()
    committed = sum(res["committed"].values())
    shape = {"warehouses": size.warehouses, "scale": size.scale, "clients": args.clients, "duration_s": args.duration}
    result = {**shape, "tpmC": res["tpmC"], "budget": budget(meter, committed, cpu, wall)}
    text = markdown(result)
    print(text)
    if args.out:
        Path(f"{args.out}.json").write_text(json.dumps(result, indent=1))
        Path(f"{args.out}.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
