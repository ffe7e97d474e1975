"""The checkpointer never strands a commit record without its outcome: when MonetDB aborts its DELETE on
tique.commits (an append committed meanwhile) it must not trim the outcomes, or that record looks unfinished
forever, the low-water id stays below it and the Cache grows for as long as the database runs."""

from __future__ import annotations

import threading
import time

import tique
from tests.conftest import ServeProcess
from tests.physical import cache
from tique.checkpoint import Checkpointer
from tique.engine import open_engine


def test_conflicting_trims_never_freeze_cleaning(served: ServeProcess) -> None:
    setup = tique.connect(served.url)
    setup.cursor().execute("CREATE TABLE ctr (k INT PRIMARY KEY, v INT)")
    setup.cursor().executemany("INSERT INTO ctr VALUES (%s, 0)", [(k,) for k in range(20)])
    setup.commit()
    setup.close()
    stop = threading.Event()

    def writer(k: int) -> None:  # keeps appending commit records and outcomes
        conn = tique.connect(served.url)
        while not stop.is_set():
            conn.run(lambda c: c.cursor().execute("UPDATE ctr SET v = v + 1 WHERE k = %s", (k,)), retries=100)
        conn.close()

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    raw = open_engine(served.url).connect()
    ckpt = Checkpointer(raw, retries=0)  # a conflicting DELETE is deferred at once
    stranded = "SELECT COUNT(*) FROM tique.commits WHERE txid < {low} AND txid NOT IN (SELECT txid FROM tique.outcomes)"
    deferred = 0
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            report = ckpt.run_once()
            deferred += len(report.deferred)
            assert int(raw.execute(stranded.format(low=report.low_txid)).scalar()) == 0, report.line()
            time.sleep(0.02)
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    assert deferred, "no DELETE was ever deferred: the test did not exercise anything"
    for _ in range(5):
        ckpt.run_once()
    assert int(raw.execute(f"SELECT COUNT(*) FROM {cache(raw, 'ctr')}").scalar()) == 0
    assert int(raw.execute("SELECT COUNT(*) FROM tique.commits").scalar()) == 0
    raw.close()
