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
from benchmarks.tpcc.txns import FORMULATIONS

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
    p.add_argument(
        "--client-processes",
        action="store_true",
        help="tpcc: each client a process of its own (systems with a server: tique-mapi, *-mapi, postgres)",
    )
    p.add_argument("--formulation", choices=sorted(FORMULATIONS), default="standard",
                   help="the transactions' SQL, the same for every system: one row per SELECT (standard) or "
                   "NewOrder's items, stock rows and Delivery's districts in one SELECT each (batched)")  # fmt: skip
    if command == "contention":
        p.add_argument("--warehouse-counts", default=None, help="comma list; default W, W/2, ..., 1")
    if command == "ch":
        p.add_argument("--oltp-seconds", type=float, default=30, help="TPC-C run before the queries (fills Cache)")
        p.add_argument("--repeat", type=int, default=5, help="runs per query; the median is reported")
        p.add_argument("--checkpointer", action="store_true",
                       help="keep tique's checkpointer running (default: paused from the OLTP run on, so the "
                       "queries read every version it wrote)")  # fmt: skip
    if command == "htap":
        p.add_argument("--grid", default="4:0,4:1,4:2,0:2,1:2,2:2",
                       help="OLTP:analytical client pairs, run one after another")  # fmt: skip
        p.add_argument("--olap-workers", type=int, default=None,
                       help="cap each analytical session's threads (MonetDB setworkerlimit, PostgreSQL parallel "
                       "workers); default: the engines' own")  # fmt: skip
        p.add_argument("--olap-slots", type=int, default=None,
                       help="at most this many analytical queries at once (tique: its analytical_slots setting; "
                       "others: a semaphore in front of them); default: no limit")  # fmt: skip
    if command == "profile":
        p.add_argument("--count", type=int, default=100, help="runs of each transaction type (one client)")
    if command == "longtx":
        p.add_argument("--rows", type=int, default=100, help="stock rows the long transaction updates")
        p.add_argument("--max-attempts", type=int, default=20)
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
    extra: dict[str, Any] = {"formulation": args.formulation, "client_processes": args.client_processes}
    if command == "contention":
        counts = args.warehouse_counts or ",".join(
            str(k) for k in sorted({max(1, args.warehouses // 2**i) for i in range(8)}, reverse=True)
        )
        extra["warehouse_counts"] = [int(k) for k in counts.split(",")]
    if command == "ch":
        extra.update(oltp_seconds=args.oltp_seconds, repeat=args.repeat, checkpointer=args.checkpointer)
    if command == "htap":
        extra["grid"] = [[int(x) for x in pair.split(":")] for pair in args.grid.split(",")]
        extra["olap_workers"] = args.olap_workers
        extra["olap_slots"] = args.olap_slots
    if command == "longtx":
        extra.update(rows=args.rows, max_attempts=args.max_attempts)
    if command == "profile":
        extra["count"] = args.count
    results = run_workers(command, args, extra)
    payload: dict[str, Any] = {"machine": machine_info(), "settings": vars(args) | extra, "command": command}
    if command in ("ch", "htap", "longtx", "profile"):
        return finish_other(command, args, payload, results)
    payload["skipped"] = {n: r.get("skipped") or r.get("failed") for n, r in results.items() if "runs" not in r}
    ok = {n: r for n, r in results.items() if "runs" in r}
    keys = list(next(iter(ok.values()))["runs"]) if ok else []
    payload["by_" + ("clients" if command == "tpcc" else "warehouses")] = {
        k: {n: r["runs"][k] | {"load_s": r["load_s"]} for n, r in ok.items() if k in r["runs"]} for k in keys
    }
    payload["systems"] = {n: r["runs"][keys[0]] | {"load_s": r["load_s"]} for n, r in ok.items() if keys}
    payload["counters"] = {n: r["counters"] for n, r in ok.items() if r.get("counters")}  # over all runs
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
            clients = f"{k} processes" if m.get("client_processes") else k
            lines.append(
                f"| {clients} | {name} | {m['tpmC']:.0f} | {m['tps']:.1f} | {m['abort_rate']:.1%} | {m['errors']} | "
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


def finish_other(command: str, args: argparse.Namespace, payload: dict[str, Any], results: dict[str, Any]) -> int:
    payload["skipped"] = {n: r.get("skipped") or r.get("failed") for n, r in results.items() if "load_s" not in r}
    systems = {n: {k: v for k, v in r.items() if k != "system"} for n, r in results.items() if "load_s" in r}
    if command in ("ch", "profile"):
        for r in systems.values():
            r.update(r.pop(command))
    payload["systems"] = systems
    out = write_json(args.out, payload)
    md = {"ch": ch_markdown, "htap": htap_markdown, "longtx": longtx_markdown, "profile": profile_markdown}[command](
        payload
    )
    out.with_suffix(".md").write_text(md)
    plots = {"ch": ch_plot, "htap": htap_plot, "longtx": longtx_plot, "profile": profile_plot}
    plots[command](payload, out.with_suffix(".png"))
    print(md)
    print(f"wrote {out}, {out.with_suffix('.md')}, {out.with_suffix('.png')}")
    return 0


def _skipped(payload: dict[str, Any]) -> str:
    return "".join(f"\nskipped {n}: {reason}" for n, reason in payload.get("skipped", {}).items())


def profile_markdown(payload: dict[str, Any]) -> str:
    lines = ["| system | transaction | mean ms | statements | engine calls | ms inside the engine |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for name, r in payload["systems"].items():
        for kind, m in r["types"].items():
            calls = "-" if m["engine_calls"] is None else m["engine_calls"]
            inside = "-" if m["engine_ms"] is None else m["engine_ms"]
            lines.append(f"| {name} | {kind} | {m['mean_ms']} | {m['statements']} | {calls} | {inside} |")
    for name, r in payload["systems"].items():
        if r.get("top_engine_calls"):
            lines += ["", f"{name}: engine calls by time per transaction", "", "| per txn | ms per txn | call |",
                      "|---|---|---|"]  # fmt: skip
            for c in r["top_engine_calls"]:
                text = c["call"].replace("|", "/")
                lines.append(f"| {c['per_txn']} | {c['ms_per_txn']} | `{text}` |")
    return "\n".join(lines) + _skipped(payload) + "\n"


def profile_plot(payload: dict[str, Any], path: Path) -> None:
    plt = _figure()
    names = list(payload["systems"])
    kinds = list(next(iter(payload["systems"].values()))["types"]) if names else []
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / max(len(names), 1)
    for i, name in enumerate(names):
        types = payload["systems"][name]["types"]
        ax.bar([k + i * width for k in range(len(kinds))], [types[t]["mean_ms"] for t in kinds], width, label=name)
    ax.set_xticks([k + width * (len(names) - 1) / 2 for k in range(len(kinds))], kinds)
    ax.set(ylabel="mean ms (one client)", title="TPC-C transaction latency, no contention")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def ch_markdown(payload: dict[str, Any]) -> str:
    names = list(payload["systems"])
    lines = ["| query | " + " | ".join(f"{n} (s)" for n in names) + " | rows |", "|---" * (len(names) + 2) + "|"]
    first = payload["systems"][names[0]] if names else {}
    for q in [str(i) for i in range(1, 23)]:
        cells = [str(payload["systems"][n]["queries"].get(q, "error")) for n in names]
        lines.append(f"| Q{q} | " + " | ".join(cells) + f" | {first.get('rows', {}).get(q, '-')} |")
    lines.append("| total | " + " | ".join(f"{payload['systems'][n]['total_s']:.3f}" for n in names) + " | |")
    same = [n for n in names if payload["systems"][n].get("checksums") == first.get("checksums")]
    note = f"\nidentical answers (checksums) on: {', '.join(same)}"
    pending = {n: r["cache_versions"] for n, r in payload["systems"].items() if r.get("cache_versions") is not None}
    if pending:
        how = "checkpointer running" if payload["settings"].get("checkpointer") else "no checkpointer after the load"
        note += f"\nversions in tique's Cache tables when the queries began ({how}): " + (
            ", ".join(f"{n} {v}" for n, v in pending.items())
        )
    errors = {n: payload["systems"][n]["errors"] for n in names if payload["systems"][n].get("errors")}
    return "\n".join(lines) + note + (f"\nerrors: {errors}" if errors else "") + _skipped(payload) + "\n"


def htap_markdown(payload: dict[str, Any]) -> str:
    lines = ["| system | OLTP clients | analytical clients | tpmC | txn/s | abort rate | queries/min | query median s "
             "|",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for n, r in payload["systems"].items():
        for run in r["runs"].values():
            lines.append(f"| {n} | {run['oltp_clients']} | {run['olap_clients']} | {run['tpmC']:.0f} | "
                         f"{run['tps']:.1f} | {run['abort_rate']:.1%} | {run['olap_queries_per_min']} | "
                         f"{run['olap_query_median_s']} |")  # fmt: skip
    return "\n".join(lines) + _skipped(payload) + "\n"


def longtx_markdown(payload: dict[str, Any]) -> str:
    lines = ["| system | priority | long txns committed | failed | attempts mean / max | long latency p50 s | "
             "OLTP tpmC | OLTP abort rate |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for n, r in payload["systems"].items():
        for run in r["runs"].values():
            lines.append(f"| {n} | {run['priority']} | {run['long_committed']} | {run['long_failed']} | "
                         f"{run['long_attempts_mean']} / {run['long_attempts_max']} | {run['long_latency_median_s']} | "
                         f"{run['oltp_tpmC']:.0f} | {run['oltp_abort_rate']:.1%} |")  # fmt: skip
    return "\n".join(lines) + _skipped(payload) + "\n"


def _figure() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def ch_plot(payload: dict[str, Any], path: Path) -> None:
    plt = _figure()
    fig, ax = plt.subplots(figsize=(11, 4))
    names = list(payload["systems"])
    width = 0.8 / max(len(names), 1)
    for k, n in enumerate(names):
        qs = payload["systems"][n]["queries"]
        ax.bar([int(q) + k * width for q in qs], list(qs.values()), width, label=n)
    ax.set(xlabel="CH query", ylabel="median seconds (log)", yscale="log", title="CH-benCHmark per query")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def htap_plot(payload: dict[str, Any], path: Path) -> None:
    plt = _figure()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for n, r in payload["systems"].items():
        runs = list(r["runs"].values())
        fixed_oltp = [x for x in runs if x["oltp_clients"] == max(y["oltp_clients"] for y in runs)]
        fixed_olap = [x for x in runs if x["olap_clients"] == max(y["olap_clients"] for y in runs)]
        ax1.plot([x["olap_clients"] for x in fixed_oltp], [x["tpmC"] for x in fixed_oltp], "o-", label=n)
        ax2.plot([x["oltp_clients"] for x in fixed_olap], [x["olap_query_median_s"] or 0 for x in fixed_olap], "o-",
                 label=n)  # fmt: skip
    ax1.set(xlabel="analytical clients", ylabel="tpmC", title="OLTP throughput, fixed OLTP clients")
    ax2.set(xlabel="OLTP clients", ylabel="median query s", title="analytical latency, fixed analytical clients")
    ax1.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def longtx_plot(payload: dict[str, Any], path: Path) -> None:
    plt = _figure()
    fig, ax = plt.subplots(figsize=(7, 4))
    labels, values = [], []
    for n, r in payload["systems"].items():
        for run in r["runs"].values():
            labels.append(f"{n}{' priority' if run['priority'] else ''}")
            values.append(run["long_attempts_mean"] or 0)
    ax.bar(labels, values)
    ax.set(ylabel="attempts per long transaction (mean)", title="long read-write transactions")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
