"""A checkpointer moving versions out of the Cache tables (its DELETEs on tables that COMMITs append to) never
fails a COMMIT whose rows of several tables and commit record go as one engine transaction: writers on disjoint
rows all commit, on both engines, while a checkpoint runs every few milliseconds."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import tique
from tests.conftest import sized
from tique.checkpoint.algorithm import Checkpointer
from tique.engine import open_engine

Connect = Callable[..., tique.Connection]
TABLES = 3


def test_writers_on_disjoint_rows_all_commit_while_checkpoints_run(
    connect: Connect, url: str, unique_name: Callable[[str], str]
) -> None:
    names = [unique_name("ckw") for _ in range(TABLES)]
    setup = connect()
    for name in names:
        setup.cursor().execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT)")
        setup.cursor().executemany(f"INSERT INTO {name} VALUES (%s, 0)", [(k,) for k in range(40)])
    setup.commit()
    stop = threading.Event()
    failures: list[str] = []
    commits = [0]

    def writer(first: int) -> None:
        conn = connect(write_mode="buffered")
        cur = conn.cursor()
        n = 0
        while not stop.is_set():
            k = first + n % 20
            n += 1
            try:
                for name in names:
                    cur.execute(f"UPDATE {name} SET v = v + 1 WHERE k = %s", (k,))
                conn.commit()
                commits[0] += 1
            except tique.Error as exc:
                failures.append(f"{type(exc).__name__}: {exc}")
                conn.rollback()

    threads = [threading.Thread(target=writer, args=(first,)) for first in (0, 20)]
    for t in threads:
        t.start()
    engine = open_engine(url)
    raw = engine.connect()
    runs = 0
    try:
        # at least 3 s (8 under make test-long) and 5 checkpoints: a checkpoint visits every table of the database,
        # which holds the tables of every test run before this one in the session (with two test workers, up to
        # ~8 s a checkpoint)
        deadline = time.monotonic() + sized(3, 8)
        while not failures and (time.monotonic() < deadline or runs < 5) and time.monotonic() < deadline + 120:
            Checkpointer(raw).run_once()
            runs += 1
            time.sleep(0.005)
    finally:
        stop.set()
        for t in threads:
            t.join(60)
        raw.close()
    assert not failures, failures[:3]
    assert commits[0] >= 20 and runs >= 5, (commits, runs)
    check = connect()
    cur = check.cursor()
    for name in names:
        cur.execute(f"SELECT SUM(v) FROM {name}")
        assert cur.fetchone() == (commits[0],), f"every commit's update of {name} is there"
    check.commit()
