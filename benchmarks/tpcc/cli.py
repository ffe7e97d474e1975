"""``python -m benchmarks tpcc|contention ...``: each system in its own worker process, side by side in one
run on the same generated data; one JSON file (schema in benchmarks/RESULTS.md), a markdown table, a PNG.

JSON: {"machine": ..., "settings": ..., "systems": {name: metrics of the first client count},
       "by_clients": {N: {name: metrics}}, "skipped": {name: reason}}
with metrics = {tpmC, tps, abort_rate, errors, retries, latency_ms: {type: {p50, p95, p99}}, consistency, ...}.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from benchmarks.common import ROOT, machine_info, write_json
from benchmarks.tpcc.data import DATA_VERSION, Scale, generate
from benchmarks.tpcc.systems import SYSTEMS

DATA_CACHE = Path(tempfile.gettempdir()) / "tique-tpcc-data"


def parse(argv: list[str], command: str) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=f"python -m benchmarks {command}")
    p.add_argument("--systems", default="tique,monetdb,postgres", help=f"comma list of {', '.join(SYSTEMS)}")
    p.add_argument("--warehouses", type=int, default=2)
    p.add_argument("--scale", type=float, default=1.0, help="fraction of TPC-C's per-warehouse cardinalities")
    p.add_argument("--clients", default="4", help="one number or a comma list (run one after another)")
    p.add_argument("--duration", type=float, default=60)
    p.add_argument("--warmup", type=float, default=10)
    p.add_argument("--out", default=f"results/{command}.json")
    if command == "contention":
        p.add_argument("--warehouse-counts", default=None, help="comma list; default W, W/2, ..., 1")
    return p.parse_args(argv)


def run_workers(command: str, args: argparse.Namespace, extra: dict[str, Any]) -> dict[str, Any]:
    size = Scale(args.warehouses, args.scale)
    csv_dir = DATA_CACHE / f"v{DATA_VERSION}-w{size.warehouses}-s{size.scale}"
    t0 = time.monotonic()
    generate(csv_dir, size)
    print(f"data: {csv_dir} ({time.monotonic() - t0:.1f} s)", flush=True)
    results: dict[str, Any] = {}
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    bar = tqdm(systems, desc=command, unit="system")
    try:
        for name in bar:
            bar.set_postfix_str(name)
            spec = {"system": name, "csv_dir": str(csv_dir), "warehouses": size.warehouses, "scale": size.scale,
                    "clients": [int(c) for c in str(args.clients).split(",")], "duration": args.duration,
                    "warmup": args.warmup, "experiment": command, **extra}  # fmt: skip
            with tempfile.TemporaryDirectory() as tmp:
                spec_file, out_file = Path(tmp) / "spec.json", Path(tmp) / "out.json"
                spec_file.write_text(json.dumps(spec))
                proc = subprocess.Popen([sys.executable, "-m", "benchmarks.tpcc.run", str(spec_file), str(out_file)],
                                        cwd=ROOT)  # fmt: skip
                try:
                    proc.wait()
                except KeyboardInterrupt:
                    proc.terminate()
                    proc.wait(60)
                    raise
                results[name] = json.loads(out_file.read_text()) if out_file.exists() else {"failed": "no output"}
            r = results[name]
            if "skipped" in r or "failed" in r:
                print(f"{name}: {r.get('skipped') or r.get('failed')}", flush=True)
    except KeyboardInterrupt:
        print("interrupted: writing the partial results", flush=True)
    finally:
        bar.close()
    return results


def main(argv: list[str], command: str = "tpcc") -> int:
    args = parse(argv, command)
    extra: dict[str, Any] = {}
    if command == "contention":
        counts = args.warehouse_counts or ",".join(
            str(k) for k in sorted({max(1, args.warehouses // 2**i) for i in range(8)}, reverse=True)
        )
        extra["warehouse_counts"] = [int(k) for k in counts.split(",")]
    results = run_workers(command, args, extra)
    payload: dict[str, Any] = {"machine": machine_info(), "settings": vars(args) | extra, "command": command}
    payload["skipped"] = {n: r.get("skipped") or r.get("failed") for n, r in results.items() if "runs" not in r}
    ok = {n: r for n, r in results.items() if "runs" in r}
    keys = list(next(iter(ok.values()))["runs"]) if ok else []
    payload["by_" + ("clients" if command == "tpcc" else "warehouses")] = {
        k: {n: r["runs"][k] | {"load_s": r["load_s"]} for n, r in ok.items() if k in r["runs"]} for k in keys
    }
    payload["systems"] = {n: r["runs"][keys[0]] | {"load_s": r["load_s"]} for n, r in ok.items() if keys}
    if command == "contention":
        payload["consistency"] = {n: r["consistency"] for n, r in ok.items()}
    out = write_json(args.out, payload)
    md = markdown(payload, command)
    out.with_suffix(".md").write_text(md)
    plot(payload, command, out.with_suffix(".png"))
    print(md)
    print(f"wrote {out}, {out.with_suffix('.md')}, {out.with_suffix('.png')}")
    return 0


def markdown(payload: dict[str, Any], command: str) -> str:
    by_key = "by_clients" if command == "tpcc" else "by_warehouses"
    head = "clients" if command == "tpcc" else "warehouses used"
    lines = [f"| {head} | system | tpmC | txn/s | abort rate | errors | NewOrder p50/p95/p99 ms | "
             "Payment p50/p95/p99 ms | consistency |", "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for k, systems in payload[by_key].items():
        for name, m in systems.items():
            lat = m["latency_ms"]
            cons = m.get("consistency", payload.get("consistency", {}).get(name, {}))
            lines.append(
                f"| {k} | {name} | {m['tpmC']:.0f} | {m['tps']:.1f} | {m['abort_rate']:.1%} | {m['errors']} | "
                + " | ".join(
                    f"{lat[t]['p50']:.1f} / {lat[t]['p95']:.1f} / {lat[t]['p99']:.1f}" for t in ("NewOrder", "Payment")
                )
                + f" | {'ok' if cons.get('all_ok') else 'FAILED' if cons else '-'} |"
            )
    for name, reason in payload.get("skipped", {}).items():
        lines.append(f"\nskipped {name}: {reason}")
    return "\n".join(lines) + "\n"


def plot(payload: dict[str, Any], command: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_key = "by_clients" if command == "tpcc" else "by_warehouses"
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    names = sorted({n for systems in payload[by_key].values() for n in systems})
    keys = list(payload[by_key])
    for name in names:
        xs = [int(k) for k in keys if name in payload[by_key][k]]
        ax1.plot(xs, [payload[by_key][str(x)][name]["tpmC"] for x in xs], "o-", label=name)
        ax2.plot(xs, [100 * payload[by_key][str(x)][name]["abort_rate"] for x in xs], "o-", label=name)
    label = "clients" if command == "tpcc" else "warehouses used (fewer = more contention)"
    ax1.set(xlabel=label, ylabel="tpmC", title="TPC-C throughput")
    ax2.set(xlabel=label, ylabel="aborted attempts (%)", title="abort rate")
    ax1.set_yscale("log")
    ax1.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
