"""Engine statements per transaction and median latency, one client (issue 14 item 3): (a) a single-row UPDATE
transaction, (b) a point SELECT then an UPDATE of the same row, (c) a TPC-C NewOrder (1 warehouse at scale 0.1,
no checkpointer), embedded and over MAPI (``tique serve``). Engine calls are counted through
Connection.statement_hooks; statements are the calls' texts split at ";\n" (execute_atomically sends several
in one call). "before" runs the old statements in the same process (the sequencer's publish statement, each
Cache flush and the commit record as statements of their own, begin/certification/advance as text),
interleaved with "after" in blocks of 10 transactions, so both see the same load on a shared machine.
``--compare held``: "before" runs with held_rows=False (every statement in the engine), "after" with the default
(reads by key and UPDATEs of rows the transaction holds answered in the client). ``--compare shared``: "before"
runs with shared_rows=False (no rows kept across transactions, tique/shared_rows.py), "after" with the default.

    python -m benchmarks.stmts [--n 200] [--engines embedded,mapi] [--compare commit|held|shared]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tique
from benchmarks.common import served_database
from benchmarks.tpcc import txns
from benchmarks.tpcc.cli import DATA_CACHE
from benchmarks.tpcc.data import DATA_VERSION, TABLE_ORDER, Scale, generate
from benchmarks.tpcc.schema import ALL_TABLES
from tique import prepared, transaction
from tique.sequencer import CSequencer

ROWS = 10_000
TPCC = Scale(1, 0.1)


def setup(url: str) -> None:
    conn = tique.connect(url)
    cur = conn.cursor()
    cur.execute("CREATE TABLE bench_kv (k INT PRIMARY KEY, v INT)")
    conn.bulk_load("bench_kv", [(k, 0) for k in range(ROWS)])
    csv_dir = generate(DATA_CACHE / f"v{DATA_VERSION}-w{TPCC.warehouses}-s{TPCC.scale}", TPCC)
    for name in TABLE_ORDER:
        cur.execute(ALL_TABLES[name])
    for name in TABLE_ORDER:
        conn.bulk_load_csv(name, csv_dir / f"{name}.csv")
    conn.close()


def operations(conn: tique.Connection) -> dict[str, Callable[[], None]]:
    cur = conn.cursor()
    keys = random.Random(1)
    ctx = txns.Context(TPCC, 1, random.Random(1))

    def update() -> None:
        cur.execute("UPDATE bench_kv SET v = v + 1 WHERE k = %s", (keys.randrange(ROWS),))
        conn.commit()

    def read_update() -> None:
        k = keys.randrange(ROWS)
        cur.execute("SELECT k, v FROM bench_kv WHERE k = %s", (k,))
        cur.fetchall()
        cur.execute("UPDATE bench_kv SET v = v + 1 WHERE k = %s", (k,))
        conn.commit()

    def new_order() -> None:
        try:
            txns.new_order(conn, ctx)
        except txns.UserAbort:
            pass

    return {"update": update, "read_then_update": read_update, "new_order": new_order}


def old_path(on: bool) -> None:
    """Switch the commit path this process uses: the old one (on) or the current one."""
    CSequencer.publishes_in_certification = not on
    transaction.ATOMIC_FLUSH = not on
    prepared.PREPARE_PROTOCOL = not on


def setting_off(conn: tique.Connection, name: str, on: bool) -> None:
    """Turn boolean setting ``name`` off (on) or back to its default (True); takes effect at the connection's next
    transaction."""
    conn.settings = conn.settings.model_copy(update={name: not on})


def measure(url: str, n: int, warmup: int, compare: str = "commit", block: int = 10) -> dict[str, dict[str, float]]:
    setup(url)
    conn = tique.connect(url, insert_check="flush")
    sent: list[str] = []
    conn.statement_hooks.append(lambda sql, _seconds, _error: sent.append(sql))
    out: dict[str, dict[str, float]] = {}
    try:
        for name, fn in operations(conn).items():
            for _ in range(warmup):
                fn()
            samples: dict[str, list[float]] = {"before": [], "after": []}
            calls = {"before": 0, "after": 0}
            statements = {"before": 0, "after": 0}
            while len(samples["after"]) < n:
                for mode in ("before", "after"):
                    if compare in ("held", "shared"):
                        setting_off(conn, f"{compare}_rows", mode == "before")
                    else:
                        old_path(mode == "before")
                    sent.clear()
                    for _ in range(block):
                        t0 = time.perf_counter()
                        fn()
                        samples[mode].append(time.perf_counter() - t0)
                    calls[mode] += len(sent)
                    statements[mode] += sum(len(sql.split(";\n")) for sql in sent)
            for mode, times in samples.items():
                out[f"{name} {mode}"] = {
                    "calls": round(calls[mode] / len(times), 2),
                    "statements": round(statements[mode] / len(times), 2),
                    "p50_ms": round(1000 * statistics.median(times), 3),
                }
    finally:
        old_path(False)
        conn.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.stmts", description=__doc__)
    parser.add_argument("--n", type=int, default=200, help="transactions per operation")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--engines", default="embedded,mapi")
    parser.add_argument(
        "--compare", choices=("commit", "held", "shared"), default="commit", help="what 'before' switches off"
    )
    args = parser.parse_args(argv)
    results: dict[str, Any] = {}
    engines = args.engines.split(",")
    if "embedded" in engines:
        with tempfile.TemporaryDirectory(prefix="tique-bench-") as tmp:
            results["embedded"] = measure(f"monetdbe://{Path(tmp) / 'db'}", args.n, args.warmup, args.compare)
    if "mapi" in engines:
        with served_database() as url:
            results["mapi"] = measure(url, args.n, args.warmup, args.compare)
    print(f"{'engine':<10}{'transaction':<26}{'calls':>7}{'statements':>11}{'p50 ms':>9}")
    for engine, ops in results.items():
        for op, stats in ops.items():
            print(f"{engine:<10}{op:<26}{stats['calls']:>7}{stats['statements']:>11}{stats['p50_ms']:>9.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
