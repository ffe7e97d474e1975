"""tique against the same statements sent natively, side by side on one engine, one client.

Operations: a point read; a single-row update transaction; a 10-statement transaction (5 point reads and
5 updates). tique runs them in buffered and in direct write mode; "native" sends the statements to MonetDB
itself (autocommit, or START TRANSACTION ... COMMIT for the 10-statement one). Every system uses a table
of 10,000 rows with a primary key; tique's are loaded into Storage. Reports p50/p99 latency and the number
of engine round trips per transaction, embedded and over MAPI.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tqdm import tqdm

import tique
from benchmarks.common import machine_info, percentiles_ms, served_database, time_calls, write_json
from tique.engine.base import RawConnection

ROWS = 10_000


class Counting:
    """Wraps a raw connection (native MonetDB) to count engine round trips; tique connections count through
    their statement hooks (Connection.statement_hooks)."""

    def __init__(self, raw: RawConnection) -> None:
        self.raw = raw
        self.calls = 0

    def execute(self, sql: str) -> Any:
        self.calls += 1
        return self.raw.execute(sql)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def setup(url: str) -> None:
    conn = tique.connect(url)
    cur = conn.cursor()
    cur.execute("CREATE TABLE bench_kv (k INT PRIMARY KEY, v INT)")
    conn.bulk_load("bench_kv", [(k, 0) for k in range(ROWS)])
    raw = conn.db.connect_raw()
    raw.execute("CREATE TABLE native_kv (k INT PRIMARY KEY, v INT)")
    for start in range(0, ROWS, 1000):
        raw.execute("INSERT INTO native_kv VALUES " + ", ".join(f"({k}, 0)" for k in range(start, start + 1000)))
    raw.close()
    conn.close()


def tique_ops(conn: tique.Connection) -> dict[str, Callable[[int], None]]:
    cur = conn.cursor()
    keys = random.Random(1)

    def point_read(_: int) -> None:
        cur.execute("SELECT v FROM bench_kv WHERE k = %s", (keys.randrange(ROWS),))
        cur.fetchall()
        conn.commit()

    def update(_: int) -> None:
        cur.execute("UPDATE bench_kv SET v = v + 1 WHERE k = %s", (keys.randrange(ROWS),))
        conn.commit()

    def ten(_: int) -> None:
        for _ in range(5):
            cur.execute("SELECT v FROM bench_kv WHERE k = %s", (keys.randrange(ROWS),))
            cur.fetchall()
        for _ in range(5):
            cur.execute("UPDATE bench_kv SET v = v + 1 WHERE k = %s", (keys.randrange(ROWS),))
        conn.commit()

    return {"point_read": point_read, "update_txn": update, "ten_statement_txn": ten}


def native_ops(raw: RawConnection) -> dict[str, Callable[[int], None]]:
    keys = random.Random(1)

    def point_read(_: int) -> None:
        raw.execute(f"SELECT v FROM native_kv WHERE k = {keys.randrange(ROWS)}")

    def update(_: int) -> None:
        raw.execute(f"UPDATE native_kv SET v = v + 1 WHERE k = {keys.randrange(ROWS)}")

    def ten(_: int) -> None:
        raw.execute("START TRANSACTION")
        for _ in range(5):
            raw.execute(f"SELECT v FROM native_kv WHERE k = {keys.randrange(ROWS)}")
        for _ in range(5):
            raw.execute(f"UPDATE native_kv SET v = v + 1 WHERE k = {keys.randrange(ROWS)}")
        raw.execute("COMMIT")

    return {"point_read": point_read, "update_txn": update, "ten_statement_txn": ten}


def measure(url: str, n: int, bar: tqdm) -> dict[str, Any]:
    setup(url)
    out: dict[str, Any] = {}
    for mode in ("buffered", "direct"):
        conn = tique.connect(url, write_mode=mode)
        sent: list[str] = []
        conn.statement_hooks.append(lambda sql, _seconds, _error, sent=sent: sent.append(sql))
        for op, fn in tique_ops(conn).items():
            before = len(sent)
            samples = time_calls(fn, n)
            stats = percentiles_ms(samples)
            stats["round_trips"] = round((len(sent) - before) / (n + 50), 2)
            out.setdefault(op, {})[f"tique_{mode}"] = stats
            bar.update(1)
        conn.close()
    db = tique.connect(url).db
    raw = Counting(db.connect_raw())
    for op, fn in native_ops(raw).items():
        before = raw.calls
        stats = percentiles_ms(time_calls(fn, n))
        stats["round_trips"] = round((raw.calls - before) / (n + 50), 2)
        out.setdefault(op, {})["native"] = stats
        bar.update(1)
    raw.close()
    for systems in out.values():
        systems["ratio_p50_buffered_vs_native"] = round(systems["tique_buffered"]["p50"] / systems["native"]["p50"], 2)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks txn", description=__doc__)
    parser.add_argument("--n", type=int, default=1000, help="transactions per operation and system")
    parser.add_argument("--out", default="results/txn.json")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {"machine": machine_info(), "settings": {"n": args.n, "rows": ROWS}, "engines": {}}
    with tqdm(total=18, desc="tique vs native", unit="series") as bar:
        with tempfile.TemporaryDirectory(prefix="tique-bench-") as tmp:
            results["engines"]["embedded"] = measure(f"monetdbe://{Path(tmp) / 'db'}", args.n, bar)
        with served_database() as url:
            results["engines"]["mapi"] = measure(url, args.n, bar)
    print(f"{'engine':<9}{'operation':<19}{'system':<16}{'p50 ms':>8}{'p99 ms':>8}{'trips':>7}")
    for engine, ops in results["engines"].items():
        for op, systems in ops.items():
            for system, stats in systems.items():
                if isinstance(stats, dict):
                    print(
                        f"{engine:<9}{op:<19}{system:<16}{stats['p50']:>8.3f}{stats['p99']:>8.3f}{stats['round_trips']:>7}"
                    )
    print(f"written to {write_json(args.out, results)}")
    return 0
