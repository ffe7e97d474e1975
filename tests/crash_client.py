"""A client that commits, then dies by SIGKILL at a chosen step of its next COMMIT (used by test_recovery).

python tests/crash_client.py URL STEP     STEP: flushed | sent | recorded | published | decided | advanced
"""

from __future__ import annotations

import os
import signal
import sys

import tique
from tique import transaction


def main(url: str, step: str) -> None:
    conn = tique.connect(url, lease_ms=500)
    cur = conn.cursor()
    cur.execute("CREATE TABLE IF NOT EXISTS acct (id INT PRIMARY KEY, v INT, f DOUBLE)")
    cur.execute("SELECT COUNT(*) FROM acct")
    if cur.fetchone() == (0,):
        cur.executemany("INSERT INTO acct (id, v) VALUES (%s, 0)", [(i,) for i in range(1, 4)])
    conn.commit()
    cur.execute("UPDATE acct SET v = v + 1 WHERE id = 1")  # committed before the crash: must survive
    conn.commit()
    # the victim; its zero has its sign checked after the record went ("sent")
    cur.execute("UPDATE acct SET v = 1000, f = %s WHERE id = 2", (-0.0,))
    cur.execute("INSERT INTO acct (id, v) VALUES (99, 99)")
    print("ready", flush=True)
    if step == "flushed":
        cur.execute("SELECT COUNT(*) FROM acct")  # provisional rows reach the Cache, then the process dies
        os.kill(os.getpid(), signal.SIGKILL)
    transaction.step_hooks.append(lambda s, _t: os.kill(os.getpid(), signal.SIGKILL) if s == step else None)
    conn.commit()
    print("committed", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
