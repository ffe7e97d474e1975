"""Per-statement profile of tique's NewOrder and Payment at a given TPC-C size (issue 14, item 2): one embedded
client, each engine call behind a transaction classified (begin, read of a table, flush to a Cache, commit
step) with its median time, with or without the checkpointer; then native point reads on the same Storage
tables under each MonetDB optimizer pipeline beside tique's rewritten point read.

    python -m benchmarks.profile_scale --warehouses 4 --scale 1.0 --count 30 [--no-checkpointer]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import time
from collections import defaultdict
from typing import Any

from benchmarks.tpcc import txns
from benchmarks.tpcc.cli import DATA_CACHE
from benchmarks.tpcc.data import DATA_VERSION, Scale, generate
from benchmarks.tpcc.profile import trace_engine
from benchmarks.tpcc.systems import make


def classify(sql: str) -> str:
    """What an engine call is for, from its text."""
    if "begin_txn" in sql:
        return "begin"
    if sql.startswith("SET optimizer"):
        return "set optimizer"
    flushed = re.findall(r'INSERT INTO "tique_data"\."[^"]*__(\w+)__cache"', sql)
    if flushed:  # one call may send several tables' rows and COMMIT's record
        record = " + record" if "tique." in sql else ""
        return f"flush {'+'.join(sorted(set(flushed)))}{record}"
    if re.search(r"\btique\.\w+\(", sql) or "tique.commits" in sql or ("tique.outcomes" in sql and "SELECT" not in sql):
        fn = re.search(r"\btique\.(\w+)", sql)
        return f"commit: {fn.group(1) if fn else sql[:40]}"
    tables = sorted(set(re.findall(r'"tique_data"\."[^"]*__(\w+)__(?:storage|cache)"', sql)))
    if sql.startswith(("EXEC", "SELECT")) and tables:
        # point: versions ranked in the engine; key: a key read's Storage probe or versions the client ranks
        if "ROW_NUMBER" in sql:
            kind = "point"
        elif ") = TRUE" in sql or "tq_p_" in sql or "tq_cts" in sql:
            kind = "key"
        else:
            kind = "scan"
        return f"read {'+'.join(tables)} ({kind})"
    return re.sub(r"\s+", " ", re.sub(r"-?\d+", "N", sql))[:60]


def run_type(conn: Any, log: list[tuple[str, float]], fn: Any, ctx: txns.Context, count: int) -> dict[str, Any]:
    per_call: dict[str, list[float]] = defaultdict(list)
    walls, engine = [], []
    done = 0
    while done < count:
        log.clear()
        t0 = time.perf_counter()
        try:
            fn(conn, ctx)
        except txns.UserAbort:
            continue
        walls.append(time.perf_counter() - t0)
        engine.append(sum(t for _, t in log))
        for sql, t in log:
            per_call[classify(sql)].append(t)
        done += 1
    rows = sorted(per_call.items(), key=lambda kv: -sum(kv[1]))
    return {
        "wall_ms_p50": round(1000 * statistics.median(walls), 2),
        "engine_ms_p50": round(1000 * statistics.median(engine), 2),
        "calls": [
            {
                "call": k,
                "per_txn": round(len(v) / count, 1),
                "ms_p50": round(1000 * statistics.median(v), 3),
                "ms_per_txn": round(1000 * sum(v) / count, 2),
            }
            for k, v in rows
        ],
    }


def native_point_reads(system: Any, size: Scale, conn: Any, reps: int) -> list[dict[str, Any]]:
    """The same point reads: native on the Storage table, and tique's rewrite, each under three pipelines."""
    raw = system_raw(system)
    rng = random.Random(3)
    shapes = {
        "stock": ("SELECT s_quantity, s_data FROM {t} WHERE s_w_id = {w} AND s_i_id = {i}", "stock",
                  lambda: {"w": rng.randint(1, size.warehouses), "i": rng.randint(1, size.items)}),
        "customer": ("SELECT c_discount, c_last, c_credit FROM {t} WHERE c_w_id = {w} AND c_d_id = {d} AND c_id = {i}",
                     "customer", lambda: {"w": rng.randint(1, size.warehouses), "d": rng.randint(1, 10),
                                          "i": rng.randint(1, size.customers)}),
        "order_line": ("SELECT ol_amount FROM {t} WHERE ol_w_id = {w} AND ol_d_id = {d} AND ol_o_id = {i}",
                       "order_line", lambda: {"w": rng.randint(1, size.warehouses), "d": rng.randint(1, 10),
                                              "i": rng.randint(1, size.customers)}),
        "item": ("SELECT i_price, i_name FROM {t} WHERE i_id = {i}", "item",
                 lambda: {"i": rng.randint(1, size.items)}),
    }  # fmt: skip
    out = []
    for name, (sql, table, args) in shapes.items():
        storage = f'"tique_data"."sys__{table}__storage"'
        for pipe in ("default_pipe", "sequential_pipe", "minimal_fast"):
            raw.execute(f"SET optimizer = '{pipe}'")
            native, rewritten = [], []
            for _ in range(reps):
                a = args()
                t0 = time.perf_counter()
                raw.execute(sql.format(t=storage, **a))
                native.append(time.perf_counter() - t0)
                text = conn.rewrite(sql.format(t=table, **a))
                conn.rollback()
                t0 = time.perf_counter()
                raw.execute(text)
                rewritten.append(time.perf_counter() - t0)
            out.append({"read": name, "pipeline": pipe, "native_ms_p50": round(1000 * statistics.median(native), 3),
                        "tique_rewrite_ms_p50": round(1000 * statistics.median(rewritten), 3)})  # fmt: skip
    raw.close()
    return out


def markdown(result: dict[str, Any]) -> str:
    head = f"{result['warehouses']} warehouses, scale {result['scale']}, checkpointer {result['checkpointer']}"
    lines = [f"### {head}", "", "| txn | call | per txn | ms p50 per call | ms per txn |", "|---|---|---|---|---|"]
    for name in result.get("types", ("NewOrder", "Payment")):
        r = result[name]
        lines.append(f"| {name} | **wall p50 {r['wall_ms_p50']} ms, engine p50 {r['engine_ms_p50']} ms** | | | |")
        lines += [f"| {name} | {c['call']} | {c['per_txn']} | {c['ms_p50']} | {c['ms_per_txn']} |" for c in r["calls"]]
    lines += ["", f"versions pending in Cache: {result['versions_pending']}", "",
              "| point read | pipeline | native ms p50 | tique rewrite ms p50 |", "|---|---|---|---|"]  # fmt: skip
    lines += [f"| {r['read']} | {r['pipeline']} | {r['native_ms_p50']} | {r['tique_rewrite_ms_p50']} |"
              for r in result["point_reads"]]  # fmt: skip
    return "\n".join(lines)


def system_raw(system: Any) -> Any:
    from tique.database import Database

    return Database.get(system.url).connect_raw()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--warehouses", type=int, default=4)
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--count", type=int, default=30)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--no-checkpointer", action="store_true")
    p.add_argument("--types", default="NewOrder,Payment", help="comma-separated TPC-C transactions to profile")
    p.add_argument("--formulation", default="standard", choices=sorted(txns.FORMULATIONS))
    p.add_argument("--out", default=None)
    args = p.parse_args()
    size = Scale(args.warehouses, args.scale)
    csv_dir = generate(DATA_CACHE / f"v{DATA_VERSION}-w{size.warehouses}-s{size.scale}", size)
    system = make("tique")
    system.start()
    try:
        system.load(csv_dir)
        if args.no_checkpointer:
            system.pause_maintenance()
        conn = system.connect()
        log: list[tuple[str, float]] = []
        trace_engine(system, conn, log)
        ctx = txns.Context(size, 1, random.Random(1))
        for _ in range(args.warmup):
            for fn in (txns.FORMULATIONS[args.formulation]["NewOrder"], txns.payment):
                try:
                    fn(conn, ctx)
                except txns.UserAbort:
                    pass
        result: dict[str, Any] = {"warehouses": size.warehouses, "scale": size.scale,
                                  "checkpointer": not args.no_checkpointer}  # fmt: skip
        result["types"] = args.types.split(",")
        for name in result["types"]:
            result[name] = run_type(conn, log, txns.FORMULATIONS[args.formulation][name], ctx, args.count)
        result["versions_pending"] = system.versions_pending()
        result["point_reads"] = native_point_reads(system, size, conn, 30)
        conn.close()
    finally:
        system.stop()
    text = json.dumps(result, indent=1)
    print(markdown(result))
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
