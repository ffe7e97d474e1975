"""The checkpointer under a steady update workload: bounded growth, its throughput, and its cost to the foreground.

Writers (threads, embedded database) run transfer transactions - two single-row UPDATEs and one INSERT into a
history table - for a number of phases, alternating without and with a background checkpointer, in one run.
Every half second the Cache rows (all tables) and metadata rows (commits + outcomes) are sampled. After each
phase without the checkpointer, one checkpoint drains the Cache with the writers stopped: the checkpointer's
throughput (versions moved to Storage per second) on a full Cache.

    python -m benchmarks checkpoint --clients 4 --phase-seconds 20 --phases 4 --out results/checkpoint.json

Writes the JSON (schema below) and a PNG of Cache and metadata size over time.

    {"machine": {...}, "settings": {...},
     "phases": [{"checkpointer": bool, "tps": float, "commits": int, "aborts": int,
                 "samples": [[t_s, cache_rows, metadata_rows], ...], "max_cache_rows": int,
                 "final_cache_rows": int, "checkpoints": int, "moved": int, "moved_per_s": float}],
     "drains": [{"rows_moved": int, "cache_rows_before": int, "seconds": float, "rows_per_s": float}],
     "summary": {"tps_without": median, "tps_with": median, "ratio": with/without, ...}}
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

import tique
from benchmarks.common import machine_info, write_json
from tique.catalog import table_info
from tique.checkpoint import BackgroundCheckpointer, Checkpointer
from tique.database import Database
from tique.engine.base import RawConnection
from tique.errors import SerializationFailure

ACCOUNTS = 10_000


def sizes(raw: RawConnection) -> tuple[int, int]:
    cache = sum(
        int(raw.execute(f"SELECT COUNT(*) FROM {table_info(raw, 'sys', t).cache}").scalar()) for t in ("acc", "hist")
    )
    meta = sum(int(raw.execute(f"SELECT COUNT(*) FROM tique.{t}").scalar()) for t in ("commits", "outcomes"))
    return cache, meta


def setup(url: str) -> None:
    conn = tique.connect(url)
    cur = conn.cursor()
    cur.execute("CREATE TABLE acc (id INT PRIMARY KEY, bal BIGINT)")
    cur.execute("CREATE TABLE hist (id BIGINT PRIMARY KEY, a INT, b INT, amount INT)")
    conn.commit()
    conn.bulk_load("acc", ((i, 1000) for i in range(ACCOUNTS)))
    conn.close()


def phase(url: str, clients: int, seconds: float, with_checkpointer: bool, interval: float) -> dict[str, Any]:
    stop = threading.Event()
    counts = {"commits": 0, "aborts": 0}
    lock = threading.Lock()
    next_id = [int(time.time() * 1000) * 1000]

    def writer(seed: int) -> None:
        rng = random.Random(seed)
        conn = tique.connect(url)
        cur = conn.cursor()
        while not stop.is_set():
            a, b = rng.sample(range(ACCOUNTS), 2)
            with lock:
                next_id[0] += 1
                hid = next_id[0]
            try:
                cur.execute("UPDATE acc SET bal = bal - 1 WHERE id = %s", (a,))
                cur.execute("UPDATE acc SET bal = bal + 1 WHERE id = %s", (b,))
                cur.execute("INSERT INTO hist VALUES (%s, %s, %s, 1)", (hid, a, b))
                conn.commit()
                with lock:
                    counts["commits"] += 1
            except SerializationFailure:
                conn.rollback()
                with lock:
                    counts["aborts"] += 1
        conn.close()

    db = Database.get(url)
    sampler = db.connect_raw()
    ckpt = BackgroundCheckpointer(db.connect_raw, interval) if with_checkpointer else None
    threads = [threading.Thread(target=writer, args=(i,)) for i in range(clients)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    if ckpt:
        ckpt.start()
    samples = []
    label = "with checkpointer" if with_checkpointer else "without"
    with tqdm(total=int(seconds), desc=f"phase {label}", unit="s", leave=False) as bar:
        while (elapsed := time.monotonic() - t0) < seconds:
            cache, meta = sizes(sampler)
            samples.append([round(elapsed, 2), cache, meta])
            bar.n = int(elapsed)
            bar.refresh()
            time.sleep(0.5)
    commits_at_end = counts["commits"]
    wall = time.monotonic() - t0
    stop.set()
    for t in threads:
        t.join(60)
    if ckpt:
        ckpt.stop()
    cache, meta = sizes(sampler)
    samples.append([round(time.monotonic() - t0, 2), cache, meta])
    sampler.close()
    reports = ckpt.reports if ckpt else []
    totals = ckpt.totals if ckpt else {"runs": 0, "moved": 0, "busy_s": 0.0, "conflicts": 0}
    busy, moved = totals["busy_s"], totals["moved"]
    return {
        "checkpointer": with_checkpointer,
        "seconds": round(wall, 2),
        "commits": commits_at_end,
        "aborts": counts["aborts"],
        "tps": round(commits_at_end / wall, 2),
        "samples": samples,
        "max_cache_rows": max(s[1] for s in samples),
        "final_cache_rows": samples[-1][1],
        "max_metadata_rows": max(s[2] for s in samples),
        "checkpoints": totals["runs"],
        "moved": moved,
        "moved_per_s": round(moved / busy, 1) if busy else None,
        "conflicts_retried": totals["conflicts"],
        "deferred_deletes": sum(1 for r in reports for t in r.tables.values() if t.deferred),
        "errors": (ckpt.errors if ckpt else []) + [e for r in reports for e in r.errors][:5],
    }


def drain(url: str) -> dict[str, Any]:
    raw = Database.get(url).connect_raw()
    before, _ = sizes(raw)
    t0 = time.monotonic()
    report = Checkpointer(raw).run_once()
    seconds = time.monotonic() - t0
    after, _ = sizes(raw)
    raw.close()
    return {
        "cache_rows_before": before,
        "cache_rows_after": after,
        "rows_moved": report.moved,
        "cache_rows_cleaned": report.cleaned,
        "seconds": round(seconds, 3),
        "rows_per_s": round(report.moved / seconds, 1) if seconds else None,
    }


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for i, ph in enumerate(result["phases"]):
        t = [s[0] for s in ph["samples"]]
        style = "-" if ph["checkpointer"] else "--"
        label = f"phase {i + 1} {'with' if ph['checkpointer'] else 'without'} checkpointer ({ph['tps']:.0f} txn/s)"
        ax1.plot(t, [s[1] for s in ph["samples"]], style, label=label)
        ax2.plot(t, [s[2] for s in ph["samples"]], style, label=label)
    ax1.set(title="Cache rows (all tables)", xlabel="seconds into the phase", ylabel="rows")
    ax2.set(title="metadata rows (commits + outcomes)", xlabel="seconds into the phase", ylabel="rows")
    ax1.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks checkpoint", description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--phase-seconds", type=float, default=20)
    parser.add_argument("--phases", type=int, default=4, help="alternating without/with the checkpointer")
    parser.add_argument("--interval", type=float, default=1.0, help="checkpointer interval in seconds")
    parser.add_argument("--out", default="results/checkpoint.json")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tique-ckpt-") as tmp:
        url = f"monetdbe://{Path(tmp) / 'db'}"
        setup(url)
        phases, drains = [], []
        for i in range(args.phases):
            with_ckpt = i % 2 == 1
            phases.append(phase(url, args.clients, args.phase_seconds, with_ckpt, args.interval))
            ph = phases[-1]
            print(
                f"phase {i + 1} {'with' if with_ckpt else 'without'} checkpointer: {ph['tps']} txn/s, "
                f"Cache max {ph['max_cache_rows']} final {ph['final_cache_rows']}, {ph['checkpoints']} checkpoints",
                flush=True,
            )
            if not with_ckpt:
                drains.append(drain(url))
                print(f"  drain: {drains[-1]}", flush=True)
        Database.get(url).close()
    without = [p["tps"] for p in phases if not p["checkpointer"]]
    with_ = [p["tps"] for p in phases if p["checkpointer"]]
    summary = {
        "tps_without": statistics.median(without) if without else None,
        "tps_with": statistics.median(with_) if with_ else None,
        "drain_rows_per_s": statistics.median([d["rows_per_s"] for d in drains if d["rows_per_s"]]) if drains else None,
        "max_cache_rows_with": max((p["max_cache_rows"] for p in phases if p["checkpointer"]), default=None),
        "max_cache_rows_without": max((p["max_cache_rows"] for p in phases if not p["checkpointer"]), default=None),
    }
    if summary["tps_without"] and summary["tps_with"]:
        summary["ratio"] = round(summary["tps_with"] / summary["tps_without"], 3)
    result = {
        "machine": machine_info(),
        "settings": vars(args),
        "phases": phases,
        "drains": drains,
        "summary": summary,
    }
    out = write_json(args.out, result)
    png = out.with_suffix(".png")
    plot(result, png)
    print(f"summary: {summary}\nwrote {out} and {png}")
    return 0
