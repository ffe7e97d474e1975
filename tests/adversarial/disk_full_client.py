"""A writer for test_disk_full.py, in its own process (one embedded database per process).

``fill URL BALLAST``: insert ~100 KB rows into ``blobs``, one commit each, until the disk is full (three write
failures in a row) or time runs out; then read the table on the running database, delete the ballast file
(space returns) and commit one more row. ``burst URL DIR``: commit a transaction bigger than the space left
(the engine itself fails to write). ``write URL ID``: commit row ID (null, or the error). ``read URL``: the
ids in ``blobs``. Prints one JSON object.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import tique

ROW = 100_000
FILL_SECONDS = 40
BURST_ROOM = 3 << 20


def attempt(conn: tique.Connection, row_id: int) -> str | None:
    """Insert and commit row ``row_id``; None when COMMIT returned, else the error's class and message."""
    cur = conn.cursor()
    try:
        cur.execute("INSERT INTO blobs VALUES (%s, %s)", (row_id, f"{row_id}:" + "x" * ROW))
        conn.commit()
        return None
    except tique.Error as exc:
        try:
            conn.rollback()
        except tique.Error:
            pass
        return f"{type(exc).__name__}: {exc}"


def ids(conn: tique.Connection) -> list[int] | str:
    try:
        cur = conn.cursor()
        cur.execute("SELECT id FROM blobs")
        found = sorted(int(r[0]) for r in cur.fetchall())
        conn.rollback()
        return found
    except tique.Error as exc:
        return f"{type(exc).__name__}: {exc}"


def fill(url: str, ballast: str) -> dict[str, Any]:
    conn = tique.connect(url)
    conn.cursor().execute("CREATE TABLE blobs (id INT PRIMARY KEY, v CLOB)")
    conn.commit()
    acked: list[int] = []
    errors: list[str] = []
    failures_in_a_row = 0
    row_id = 0
    deadline = time.monotonic() + FILL_SECONDS
    while failures_in_a_row < 3 and time.monotonic() < deadline:
        row_id += 1
        error = attempt(conn, row_id)
        if error is None:
            acked.append(row_id)
            failures_in_a_row = 0
        else:
            errors.append(error)
            failures_in_a_row += 1
    running = ids(conn)
    os.remove(ballast)
    row_id += 1
    after_space = attempt(conn, row_id)
    if after_space is None:
        acked.append(row_id)
    result = {"acked": acked, "errors": errors, "running": running, "after_space": after_space}
    conn.close()
    return result


def burst(url: str, directory: str) -> dict[str, Any]:
    """Ten acknowledged rows; then leave BURST_ROOM free and commit one transaction bigger than that."""
    conn = tique.connect(url)
    conn.cursor().execute("CREATE TABLE blobs (id INT PRIMARY KEY, v CLOB)")
    conn.commit()
    acked = [i for i in range(1, 11) if attempt(conn, i) is None]
    ballast_path = os.path.join(directory, "ballast")
    if os.path.exists(ballast_path):
        os.remove(ballast_path)
    fs = os.statvfs(directory)
    with open(ballast_path, "wb") as ballast:
        ballast.write(b"\1" * (fs.f_bavail * fs.f_frsize - BURST_ROOM))
    cur = conn.cursor()
    try:
        for i in range(100, 100 + 3 * BURST_ROOM // ROW):  # three times the room left, in one transaction
            cur.execute("INSERT INTO blobs VALUES (%s, %s)", (i, f"{i}:" + "x" * ROW))
        conn.commit()
        big = None
    except tique.Error as exc:
        conn.rollback()
        big = f"{type(exc).__name__}: {exc}"
    after = attempt(conn, 11)  # a small write on the full disk
    os.remove(ballast_path)
    after_space = attempt(conn, 12)  # space returned, the engine's log may miss a write: still refused
    if after is None:
        acked.append(11)
    if after_space is None:
        acked.append(12)
    return {"acked": acked, "big": big, "after": after, "after_space": after_space, "running": ids(conn)}


def main() -> None:
    mode, url = sys.argv[1], sys.argv[2]
    if mode == "fill":
        result: Any = fill(url, sys.argv[3])
    elif mode == "burst":
        result = burst(url, sys.argv[3])
    elif mode == "write":
        result = attempt(tique.connect(url), int(sys.argv[3]))
    else:
        result = ids(tique.connect(url))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
