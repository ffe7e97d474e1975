"""The experiments a worker runs on one loaded system (see benchmarks/tpcc/cli.py for the commands)."""

from __future__ import annotations

import datetime as dt
import hashlib
import statistics
import threading
import time
from contextlib import AbstractContextManager
from decimal import Decimal
from typing import Any

from benchmarks.tpcc.data import Scale
from benchmarks.tpcc.run import consistency, run_clients
from benchmarks.tpcc.systems import System


def run(name: str, system: System, size: Scale, spec: dict[str, Any]) -> dict[str, Any]:
    form, processes = spec.get("formulation", "standard"), bool(spec.get("client_processes"))
    if name == "tpcc":
        runs = {}
        for n in spec["clients"]:
            metrics = run_clients(system, size, n, spec["duration"], spec["warmup"], formulation=form,
                                  processes=processes)  # fmt: skip
            metrics["consistency"] = consistency(system)
            runs[str(n)] = metrics
        return {"runs": runs}
    if name == "contention":
        runs = {}
        for k in spec["warehouse_counts"]:
            metrics = run_clients(system, size, spec["clients"][0], spec["duration"], spec["warmup"],
                                  warehouses=list(range(1, k + 1)), formulation=form)  # fmt: skip
            runs[str(k)] = metrics
        return {"runs": runs, "consistency": consistency(system)}
    if name == "htap":
        return {"runs": htap(system, size, spec)}
    if name == "longtx":
        return {"runs": longtx(system, size, spec)}
    if name == "ch":
        out: dict[str, Any] = {}
        if spec.get("oltp_seconds"):
            # fill tique's Cache first, as the issue asks (every system gets the same run); unless told otherwise
            # no checkpointer from here on, so the queries read every version the OLTP run wrote
            if not spec.get("checkpointer"):
                system.pause_maintenance()
            out["oltp"] = run_clients(system, size, spec["clients"][0], spec["oltp_seconds"], 0, formulation=form)
        out["cache_versions"] = system.versions_pending()
        out["ch"] = ch_queries(system, spec.get("repeat", 5), spec.get("queries"))
        return out
    if name == "profile":
        from benchmarks.tpcc.profile import profile

        return {"profile": profile(system, size, spec["count"], formulation=form)}
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

    conn = system.connect_analytical(None)  # analytical queries: each system's analytical session
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


def _olap_client(
    system: System,
    stop: threading.Event,
    times: list[float],
    queries: list[int],
    workers: int | None,
    gate: AbstractContextManager[Any],
) -> None:
    """Runs CH queries round-robin until ``stop``; each query is a read-only transaction."""
    from benchmarks.tpcc.ch import QUERIES

    conn = system.connect_analytical(workers)
    try:
        cur = conn.cursor()
        i = 0
        while not stop.is_set():
            sql = QUERIES[queries[i % len(queries)]]
            i += 1
            t0 = time.perf_counter()
            with gate:
                cur.execute(sql)
                cur.fetchall()
            conn.commit()
            times.append(time.perf_counter() - t0)
    finally:
        conn.close()


def htap(system: System, size: Scale, spec: dict[str, Any]) -> dict[str, Any]:
    """Figure 10: OLTP clients and analytical clients at once, for each (oltp, olap) pair of the grid, in order; a
    pair given again is run again (the database grows as runs go on, so a pair is best measured between others)."""
    runs: dict[str, Any] = {}
    queries = spec.get("queries") or list(range(1, 23))
    for oltp_n, olap_n in spec["grid"]:
        stop = threading.Event()
        times: list[float] = []
        workers, gate = spec.get("olap_workers"), system.analytical_gate(spec.get("olap_slots"))
        olap = [
            threading.Thread(target=_olap_client, args=(system, stop, times, queries, workers, gate))
            for _ in range(olap_n)
        ]
        for t in olap:
            t.start()
        t0 = time.monotonic()
        if oltp_n:
            metrics = run_clients(system, size, oltp_n, spec["duration"], spec["warmup"],
                                  formulation=spec.get("formulation", "standard"))  # fmt: skip
        else:
            time.sleep(spec["duration"] + spec["warmup"])
            metrics = {"tpmC": 0.0, "tps": 0.0, "abort_rate": 0.0}
        stop.set()
        for t in olap:
            t.join(600)
        wall = time.monotonic() - t0
        key = f"{oltp_n}-{olap_n}"
        if key in runs:  # a pair again (4:0,4:2,4:0,4:2: each run beside runs without analytical clients)
            key += f" ({sum(k.split(' ')[0] == key for k in runs) + 1})"
        runs[key] = {
            "oltp_clients": oltp_n,
            "olap_clients": olap_n,
            "tpmC": metrics["tpmC"],
            "tps": metrics["tps"],
            "abort_rate": metrics["abort_rate"],
            "olap_queries": len(times),
            "olap_queries_per_min": round(len(times) * 60 / wall, 2),
            "olap_query_median_s": round(statistics.median(times), 4) if times else None,
        }
    return runs


def longtx(system: System, size: Scale, spec: dict[str, Any]) -> dict[str, Any]:
    """Figure 12: one long read-write transaction (it updates ``rows`` stock rows of warehouse 1, one
    statement each) over and over beside TPC-C clients, with and without tique's priority mode."""
    runs: dict[str, Any] = {}
    modes = [False, True] if system.name.startswith("tique") else [False]
    for priority in modes:
        stop = threading.Event()
        done: list[dict[str, float]] = []

        thread = threading.Thread(target=_long_client, args=(system, size, spec, priority, stop, done))
        thread.start()
        metrics = run_clients(system, size, spec["clients"][0], spec["duration"], spec["warmup"],
                              formulation=spec.get("formulation", "standard"))  # fmt: skip
        stop.set()
        thread.join(600)
        ok = [d for d in done if d["ok"]]
        runs["priority" if priority else "plain"] = {
            "priority": priority,
            "long_committed": len(ok),
            "long_failed": len(done) - len(ok),
            "long_attempts_mean": round(statistics.fmean(d["attempts"] for d in done), 2) if done else None,
            "long_attempts_max": max((d["attempts"] for d in done), default=None),
            "long_latency_median_s": round(statistics.median(d["seconds"] for d in ok), 3) if ok else None,
            "oltp_tpmC": metrics["tpmC"],
            "oltp_abort_rate": metrics["abort_rate"],
        }
    return runs


def _long_client(
    system: System, size: Scale, spec: dict[str, Any], priority: bool, stop: threading.Event, done: list[Any]
) -> None:
    import random

    rng = random.Random(5)
    conn = system.connect()
    try:
        while not stop.is_set():
            items = rng.sample(range(1, size.items + 1), spec["rows"])
            attempts = [0]

            def work(c: Any, items: list[int] = items, attempts: list[int] = attempts) -> None:
                attempts[0] += 1
                cur = c.cursor()
                for i in items:
                    cur.execute("UPDATE stock SET s_ytd = s_ytd + 1 WHERE s_w_id = 1 AND s_i_id = %s", (i,))

            t0 = time.perf_counter()
            try:
                if hasattr(conn, "run"):  # tique: its own retry loop, with or without priority
                    conn.run(work, retries=spec["max_attempts"] - 1, priority=priority)
                else:
                    _retry(system, conn, work, spec["max_attempts"])
                ok = True
            except Exception:
                ok = False
            done.append({"ok": ok, "attempts": attempts[0], "seconds": time.perf_counter() - t0})
    finally:
        conn.close()


def _retry(system: System, conn: Any, work: Any, attempts: int) -> None:
    for attempt in range(attempts):
        try:
            work(conn)
            conn.commit()
            return
        except Exception as exc:
            try:
                conn.rollback()
            except Exception:
                pass
            if not system.is_conflict(exc) or attempt == attempts - 1:
                raise
