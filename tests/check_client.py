"""Open a database (recovery runs for an embedded one), report its state as JSON, and prove it still commits.

python tests/check_client.py URL
"""

from __future__ import annotations

import json
import sys

import tique


def main(url: str) -> None:
    conn = tique.connect(url, advance_timeout_ms=5000, publish_timeout_ms=5000)
    cur = conn.cursor()
    cur.execute("SELECT id, v FROM acct ORDER BY id")
    rows = cur.fetchall()
    cur.execute("SELECT COUNT(*) FROM tique.commits WHERE txid NOT IN (SELECT txid FROM tique.outcomes)")
    undecided = cur.fetchone()[0]
    conn.commit()

    def bump(c: tique.Connection) -> None:  # the victim's key and a neighbour, retried as applications do
        c.cursor().execute("UPDATE acct SET v = v + 1 WHERE id = 3")
        c.cursor().execute("UPDATE acct SET v = v + 1 WHERE id = 2")

    conn.run(bump, retries=20)
    cur.execute("SELECT v FROM acct WHERE id = 3")
    after = cur.fetchone()[0]
    conn.close()
    print(json.dumps({"rows": rows, "undecided": undecided, "after": after}))


if __name__ == "__main__":
    main(sys.argv[1])
