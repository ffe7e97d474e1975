"""How fast the Elle-style checker is: a 100,000-transaction list-append history, checked, with time and peak
memory written to a file.

The history comes from an in-memory simulation of a snapshot-isolated store (interleaved clients, first
committer wins), so it has the shape of a real one (overlapping transactions, write skews, aborts) at any size;
``--from FILE`` checks a recorded history instead (for example one from ``tique elle run``).
"""

from __future__ import annotations

import argparse
import bisect
import random
import resource
import time
from pathlib import Path
from typing import Any

from benchmarks.common import machine_info, write_json
from tique.elle.checker import analyze
from tique.elle.history import Mop, Op, dump, load


def simulate(txns: int, clients: int = 8, keys: int = 8, max_ops: int = 4, seed: int = 1) -> list[Op]:
    rng = random.Random(seed)
    lists: dict[int, list[int]] = {}
    versions: dict[int, list[tuple[int, int]]] = {}  # key -> [(commit seq, length after it)]
    last_write: dict[int, int] = {}
    commits = 0
    clock = 0
    ops: list[Op] = []
    running: dict[int, dict[str, Any]] = {}
    started = done = 0
    counter = 0
    while done < txns:
        p = rng.randrange(clients)
        clock += 1
        t = running.get(p)
        if t is None:
            if started >= txns:
                continue
            base = (started * 1) // 40
            plan = []
            for _ in range(rng.randint(1, max_ops)):
                k = base + rng.randrange(keys)
                if rng.random() < 0.5:
                    plan.append(("r", k))
                else:
                    counter += 1
                    plan.append(("append", k, counter))
            running[p] = {"plan": plan, "done": [], "start": commits, "writes": {}}
            ops.append(
                Op(0, "invoke", p, tuple(Mop(m[0], m[1], m[2] if m[0] == "append" else None) for m in plan), clock)
            )
            started += 1
            continue
        if t["plan"]:
            m = t["plan"].pop(0)
            if m[0] == "r":
                hist = versions.get(m[1], [])
                i = bisect.bisect_right(hist, (t["start"], float("inf")))
                length = hist[i - 1][1] if i else 0
                seen = lists.get(m[1], [])[:length] + t["writes"].get(m[1], [])
                t["done"].append(Mop("r", m[1], tuple(seen)))
            else:
                t["writes"].setdefault(m[1], []).append(m[2])
                t["done"].append(Mop("append", m[1], m[2]))
            continue
        del running[p]
        done += 1
        if any(last_write.get(k, -1) >= t["start"] for k in t["writes"]):
            ops.append(Op(0, "fail", p, tuple(t["done"]), clock))
            continue
        for k, vs in t["writes"].items():
            lists.setdefault(k, []).extend(vs)
            versions.setdefault(k, []).append((commits + 1, len(lists[k])))
            last_write[k] = commits
        commits += 1
        ops.append(Op(0, "ok", p, tuple(t["done"]), clock))
    return [Op(i, op.type, op.process, op.value, op.time) for i, op in enumerate(ops)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks elle", description=__doc__)
    parser.add_argument("--txns", type=int, default=100_000)
    parser.add_argument("--from", dest="source", help="check this history file instead of a simulated one")
    parser.add_argument("--out", default="results/elle_checker.json")
    args = parser.parse_args(argv)
    if args.source:
        ops = load(args.source)
        origin = args.source
    else:
        ops = simulate(args.txns)
        origin = f"simulated snapshot-isolated store, {args.txns} transactions"
        dump(ops, Path(args.out).with_suffix(".history.json"))
    t0 = time.perf_counter()
    result = analyze(ops)
    seconds = time.perf_counter() - t0
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    payload = {
        "machine": machine_info(),
        "history": origin,
        "transactions": result.txn_count,
        "check_seconds": round(seconds, 2),
        "peak_rss_mib": round(peak_mib, 1),
        "valid_snapshot_isolation": result.valid("snapshot-isolation"),
        "anomaly_types": sorted(result.anomalies),
        "stats": result.stats,
    }
    print(
        f"checked {result.txn_count} transactions in {seconds:.1f} s, peak memory {peak_mib:.0f} MiB; "
        f"snapshot isolation: {'valid' if payload['valid_snapshot_isolation'] else 'INVALID'} "
        f"(anomalies: {', '.join(payload['anomaly_types']) or 'none'})"
    )
    print(f"written to {write_json(args.out, payload)}")
    return 0
