"""Running TPC-C clients against one system, and the worker process that runs one system end to end.

Every system runs in its own worker process (an embedded database allows one per process, and a fresh
process keeps the systems from sharing a Python heap or GIL); clients are threads in it. A transaction that
loses a conflict is retried, as applications do: its latency runs from its first attempt to its commit, and
every failed attempt counts toward the abort rate (aborted attempts / all attempts).
"""

from __future__ import annotations

import json
import random
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from benchmarks.common import percentiles_ms
from benchmarks.tpcc.data import Scale
from benchmarks.tpcc.systems import System, SystemUnavailable, make
from benchmarks.tpcc.txns import CONSISTENCY, FORMULATIONS, TRANSACTIONS, Context, UserAbort, pick

MAX_RETRIES = 50


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latency: dict[str, list[float]] = {name: [] for name in TRANSACTIONS}
        self.committed = {name: 0 for name in TRANSACTIONS}
        self.attempts = 0
        self.aborted = 0
        self.retries = 0
        self.user_aborts = 0
        self.errors = 0
        self.error_samples: list[str] = []
        self.gave_up = 0


def client(
    system: System,
    size: Scale,
    home_w: int,
    seed: int,
    measure_from: float,
    until: float,
    stats: Stats,
    warehouses: list[int] | None = None,
    mix: Any = pick,
    formulation: str = "standard",
) -> None:
    txns = FORMULATIONS[formulation]
    rng = random.Random(seed)  # the client's: the mix, warehouses, back-off, and each transaction's seed
    ctx = Context(size, home_w, rng)
    conn = system.connect()
    try:
        while (start := time.monotonic()) < until:
            if warehouses:
                ctx.home_w = rng.choice(warehouses)
            name = mix(rng)
            # each transaction draws from a stream of its own, so a retry runs the same transaction again; rewinding
            # the client's stream instead made each transaction replay the one before shifted by a draw (NewOrder
            # ordered nearly the same items as the client's previous one: a hot spot TPC-C does not have)
            txn_seed = rng.getrandbits(64)
            attempts = aborted = 0
            outcome = "gave_up"
            for _ in range(MAX_RETRIES):
                attempts += 1
                ctx.rng = random.Random(txn_seed)
                try:
                    txns[name](conn, ctx)
                    outcome = "ok"
                    break
                except UserAbort:
                    outcome = "user_abort"
                    break
                except Exception as exc:
                    _rollback(conn)
                    if system.is_conflict(exc):
                        aborted += 1
                        time.sleep(rng.uniform(0, 0.002 * attempts))
                        continue
                    outcome = "error"
                    with stats.lock:
                        if len(stats.error_samples) < 5:
                            stats.error_samples.append(f"{name}: {type(exc).__name__}: {str(exc)[:300]}")
                    break
            end = time.monotonic()
            if start < measure_from or end > until:
                continue
            with stats.lock:
                stats.attempts += attempts
                stats.aborted += aborted
                stats.retries += attempts - 1
                if outcome == "ok":
                    stats.committed[name] += 1
                    stats.latency[name].append(end - start)
                elif outcome == "user_abort":
                    stats.user_aborts += 1
                elif outcome == "error":
                    stats.errors += 1
                else:
                    stats.gave_up += 1
    finally:
        try:
            conn.close()
        except Exception:
            pass


def _rollback(conn: Any) -> None:
    try:
        conn.rollback()
    except Exception:
        pass


def run_clients(
    system: System,
    size: Scale,
    clients: int,
    duration: float,
    warmup: float,
    warehouses: list[int] | None = None,
    seed: int = 1,
    formulation: str = "standard",
) -> dict[str, Any]:
    """N clients for warm-up + duration seconds; metrics over the measured window only. ``formulation``: which
    SQL the transactions send (benchmarks/tpcc/txns.py FORMULATIONS), the same for every system."""
    stats = Stats()
    t0 = time.monotonic()
    measure_from, until = t0 + warmup, t0 + warmup + duration
    allowed = warehouses or list(range(1, size.warehouses + 1))
    threads = [
        threading.Thread(
            target=client,
            args=(system, size, allowed[i % len(allowed)], seed * 1000 + i, measure_from, until, stats, warehouses),
            kwargs={"formulation": formulation},
        )
        for i in range(clients)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(duration + warmup + 600)
    total = sum(stats.committed.values())
    return {
        "clients": clients,
        "formulation": formulation,
        "duration_s": duration,
        "warmup_s": warmup,
        "tpmC": round(stats.committed["NewOrder"] * 60 / duration, 1),
        "tps": round(total / duration, 2),
        "committed": dict(stats.committed),
        "attempts": stats.attempts,
        "aborted_attempts": stats.aborted,
        "abort_rate": round(stats.aborted / stats.attempts, 4) if stats.attempts else 0.0,
        "retries": stats.retries,
        "gave_up": stats.gave_up,
        "user_aborts": stats.user_aborts,
        "errors": stats.errors,
        "error_samples": stats.error_samples,
        "latency_ms": {name: percentiles_ms(samples) for name, samples in stats.latency.items()},
    }


def consistency(system: System) -> dict[str, Any]:
    """TPC-C consistency conditions 1-4 (spec 3.3.2): the rows violating each; all must be empty."""
    conn = system.connect()
    out: dict[str, Any] = {}
    try:
        cur = conn.cursor()
        for number, sql in CONSISTENCY.items():
            try:
                cur.execute(sql)
                bad = cur.fetchall()
                out[str(number)] = {"ok": not bad, "violations": len(bad)}
            except Exception as exc:
                _rollback(conn)
                out[str(number)] = {"ok": False, "error": str(exc)[:300]}
        conn.commit()
    finally:
        conn.close()
    out["all_ok"] = all(v["ok"] for k, v in out.items() if k != "all_ok")
    return out


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    """One system end to end: start, load, the requested experiments, stop."""
    from benchmarks.tpcc import experiments

    system = make(spec["system"], **spec.get("tique_settings", {}))
    result: dict[str, Any] = {"system": spec["system"]}
    try:
        system.start()
        t0 = time.monotonic()
        system.load(Path(spec["csv_dir"]))
        result["load_s"] = round(time.monotonic() - t0, 2)
        size = Scale(spec["warehouses"], spec["scale"])
        result.update(experiments.run(spec["experiment"], system, size, spec))
        result["counters"] = system.counters()
    finally:
        system.stop()
    return result


def main() -> int:
    spec = json.loads(Path(sys.argv[1]).read_text())
    out = Path(sys.argv[2])
    try:
        result = worker(spec)
    except SystemUnavailable as exc:
        out.write_text(json.dumps({"system": spec["system"], "skipped": str(exc)}))
        return 3
    except Exception as exc:
        out.write_text(json.dumps({"system": spec["system"], "failed": f"{type(exc).__name__}: {exc}",
                                   "traceback": traceback.format_exc()[-3000:]}))  # fmt: skip
        return 1
    out.write_text(json.dumps(result, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
