"""A restarted ``tique serve`` must not let a transaction begin before recovery has restarted the counters.

Found by the soak (benchmarks/soak.py): the MAPI listener accepts logins as soon as the kernel is open, and
recovery runs after that. Clients that reconnect at once then begin with transaction ids from 1 (ids already
used: their provisional rows take the old ids' committed outcomes) and snapshot 0 (committed rows are
missing), and their COMMIT raises ``ProgrammingError: tique: commit N is done, cannot decide`` although
their rows are visible afterwards.
"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import Any

import tique
from tests.conftest import start_serve
from tique.errors import CommitOutcomeUnknown, SerializationFailure

INCREMENTS = 30
CLIENTS = 6


def fill(url: str) -> int:
    """kv(1) incremented INCREMENTS times, and many tables (recovery scans each Cache: a wider window)."""
    conn = tique.connect(url)
    cur = conn.cursor()
    cur.execute("CREATE TABLE kv (k INT PRIMARY KEY, v INT)")
    for i in range(30):
        cur.execute(f"CREATE TABLE pad{i} (k INT PRIMARY KEY, v INT)")
    cur.execute("INSERT INTO kv VALUES (1, 0)")
    conn.commit()
    last_txid = 0
    for _ in range(INCREMENTS):
        cur.execute("UPDATE kv SET v = v + 1 WHERE k = 1")
        last_txid = conn.transaction().txid  # the last id that wrote something (ids nothing used may come again)
        conn.commit()
    conn.close()
    return last_txid


def eager_client(url: str, key: int, seen: list[dict[str, Any]]) -> None:
    """Connect the moment the server lets us in; read, insert a fresh key, commit."""
    deadline = time.monotonic() + 60
    while True:
        try:
            conn = tique.connect(url)
            break
        except Exception:
            if time.monotonic() > deadline:
                return
            time.sleep(0.001)
    cur = conn.cursor()
    outcome: dict[str, Any] = {"key": key}
    refused = 0
    try:
        while True:
            try:
                cur.execute("SELECT v FROM kv WHERE k = 1")
                break
            except SerializationFailure as exc:  # the server refuses to begin until recovery ran: retry
                assert "recovery" in str(exc), exc
                conn.rollback()
                refused += 1
                time.sleep(0.01)
        outcome["refused"] = refused
        outcome["read"] = cur.fetchall()
        outcome["txid"] = conn.transaction().txid
        cur.execute("INSERT INTO kv VALUES (%s, 7)", (key,))
        conn.commit()
        outcome["commit"] = "ok"
    except (SerializationFailure, CommitOutcomeUnknown) as exc:
        outcome["commit"] = type(exc).__name__  # allowed outcomes of a COMMIT
    except Exception as exc:
        outcome["commit"] = f"{type(exc).__name__}: {exc}"
    seen.append(outcome)


def test_clients_connecting_during_a_restart_see_recovered_counters(tmp_path: Path) -> None:
    server = start_serve(tmp_path / "db")
    last_txid = fill(server.url)
    server.stop(signal.SIGKILL)
    seen: list[dict[str, Any]] = []
    threads = [threading.Thread(target=eager_client, args=(server.url, 100 + i, seen)) for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    restarted = start_serve(tmp_path / "db", port=server.port)
    try:
        for thread in threads:
            thread.join(90)
        conn = tique.connect(restarted.url)
        cur = conn.cursor()
        cur.execute("SELECT k FROM kv WHERE k >= 100")
        visible = {k for (k,) in cur.fetchall()}
        conn.close()
    finally:
        restarted.stop()
    assert len(seen) == CLIENTS
    for outcome in seen:
        assert "read" in outcome, outcome
        assert outcome["read"] == [(INCREMENTS,)], outcome  # a snapshot from before recovery misses committed data
        assert outcome["txid"] > last_txid, outcome  # ids never go back
        assert outcome["commit"] in ("ok", "SerializationFailure", "CommitOutcomeUnknown"), outcome
        if outcome["commit"] == "ok":
            assert outcome["key"] in visible, outcome
        elif outcome["commit"] == "SerializationFailure":
            assert outcome["key"] not in visible, outcome
