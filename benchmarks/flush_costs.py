"""What sending buffered rows to a Cache costs embedded, per way of sending them (issue 14: the flush and record
are a quarter of a NewOrder's engine time). One embedded session on a Cache-shaped copy of TPC-C's stock table
(its 17 columns, then tq_txid, tq_seq, tq_deleted), each way in its own engine transaction as tique's flush is:

- ``insert``: START TRANSACTION, one INSERT ... VALUES text, COMMIT (what tique sends today);
- ``prepared``: the same INSERT prepared once per row count, then EXEC with the values;
- ``append``: the C API's columnar ``monetdbe_append`` (no SQL compiled), the values built as C arrays in Python.

Every round runs each way once per row count, interleaved, so that a busy machine slows every figure alike. The
kernel calls run on worker threads (TIQUE_SESSION_STACKS=0): ``monetdbe_append`` takes five arguments, one more
than tique's session-stack call passes. An experiment for deciding what to build, not a path tique takes.

    python -m benchmarks.flush_costs --rounds 300 --out flush_costs.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

COLUMNS = (
    [("s_i_id", "INT"), ("s_w_id", "INT"), ("s_quantity", "INT")]
    + [(f"s_dist_{i:02d}", "CHAR(24)") for i in range(1, 11)]
    + [("s_ytd", "INT"), ("s_order_cnt", "INT"), ("s_remote_cnt", "INT"), ("s_data", "VARCHAR(50)")]
    + [("tq_txid", "BIGINT"), ("tq_seq", "INT"), ("tq_deleted", "BOOLEAN")]
)


def _row(k: int) -> tuple[Any, ...]:
    dist = [f"dist{k % 97:02d}-{i:02d}-abcdefghijklm" for i in range(1, 11)]
    data = f"data of item {k} with ORIGINAL in it"
    return (k, 1, 50 - k % 40, *dist, k % 300, k % 7, 0, data, 10_000 + k, k % 30, False)


def _literal(v: Any) -> str:
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return str(v)


def _values(rows: list[tuple[Any, ...]]) -> str:
    return ", ".join("(" + ", ".join(_literal(v) for v in r) + ")" for r in rows)


class Appender:
    """monetdbe_append of Python rows into the table, through the session's kernel thread."""

    def __init__(self, raw: Any) -> None:
        from tique.engine.session_stack import lowlevel

        self.raw = raw
        self.ffi, self.lib = lowlevel()
        lib = self.lib
        self.kinds = {
            "INT": (lib.monetdbe_int32_t, "monetdbe_column_int32_t *", "int32_t[]"),
            "BIGINT": (lib.monetdbe_int64_t, "monetdbe_column_int64_t *", "int64_t[]"),
            "BOOLEAN": (lib.monetdbe_bool, "monetdbe_column_bool *", "int8_t[]"),
        }

    def append(self, table: str, rows: list[tuple[Any, ...]]) -> None:
        ffi, lib = self.ffi, self.lib
        keep: list[Any] = []  # the C arrays must live until the call returns
        cols = ffi.new("monetdbe_column *[]", len(COLUMNS))
        for j, (_, sql_type) in enumerate(COLUMNS):
            values = [r[j] for r in rows]
            if sql_type in self.kinds:
                code, ctype, array = self.kinds[sql_type]
                col = ffi.new(ctype)
                data = ffi.new(array, [int(v) for v in values])
            else:
                code, col = lib.monetdbe_str, ffi.new("monetdbe_column_str *")
                strings = [ffi.new("char[]", v.encode()) for v in values]
                keep.append(strings)
                data = ffi.new("char *[]", strings)
            col.type, col.data, col.count = code, data, len(rows)
            keep += [col, data]
            cols[j] = ffi.cast("monetdbe_column *", col)

        def call() -> None:
            err = lib.monetdbe_append(self.raw._handle, b"sys", table.encode(), cols, len(COLUMNS))
            if err:
                raise RuntimeError(ffi.string(err).decode())

        self.raw._kernel.around(call)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=300)
    p.add_argument("--rows", default="1,10")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    os.environ["TIQUE_SESSION_STACKS"] = "0"
    from tique.database import Database

    tmp = Path(tempfile.mkdtemp(prefix="flush-costs-"))
    raw = Database.get(f"monetdbe://{tmp / 'db'}").connect_raw()
    columns = ", ".join(f"{name} {sql_type}" for name, sql_type in COLUMNS)
    counts = [int(n) for n in args.rows.split(",")]
    ways = ("insert", "prepared", "append")
    for way in ways:
        raw.execute(f"CREATE TABLE cache_{way} ({columns})")
    prepared: dict[int, int] = {}
    for n in counts:
        holders = ", ".join(["(" + ", ".join("?" for _ in COLUMNS) + ")"] * n)
        result = raw.execute(f"PREPARE INSERT INTO cache_prepared VALUES {holders}")
        prepared[n] = result.prepared_id if result.prepared_id is not None else len(prepared)
    appender = Appender(raw)
    times: dict[tuple[str, int], list[float]] = defaultdict(list)
    key = 0
    for _ in range(args.rounds):
        for n in counts:
            rows = [_row(key + i) for i in range(n)]  # the same rows each way
            key += n
            for way in ways:
                began = time.perf_counter()
                raw.execute("START TRANSACTION")
                if way == "insert":
                    raw.execute(f"INSERT INTO cache_insert VALUES {_values(rows)}")
                elif way == "prepared":
                    raw.execute(f"EXEC {prepared[n]}({', '.join(_literal(v) for r in rows for v in r)})")
                else:
                    appender.append("cache_append", rows)
                raw.execute("COMMIT")
                times[(way, n)].append(time.perf_counter() - began)
    # the three tables must hold the same rows: a way that lost or changed a value would not be comparable
    stored = {way: raw.execute(f"SELECT * FROM cache_{way} ORDER BY tq_txid").rows for way in ways}
    if any(stored[way] != stored["insert"] for way in ways):
        raise SystemExit("the ways wrote different rows")
    raw.close()
    result = {
        "rounds": args.rounds,
        "ms_p50": {f"{way} x{n}": round(1000 * statistics.median(times[(way, n)]), 3) for way in ways for n in counts},
        "rows_each": len(stored["insert"]),
    }
    lines = ["| rows per flush | " + " | ".join(ways) + " |", "|---|" + "---|" * len(ways)]
    lines += [f"| {n} | " + " | ".join(str(result["ms_p50"][f"{w} x{n}"]) for w in ways) + " |" for n in counts]
    print("\n".join(lines))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
