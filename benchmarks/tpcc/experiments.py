"""The experiments a worker runs on one loaded system (see benchmarks/tpcc/cli.py for the commands)."""

from __future__ import annotations

from typing import Any

from benchmarks.tpcc.data import Scale
from benchmarks.tpcc.run import consistency, run_clients
from benchmarks.tpcc.systems import System


def run(name: str, system: System, size: Scale, spec: dict[str, Any]) -> dict[str, Any]:
    if name == "tpcc":
        runs = {}
        for n in spec["clients"]:
            metrics = run_clients(system, size, n, spec["duration"], spec["warmup"])
            metrics["consistency"] = consistency(system)
            runs[str(n)] = metrics
        return {"runs": runs}
    if name == "contention":
        runs = {}
        for k in spec["warehouse_counts"]:
            metrics = run_clients(system, size, spec["clients"][0], spec["duration"], spec["warmup"],
                                  warehouses=list(range(1, k + 1)))  # fmt: skip
            runs[str(k)] = metrics
        return {"runs": runs, "consistency": consistency(system)}
    raise ValueError(f"unknown experiment {name!r}")
