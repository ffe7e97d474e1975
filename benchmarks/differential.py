"""Long differential run: generated schemas, rows, queries and DML on tique tables against plain MonetDB twins.

    python -m benchmarks differential --minutes 10 --seed 1 --out results/differential.json

Cases (one schema each, see tests/differential/runner.py) run with consecutive seeds from ``--seed`` until the
time is up. Writes the figures - cases, queries, statement shapes covered, MonetDB's own TLP violations, and
failures (0, or each with its statement) - to the JSON file and a Markdown twin next to it.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from tests.differential.runner import Case, Stats


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks differential", description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--queries", type=int, default=25, help="queries per case (schema)")
    parser.add_argument("--out", default="results/differential.json")
    args = parser.parse_args(argv)
    stats = Stats()
    started = time.monotonic()
    seed = args.seed
    with tempfile.TemporaryDirectory(prefix="tique-diff-") as tmp:
        url = f"monetdbe://{Path(tmp) / 'db'}"
        while time.monotonic() - started < args.minutes * 60:
            Case(url, seed, stats).run(args.queries)
            seed += 1
            if stats.cases % 10 == 0:
                print(f"{stats.cases} cases, {stats.queries} queries, {len(stats.failures)} failures", flush=True)
    result = {
        "settings": vars(args),
        "seconds": round(time.monotonic() - started, 1),
        "seeds": [args.seed, seed - 1],
        "cases": stats.cases,
        "queries": stats.queries,
        "both_failed": stats.both_failed,
        "rows_checkpointed": stats.moved,
        "shapes": dict(sorted(stats.shapes.items())),
        "engine_tlp_violations": stats.engine_tlp,
        "engine_tlp_examples": stats.engine_tlp_examples[:5],
        "engine_constraint_answers": stats.engine_constraint,
        "engine_constraint_examples": stats.engine_constraint_examples[:5],
        "failures": [vars(f) for f in stats.failures],
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    out.with_suffix(".md").write_text(markdown(result))
    print(f"{stats.cases} cases, {stats.queries} queries, {len(stats.failures)} failures -> {out}")
    return 1 if stats.failures else 0


def markdown(result: dict) -> str:  # type: ignore[type-arg]
    lines = [
        "# Differential run (tique tables vs plain MonetDB twins, TLP oracle)",
        "",
        f"- seeds {result['seeds'][0]}..{result['seeds'][1]}, {result['seconds']} s",
        f"- cases (schemas): {result['cases']}; queries: {result['queries']} "
        f"(failing alike on both sides: {result['both_failed']})",
        f"- rows moved to Storage by checkpoints: {result['rows_checkpointed']}",
        f"- MonetDB's own TLP violations on the plain twins (not tique's): {result['engine_tlp_violations']}",
        "- MonetDB's own wrong answers over its constraints on the plain twins (a constraint-free copy of the same "
        f"rows agrees with tique: a LEFT/FULL JOIN along a FOREIGN KEY): {result.get('engine_constraint_answers', 0)}",
        f"- failures: {len(result['failures'])}",
        "",
        "| statement shape | cases covering it |",
        "|---|---|",
        *[f"| {shape} | {n} |" for shape, n in result["shapes"].items()],
        "",
    ]
    for f in result["failures"]:
        lines += [f"## {f['kind']}", "", "```sql", f["sql"], "```", "", f["detail"], ""]
    return "\n".join(lines)
