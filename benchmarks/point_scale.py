"""Per-statement cost through tique as Storage grows (issue 14, item 2): a point read, a single-row UPDATE
transaction and a single-row INSERT transaction on a table with a 3-column key, at each Storage size, one
embedded client, no checkpointer. ``--no-probe`` plans point reads without the probe column (catalog.probed),
for a before/after comparison in the same run.

    python -m benchmarks.point_scale --rows 10000,1000000 [--no-probe]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def one_size(rows: int, reps: int) -> dict[str, float]:
    import tique

    tmp = Path(tempfile.mkdtemp(prefix="point-scale-"))
    conn = tique.connect(f"monetdbe://{tmp / 'db'}")
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (w INT, d INT, o INT, v INT, PRIMARY KEY (w, d, o))")
    conn.commit()
    per = rows // 40  # 4 "warehouses" x 10 "districts"
    i = np.arange(rows)
    np.savetxt(tmp / "t.csv", np.stack([i // (10 * per) + 1, i // per % 10 + 1, i % per, i], 1), fmt="%d",
               delimiter=",")  # fmt: skip
    conn.bulk_load_csv("t", tmp / "t.csv")
    rng = random.Random(1)

    def key() -> tuple[int, int, int]:
        return rng.randint(1, 4), rng.randint(1, 10), rng.randint(0, per - 1)

    def timed(fn: Any) -> float:
        samples = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - t0)
        return round(1000 * statistics.median(samples), 3)

    def read() -> None:
        cur.execute("SELECT v FROM t WHERE w = %s AND d = %s AND o = %s", key())
        assert len(cur.fetchall()) == 1
        conn.commit()

    def update() -> None:
        cur.execute("UPDATE t SET v = v + 1 WHERE w = %s AND d = %s AND o = %s", key())
        conn.commit()

    new = [per]

    def insert() -> None:
        new[0] += 1
        cur.execute("INSERT INTO t VALUES (%s, %s, %s, 0)", (rng.randint(1, 4), rng.randint(1, 10), new[0]))
        conn.commit()

    for fn in (read, update, insert):  # warm-up: prepared statements, the engine's hashes
        for _ in range(5):
            fn()
    out = {"read_ms": timed(read), "update_txn_ms": timed(update), "insert_txn_ms": timed(insert)}
    conn.close()
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", default="10000,1000000")
    p.add_argument("--reps", type=int, default=100)
    p.add_argument("--no-probe", action="store_true")
    args = p.parse_args()
    if args.no_probe:
        from tique.catalog import Catalog

        Catalog.probed = lambda self, conn, info: info  # type: ignore[method-assign]
    result = {int(n): one_size(int(n), args.reps) for n in args.rows.split(",")}
    print(json.dumps({"probe": not args.no_probe, "sizes": result}))


if __name__ == "__main__":
    main()
