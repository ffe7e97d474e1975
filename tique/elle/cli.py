"""``tique elle run`` and ``tique elle check``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tique.elle.checker import MODELS, analyze, summarize
from tique.elle.history import HistoryError, load


def check_file(path: str, model: str, as_json: bool = False) -> int:
    if model not in MODELS:
        print(f"tique elle: unknown model {model!r}; choose one of {', '.join(MODELS)}", file=sys.stderr)
        return 2
    try:
        ops = load(path)
    except (HistoryError, OSError) as exc:
        print(f"tique elle: {exc}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    try:
        result = analyze(ops)
    except HistoryError as exc:
        print(f"tique elle: {exc}", file=sys.stderr)
        return 2
    if as_json:
        print(json.dumps(result.to_json(model), indent=1))
    else:
        for line in summarize(result, model):
            print(line)
        print(f"checked in {time.perf_counter() - t0:.1f} s; {model}: {'VALID' if result.valid(model) else 'INVALID'}")
    return 0 if result.valid(model) else 1


def run_and_check(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from tique.elle.workload import Plan, run, write

    plan = Plan(args.url, args.clients, args.txns, args.keys, args.max_ops, args.system, args.negative)
    checkpointer = None
    if args.checkpoint_interval and args.system == "tique":
        from tique.checkpoint import start_background

        checkpointer = start_background(args.url, args.checkpoint_interval, max_cache_rows=None)
    with tqdm(total=args.txns, desc="elle workload", unit="txn") as bar:
        ops = run(plan, processes=args.processes, progress=bar.update)
    checkpoints = {}
    if checkpointer is not None:
        checkpointer.stop()
        checkpoints = {
            "checkpoints": checkpointer.totals["runs"],
            "versions_moved": checkpointer.totals["moved"],
            "errors": checkpointer.errors + [e for r in checkpointer.reports for e in r.errors],
        }
        print(f"checkpointer: {checkpoints['checkpoints']} runs, {checkpoints['versions_moved']} versions moved")
    path = write(ops, args.out)
    completions = [op for op in ops if op.type != "invoke"]
    counts = {kind: sum(op.type == kind for op in completions) for kind in ("ok", "fail", "info")}
    print(
        f"history: {path} ({len(completions)} transactions: {counts['ok']} ok, {counts['fail']} failed, "
        f"{counts['info']} unknown; abort rate {counts['fail'] / max(len(completions), 1):.1%})"
    )
    result = analyze(ops)
    summary = result.to_json(args.model) | {
        "abort_rate": counts["fail"] / max(len(completions), 1),
        "counts": counts,
        "system": args.system,
        "negative": args.negative,
        "checkpointer": checkpoints,
    }
    (Path(args.out) / "results.json").write_text(json.dumps(summary, indent=1) + "\n")
    for line in summarize(result, args.model):
        print(line)
    print(f"{args.model}: {'VALID' if result.valid(args.model) else 'INVALID'}")
    return 0 if result.valid(args.model) else 1


def main(args: argparse.Namespace) -> int:
    if args.elle_command == "check":
        return check_file(args.file, args.model, args.json)
    return run_and_check(args)
