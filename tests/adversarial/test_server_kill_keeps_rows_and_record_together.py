"""A server SIGKILLed while COMMITs send their rows and commit record (one engine transaction, one text over MAPI,
or statement by statement inside START TRANSACTION ... COMMIT past 1 MB) leaves, after a restart, for every
transaction either all its rows in every table it wrote together with its commit record, or none of them and no
record; and every COMMIT that returned is there, read through tique."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import pytest

import tique
from tests.conftest import ServeProcess, start_serve
from tests.physical import cache
from tique.engine import open_engine
from tique.errors import Error

TABLES = ("t0", "t1", "t2")


def _small_writer(
    server: ServeProcess, base: int, attempted: list[int], acked: list[int], stop: threading.Event
) -> None:
    """One-row commits to every table until the server dies: key = base + i, the same in each table."""
    try:
        conn = tique.connect(server.url, write_mode="buffered")
        cur = conn.cursor()
        for i in range(100000):
            if stop.is_set():
                return
            key = base + i
            for table in TABLES:
                cur.execute(f"INSERT INTO {table} VALUES (%s, 'small')", (key,))
            attempted.append(conn._txn.txid)  # type: ignore[union-attr]
            conn.commit()
            acked.append(key)
    except Error:
        return


def _call(sql: str) -> str:
    """Which engine call of a COMMIT's flush ``sql`` is."""
    if "INSERT INTO tique.commits" in sql and "tique_data" in sql:
        return "rows and record"  # one text
    if sql.lstrip().startswith("INSERT INTO") and "tique_data" in sql:
        return "first rows"  # and the next ones: the server is dead by then
    return sql.strip()


def _big_commit(server: ServeProcess, rows: int, acked: list[int], kill_at: str) -> int:
    """Buffer ``rows`` rows per table, start COMMIT in a thread; its txid. ``kill_at``:
    kill the server right after this engine call of the COMMIT."""
    conn = tique.connect(server.url, write_mode="buffered")
    cur = conn.cursor()
    for table in TABLES:
        cur.execute(f"INSERT INTO {table} VALUES " + ", ".join(f"({k}, 'big-{k}')" for k in range(rows)))
    txid = conn._txn.txid  # type: ignore[union-attr]
    raw = conn._raw.raw
    sent = raw.execute

    def execute_then_kill(sql: str) -> object:
        result = sent(sql)
        if _call(sql) == kill_at:
            server.proc.send_signal(signal.SIGKILL)
            server.proc.wait(30)
        return result

    raw.execute = execute_then_kill

    def run() -> None:
        try:
            conn.commit()
            acked.append(-1)
        except Error:
            pass

    threading.Thread(target=run, daemon=True).start()
    return txid


# rows: about 0.5 MB of text (one text), about 2.5 MB (statement by statement); kill_at: the engine call of the
# big COMMIT after which the server dies (the one text, the first table's rows, the COMMIT)
@pytest.mark.parametrize(
    ("rows", "kill_at"),
    [(3000, "rows and record"), (12000, "first rows"), (12000, "COMMIT")],
)
def test_rows_and_record_survive_a_server_kill_together(tmp_path: Path, rows: int, kill_at: str) -> None:
    server = start_serve(tmp_path / "db")
    setup = tique.connect(server.url)
    for table in TABLES:
        setup.cursor().execute(f"CREATE TABLE {table} (k INT PRIMARY KEY, v VARCHAR(20))")
    setup.commit()
    setup.close()
    attempted: list[int] = []
    acked: list[int] = []
    stop = threading.Event()
    writers = [
        threading.Thread(target=_small_writer, args=(server, base, attempted, acked, stop), daemon=True)
        for base in (1_000_000, 2_000_000)
    ]
    for w in writers:
        w.start()
    big = _big_commit(server, rows, acked, kill_at)
    server.proc.wait(30)
    stop.set()
    for w in writers:
        w.join(30)
    restarted = start_serve(tmp_path / "db", port=server.port)
    try:
        raw = open_engine(restarted.url).connect()
        caches = [cache(raw, table) for table in TABLES]
        for txid in [big, *attempted]:
            counts = [raw.execute(f"SELECT COUNT(*) FROM {c} WHERE tq_txid = {txid}").scalar() for c in caches]
            records = raw.execute(f"SELECT COUNT(*) FROM tique.commits WHERE txid = {txid}").scalar()
            assert len(set(counts)) == 1, f"transaction {txid}: rows in some tables only: {counts}"
            assert (counts[0] > 0) == (records > 0), f"transaction {txid}: {counts[0]} rows, {records} records"
            if counts[0]:
                assert counts[0] == (rows if txid == big else 1), f"transaction {txid}: part of its rows"
            if txid == big and kill_at in ("rows and record", "COMMIT"):
                assert counts[0] == rows, "the server committed the rows and record before it died"
            if txid == big and kill_at == "first rows":
                assert counts[0] == 0, "the server died inside the transaction"
        raw.close()
        conn = tique.connect(restarted.url)
        cur = conn.cursor()
        for table in TABLES:
            cur.execute(f"SELECT k FROM {table} WHERE k >= 1000000")
            seen = {k for (k,) in cur.fetchall()}
            assert set(acked) - {-1} <= seen, f"acknowledged commits missing from {table}"
            cur.execute(f"SELECT COUNT(*) FROM {table} WHERE k < 1000000")
            assert cur.fetchone()[0] in ((rows,) if -1 in acked else (0, rows))
        conn.commit()
        cur.execute("INSERT INTO t0 VALUES (-5, 'after')")  # and the database commits again
        conn.commit()
        conn.close()
    finally:
        restarted.stop()
    assert acked, "some small commits were acknowledged before the kill"
