"""A point read by a composite key costs about the same whatever Storage holds: MonetDB scans for an equality on
several columns, so tique first selects Storage by one key column alone (a hash lookup) and filters those rows by
the whole key. Also: the answers stay exact where the probe column's value is shared by many rows, after updates,
deletes and a checkpoint moved them into Storage."""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import tique
from tique.checkpoint import Checkpointer
from tique.database import Database

BIG, SMALL = 1_000_000, 4_000


def _load(conn: tique.Connection, tmp: Path, name: str, rows: int) -> None:
    conn.cursor().execute(f"CREATE TABLE {name} (w INT, d INT, o INT, v INT, PRIMARY KEY (w, d, o))")
    conn.commit()
    per = rows // 40
    path = tmp / f"{name}.csv"
    with open(path, "w") as f:
        f.writelines(f"{i // (10 * per) + 1},{i // per % 10 + 1},{i % per},{i}\n" for i in range(rows))
    assert conn.bulk_load_csv(name, path) == rows


def test_point_read_cost_stays_flat_and_exact(
    embedded_url: str, tmp_path: Path, unique_name: Callable[[str], str]
) -> None:
    url = embedded_url
    conn = tique.connect(url)
    big_name, small_name = unique_name("big"), unique_name("small")
    _load(conn, tmp_path, big_name, BIG)
    _load(conn, tmp_path, small_name, SMALL)
    cur = conn.cursor()
    rng = random.Random(5)

    def read(table: str, rows: int) -> float:
        per = rows // 40
        w, d, o = rng.randint(1, 4), rng.randint(1, 10), rng.randint(0, per - 1)
        t0 = time.perf_counter()
        cur.execute(f"SELECT v FROM {table} WHERE w = %s AND d = %s AND o = %s", (w, d, o))
        got = cur.fetchall()
        elapsed = time.perf_counter() - t0
        conn.commit()
        assert got == [((w - 1) * 10 * per + (d - 1) * per + o,)]
        return elapsed

    for _ in range(5):  # prepared statements, the engine's hashes
        read(big_name, BIG), read(small_name, SMALL)
    big, small = [], []
    for _ in range(60):  # interleaved, so that a busy machine slows both alike
        big.append(read(big_name, BIG))
        small.append(read(small_name, SMALL))
    ratio = statistics.median(big) / statistics.median(small)
    assert ratio < 1.5, f"point read at {BIG} rows {ratio:.1f}x the one at {SMALL} rows"

    # exact answers through Cache and after a checkpoint: same probe value (o = 7) in many keys
    cur.execute(f"UPDATE {big_name} SET v = -1 WHERE w = 2 AND d = 3 AND o = 7")
    cur.execute(f"DELETE FROM {big_name} WHERE w = 3 AND d = 3 AND o = 7")
    cur.execute(f"INSERT INTO {big_name} VALUES (5, 3, 7, -5)")
    conn.commit()
    expected = {(2, 3): -1, (3, 3): None, (5, 3): -5, (1, 3): 2 * (BIG // 40) + 7}
    for checkpointed in (False, True):
        if checkpointed:
            raw = Database.get(url).connect_raw()
            Checkpointer(raw).run_once()
            raw.close()
        for (w, d), v in expected.items():
            cur.execute(f"SELECT v FROM {big_name} WHERE w = %s AND d = %s AND o = %s", (w, d, 7))
            assert cur.fetchall() == ([(v,)] if v is not None else []), (checkpointed, w, d)
            conn.commit()
    for name in (big_name, small_name):
        cur.execute(f"DROP TABLE {name}")
    conn.commit()
    conn.close()
