"""The experiments a worker runs on one loaded system (see benchmarks/tpcc/cli.py for the commands)."""

from __future__ import annotations

import datetime as dt
import hashlib
import statistics
import time
from decimal import Decimal
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
    if name == "ch":
        out: dict[str, Any] = {}
        if spec.get("oltp_seconds"):  # fill tique's Cache first, as the issue asks (every system gets the same run)
            out["oltp"] = run_clients(system, size, spec["clients"][0], spec["oltp_seconds"], 0)
        out["ch"] = ch_queries(system, spec.get("repeat", 5), spec.get("queries"))
        return out
    raise ValueError(f"unknown experiment {name!r}")


def _norm(v: Any) -> Any:
    if isinstance(v, (Decimal, float, int)) and not isinstance(v, bool):
        return round(float(v), 2)
    if isinstance(v, (dt.datetime, dt.date)):
        return v.isoformat()
    if isinstance(v, str):
        return v.rstrip()  # PostgreSQL pads CHAR(n)
    return v


def checksum(rows: list[tuple[Any, ...]]) -> str:
    """Order-insensitive digest of a result, with numbers to 2 decimals and CHAR padding removed."""
    canon = sorted(repr(tuple(_norm(v) for v in r)) for r in rows)
    return hashlib.sha1("\n".join(canon).encode()).hexdigest()[:16]


def ch_queries(system: System, repeat: int, only: list[int] | None = None) -> dict[str, Any]:
    """Each CH query ``repeat`` times (each a read-only transaction); the median time, rows and a checksum."""
    from benchmarks.tpcc.ch import QUERIES

    conn = system.connect()
    result: dict[str, Any] = {"queries": {}, "rows": {}, "checksums": {}, "errors": {}}
    try:
        cur = conn.cursor()
        for number, sql in QUERIES.items():
            if only and number not in only:
                continue
            times = []
            try:
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    cur.execute(sql)
                    rows = cur.fetchall()
                    conn.commit()
                    times.append(time.perf_counter() - t0)
            except Exception as exc:
                try:
                    conn.rollback()
                except Exception:
                    pass
                result["errors"][str(number)] = f"{type(exc).__name__}: {str(exc)[:300]}"
                continue
            result["queries"][str(number)] = round(statistics.median(times), 4)
            result["rows"][str(number)] = len(rows)
            result["checksums"][str(number)] = checksum([tuple(r) for r in rows])
    finally:
        conn.close()
    result["total_s"] = round(sum(result["queries"].values()), 4)
    return result
