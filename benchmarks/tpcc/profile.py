"""Where a TPC-C transaction's time goes, per system: one client, no contention, each transaction type run
``count`` times after a warm-up. Per type: mean wall time, the application's statements, and for the
embedded systems the engine calls behind them (tique: its snapshot reads, Cache flushes and commit protocol;
native MonetDB: the statements plus START/COMMIT) with the time spent inside them. For tique also the engine
statements that cost most, by shape (numbers replaced by N; a prepared EXEC shown as the statement it runs).
"""

from __future__ import annotations

import random
import re
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from benchmarks.tpcc import txns
from benchmarks.tpcc.data import Scale
from benchmarks.tpcc.systems import System

Log = list[tuple[str, float]]


class _Cursor:
    def __init__(self, cur: Any, counter: list[int]) -> None:
        self._cur, self._counter = cur, counter

    def execute(self, sql: str, params: Any = None) -> Any:
        self._counter[0] += 1
        return self._cur.execute(sql, params) if params is not None else self._cur.execute(sql)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cur, name)


class Counting:
    """A DB-API connection that counts the application's statements."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self.statements = [0]

    def cursor(self) -> _Cursor:
        return _Cursor(self._conn.cursor(), self.statements)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def trace_engine(system: System, conn: Any, log: Log) -> bool:
    """Log every engine call of ``conn`` with its time; False when the system's calls cannot be seen."""
    if system.name == "tique":
        target = conn._raw  # the PreparingConnection: sees PREPARE, EXEC and plain statements

        def shape(sql: str) -> str:
            m = re.match(r"EXEC (\d+)\(", sql)
            if m:
                text = target.prepared_text(int(m.group(1)))
                return "EXEC: " + text if text else sql
            return sql

    elif system.name == "monetdb":
        target = conn.raw

        def shape(sql: str) -> str:
            return sql

    else:
        return False
    if system.name == "tique":  # its hooks also see the flush's several statements sent as one call
        target.hooks.append(lambda sql, seconds, error: log.append((shape(sql), seconds)))
        return True
    inner: Callable[[str], Any] = target.execute

    def execute(sql: str) -> Any:
        t0 = time.perf_counter()
        try:
            return inner(sql)
        finally:
            log.append((shape(sql), time.perf_counter() - t0))

    target.execute = execute
    return True


def _normal(sql: str) -> str:
    sql = re.sub(r"'(?:[^']|'')*'", "'S'", sql)
    return re.sub(r"\s+", " ", re.sub(r"-?\d+(\.\d+)?", "N", sql))[:160]


def profile(
    system: System, size: Scale, count: int, warmup: int = 20, seed: int = 1, formulation: str = "standard"
) -> dict[str, Any]:
    conn = Counting(system.connect())
    log: Log = []
    traced = trace_engine(system, conn._conn, log)
    ctx = txns.Context(size, 1, random.Random(seed))
    out: dict[str, Any] = {"count": count, "engine_traced": traced, "types": {}}
    top: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for name, fn in txns.FORMULATIONS[formulation].items():
        for _ in range(warmup):
            _run(conn, fn, ctx)
        log.clear()
        conn.statements[0] = 0
        walls = []
        for _ in range(count):
            t0 = time.perf_counter()
            _run(conn, fn, ctx)
            walls.append(time.perf_counter() - t0)
        out["types"][name] = {
            "mean_ms": round(1000 * sum(walls) / count, 2),
            "statements": round(conn.statements[0] / count, 1),
            "engine_calls": round(len(log) / count, 1) if traced else None,
            "engine_ms": round(1000 * sum(t for _, t in log) / count, 2) if traced else None,
        }
        for sql, t in log:
            entry = top[f"{name}: {_normal(sql)}"]
            entry[0] += 1 / count
            entry[1] += 1000 * t / count
    conn.close()
    ranked = sorted(top.items(), key=lambda kv: -kv[1][1])[:12]
    out["top_engine_calls"] = [{"call": k, "per_txn": round(n, 2), "ms_per_txn": round(ms, 2)} for k, (n, ms) in ranked]
    return out


def _run(conn: Any, fn: Callable[[Any, txns.Context], None], ctx: txns.Context) -> None:
    try:
        fn(conn, ctx)
    except txns.UserAbort:
        pass
