"""``make demo``: tique's main job on the embedded engine, in a minute."""

from __future__ import annotations

import tempfile
from pathlib import Path

from tique.engine import open_engine
from tique.sequencer import CSequencer


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="tique-demo-") as tmp:
        engine = open_engine(f"monetdbe://{Path(tmp) / 'demo'}")
        conn = engine.connect()
        seq = CSequencer()
        seq.install(conn)
        conn.execute("CREATE TABLE accounts (id INT PRIMARY KEY, balance INT)")
        conn.execute("INSERT INTO accounts VALUES (1, 100), (2, 100)")
        for amount in (10, 20, 30):
            txid, cts = seq.next_txid(conn), seq.next_cts(conn)
            conn.execute(f"UPDATE accounts SET balance = balance - {amount} WHERE id = 1")
            conn.execute(f"UPDATE accounts SET balance = balance + {amount} WHERE id = 2")
            seq.publish(conn, cts, 1000)
            seq.decide(conn, cts)
            sts = seq.advance(conn, cts, 1000)
            print(f"transaction {txid}: moved {amount}, commit timestamp {cts}, snapshot now {sts}")
        print("balances:", conn.execute("SELECT id, balance FROM accounts ORDER BY id").rows)
        conn.close()
        engine.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
