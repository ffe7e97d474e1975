"""Per-statement cost through tique as Storage grows (issue 14, item 2): a point read, a single-row UPDATE
transaction and a single-row INSERT transaction on tables with a 3-column key, one embedded client, no
checkpointer. Each size has two tables, one planned with the probe column (catalog.probed) and one without
(the plan before it), and every round runs each statement on all four tables in turn, so that a busy machine
slows every figure alike.

    python -m benchmarks.point_scale --rows 10000,1000000 --rounds 60
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from tique.catalog import Catalog

_probed = Catalog.probed


def _probed_unless_marked(self: Catalog, conn: Any, info: Any) -> Any:
    return info if info.name.endswith("_noprobe") else _probed(self, conn, info)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", default="10000,1000000")
    p.add_argument("--rounds", type=int, default=60)
    args = p.parse_args()
    Catalog.probed = _probed_unless_marked  # type: ignore[method-assign]
    import tique

    tmp = Path(tempfile.mkdtemp(prefix="point-scale-"))
    conn = tique.connect(f"monetdbe://{tmp / 'db'}")
    cur = conn.cursor()
    tables: dict[str, int] = {}
    for rows in (int(n) for n in args.rows.split(",")):
        per = rows // 40  # 4 "warehouses" x 10 "districts"
        i = np.arange(rows)
        np.savetxt(tmp / "t.csv", np.stack([i // (10 * per) + 1, i // per % 10 + 1, i % per, i], 1), fmt="%d",
                   delimiter=",")  # fmt: skip
        for kind in ("probe", "noprobe"):
            name = f"t{rows}_{kind}"
            cur.execute(f"CREATE TABLE {name} (w INT, d INT, o INT, v INT, PRIMARY KEY (w, d, o))")
            conn.commit()
            conn.bulk_load_csv(name, tmp / "t.csv")
            tables[name] = rows
    rng = random.Random(1)
    fresh = {name: rows // 40 for name, rows in tables.items()}

    def read(name: str) -> None:
        per = tables[name] // 40
        cur.execute(f"SELECT v FROM {name} WHERE w = %s AND d = %s AND o = %s",
                    (rng.randint(1, 4), rng.randint(1, 10), rng.randint(0, per - 1)))  # fmt: skip
        assert len(cur.fetchall()) == 1
        conn.commit()

    def update(name: str) -> None:
        per = tables[name] // 40
        cur.execute(f"UPDATE {name} SET v = v + 1 WHERE w = %s AND d = %s AND o = %s",
                    (rng.randint(1, 4), rng.randint(1, 10), rng.randint(0, per - 1)))  # fmt: skip
        conn.commit()

    def insert(name: str) -> None:
        fresh[name] += 1
        cur.execute(f"INSERT INTO {name} VALUES (%s, %s, %s, 0)", (rng.randint(1, 4), rng.randint(1, 10), fresh[name]))
        conn.commit()

    samples: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in range(args.rounds + 5):  # the first 5: prepared statements, the engine's hashes
        for fn in (read, update, insert):
            for name in tables:
                t0 = time.perf_counter()
                fn(name)
                if r >= 5:
                    samples[(name, fn.__name__)].append(time.perf_counter() - t0)
    conn.close()
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for (name, op), values in samples.items():
        out[name][f"{op}_ms"] = round(1000 * statistics.median(values), 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
