"""A process that owns an embedded database (used by test_counters_never_go_back).

python counters_client.py URL crash STEP [kill|raise]
    commit rows, checkpoint, commit more, then checkpoint again and die by SIGKILL at STEP (or after the
    checkpointer failed there); prints the largest recorded txid and cts first
python counters_client.py URL check        reopen (recovery), commit more rows, checkpoint; prints JSON
"""

from __future__ import annotations

import json
import os
import signal
import sys

import tique
from tique.checkpoint import Checkpointer
from tique.database import Database
from tique.errors import OperationalError

ROWS_PER_TXN = 12


def commit_rows(url: str, start: int, txns: int, per_txn: int = ROWS_PER_TXN) -> None:
    conn = tique.connect(url)
    cur = conn.cursor()
    for t in range(txns):
        rows = [(start + t * per_txn + i,) for i in range(per_txn)]
        cur.executemany("INSERT INTO nk VALUES (%s)", rows)  # no primary key: hidden row ids
        cur.execute("UPDATE kv SET v = v + 1 WHERE k = 1")
        conn.commit()
    conn.close()


def counts(url: str) -> dict[str, object]:
    conn = tique.connect(url)
    cur = conn.cursor()
    cur.execute("SELECT COUNT(*), COUNT(DISTINCT x) FROM nk")
    n, distinct = cur.fetchone()
    cur.execute("SELECT v FROM kv WHERE k = 1")
    v = cur.fetchone()[0]
    conn.commit()
    conn.close()
    return {"rows": n, "distinct": distinct, "v": v}


def main(url: str, mode: str, step: str = "", how: str = "kill") -> None:
    if mode == "crash":
        conn = tique.connect(url)
        conn.cursor().execute("CREATE TABLE nk (x INT)")
        conn.cursor().execute("CREATE TABLE kv (k INT PRIMARY KEY, v INT)")
        conn.cursor().execute("INSERT INTO kv VALUES (1, 0)")
        conn.commit()
        conn.close()
        commit_rows(url, 0, 2)
        raw = Database.get(url).connect_raw()
        Checkpointer(raw).run_once()
        commit_rows(url, 1000, 3)
        txid, cts = raw.execute("SELECT MAX(txid), MAX(cts) FROM tique.commits").rows[0]
        print(json.dumps({"txid": int(txid), "cts": int(cts), **counts(url)}), flush=True)

        def hook(name: str) -> None:
            if name == step:
                if how == "raise":  # the step fails (a statement of the checkpointer raised), the process goes on
                    raise OperationalError(f"simulated failure at {name}")
                print(f"killed at {name}", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)

        try:
            Checkpointer(raw, step_hook=hook).run_once()
        except OperationalError:
            print(f"failed at {step}, then killed", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        print("finished without reaching the step", flush=True)
        return
    raw = Database.get(url).connect_raw()
    txid, cts = raw.execute("SELECT tique.last_txid(), tique.last_cts()").rows[0]
    # first thing, and many rows per transaction: a reused id would hand out the hidden row ids of the crashed
    # process's rows (same transaction id, same per-process row counter)
    commit_rows(url, 5000, 1, per_txn=40)
    after = counts(url)
    Checkpointer(raw).run_once()
    print(json.dumps({"txid": int(txid), "cts": int(cts), "after": after, "final": counts(url)}))


if __name__ == "__main__":
    main(*sys.argv[1:])
