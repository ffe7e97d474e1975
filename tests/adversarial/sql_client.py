"""A tique client in its own process, driven line by line so a test can interleave several processes exactly.

python tests/adversarial/sql_client.py URL

Each stdin line is a JSON list ``[op, sql, params]`` with op ``exec``, ``commit`` or ``rollback``; each answer is one
stdout line: ``{"rows": [...]}`` or ``{"error": "<exception class>", "message": "..."}``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import tique


def answer(conn: tique.Connection, op: str, sql: str, params: Any) -> dict[str, Any]:
    try:
        if op == "commit":
            conn.commit()
            return {"rows": []}
        if op == "rollback":
            conn.rollback()
            return {"rows": []}
        cur = conn.cursor()
        cur.execute(sql, params)
        return {"rows": [list(r) for r in cur.fetchall()] if cur.description else []}
    except tique.Error as exc:
        return {"error": type(exc).__name__, "message": str(exc)}


def main(url: str) -> None:
    conn = tique.connect(url, advance_timeout_ms=10000, publish_timeout_ms=10000)
    print(json.dumps({"rows": []}), flush=True)  # connected
    for line in sys.stdin:
        op, sql, params = json.loads(line)
        print(json.dumps(answer(conn, op, sql, params), default=str), flush=True)
    conn.close()


if __name__ == "__main__":
    main(sys.argv[1])
