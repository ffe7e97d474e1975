"""Running TPC-C clients against one system, and the worker process that runs one system end to end.

Every system runs in its own worker process (an embedded database allows one per process, and a fresh
process keeps the systems from sharing a Python heap or GIL); clients are threads in it, or, for a system with a
server and ``processes=True``, processes of their own (as a deployed application's are). A transaction that
loses a conflict is retried, as applications do: its latency runs from its first attempt to its commit, and
every failed attempt counts toward the abort rate (aborted attempts / all attempts).
"""

from __future__ import annotations

import json
import multiprocessing
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

    def counts(self) -> dict[str, Any]:
        """Everything but the lock: what a client process sends back."""
        return {k: v for k, v in vars(self).items() if k != "lock"}

    def add(self, counts: dict[str, Any]) -> None:
        """Add a client process's counts to these."""
        for name, value in counts.items():
            mine = getattr(self, name)
            if isinstance(mine, dict):
                for key, part in value.items():
                    mine[key] += part
            elif isinstance(mine, list):
                mine.extend(value[: 5 - len(mine)] if name == "error_samples" else value)
            else:
                setattr(self, name, mine + value)


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


def _client_process(
    out: Any, ready: Any, go: Any, window: Any, system: System, job: tuple[Any, ...], formulation: str
) -> None:
    """One client in a process of its own. Its imports take seconds on a busy machine, so it measures in the
    window the parent sets once every process is up (between the ``ready`` and ``go`` barriers: time.monotonic is
    the machine's clock, the same in every process); its counts go to ``out``."""
    stats = Stats()
    size, home_w, seed, warehouses = job
    try:
        ready.wait(600)
        go.wait(600)
        client(system, size, home_w, seed, window[0], window[1], stats, warehouses, formulation=formulation)
    except Exception as exc:  # it could not start or connect: say so in the results rather than in a lost stderr
        stats.errors += 1
        stats.error_samples.append(f"client process: {type(exc).__name__}: {str(exc)[:300]}")
    out.put(stats.counts())


def _run_threads(
    system: System, jobs: list[tuple[Any, ...]], duration: float, warmup: float, formulation: str
) -> Stats:
    stats = Stats()
    t0 = time.monotonic()
    window = (t0 + warmup, t0 + warmup + duration)
    threads = [threading.Thread(target=client, args=(system, *job[:3], *window, stats, job[3]),
                                kwargs={"formulation": formulation}) for job in jobs]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join(duration + warmup + 600)
    return stats


def _run_processes(
    system: System, jobs: list[tuple[Any, ...]], duration: float, warmup: float, formulation: str
) -> Stats:
    remote = system.remote()
    assert remote is not None
    ctx = multiprocessing.get_context("spawn")  # no fork of a process whose threads hold locks
    out, window = ctx.Queue(), ctx.Array("d", 2)
    ready, go = ctx.Barrier(len(jobs) + 1), ctx.Barrier(len(jobs) + 1)
    procs = [ctx.Process(target=_client_process, args=(out, ready, go, window, remote, job, formulation))
             for job in jobs]  # fmt: skip
    for proc in procs:
        proc.start()
    ready.wait(600)
    t0 = time.monotonic()
    window[0], window[1] = t0 + warmup, t0 + warmup + duration
    go.wait(600)
    stats = Stats()
    for _ in procs:  # read before joining: a full pipe keeps a process from ending
        stats.add(out.get(timeout=duration + warmup + 600))
    for proc in procs:
        proc.join(600)
    return stats


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
    processes: bool = False,
) -> dict[str, Any]:
    """N clients for warm-up + duration seconds; metrics over the measured window only. ``formulation``: which
    SQL the transactions send (benchmarks/tpcc/txns.py FORMULATIONS), the same for every system. ``processes``:
    each client in a process of its own where the system has a server (an embedded one keeps threads, and the
    result says which ran); the warm-up starts once every process is up."""
    processes = processes and system.remote() is not None
    allowed = warehouses or list(range(1, size.warehouses + 1))
    jobs = [(size, allowed[i % len(allowed)], seed * 1000 + i, warehouses) for i in range(clients)]
    stats = (_run_processes if processes else _run_threads)(system, jobs, duration, warmup, formulation)
    total = sum(stats.committed.values())
    return {
        "clients": clients,
        "client_processes": processes,
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
