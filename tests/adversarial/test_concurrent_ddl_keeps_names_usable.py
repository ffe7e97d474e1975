"""DDL on different tables from several processes at once must leave every table usable.

Found by the soak (benchmarks/soak.py): three processes that each drop and re-create their own table through
``tique serve`` get MonetDB conflicts on tique's catalog ("Delete failed due to conflict with another
transaction", "COMMIT: transaction is aborted because of concurrency conflicts"), and afterwards a name can be
left half-dropped: ``DROP TABLE`` says "no such table" while ``CREATE TABLE`` says "name already in use", for
good.
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import tique
from tests.conftest import start_serve

PROCESSES = 3
CYCLES = 50


def drop_and_create(url: str, name: str) -> None:
    conn = tique.connect(url)
    cur = conn.cursor()
    for _ in range(CYCLES):
        for sql in (f"DROP TABLE {name}", f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT)"):
            try:
                cur.execute(sql)
            except tique.Error:  # a refused DDL statement is allowed; a half-applied one is not (checked below)
                conn.rollback()
    conn.close()


def test_every_table_can_be_dropped_and_created_after_concurrent_ddl(tmp_path: Path) -> None:
    server = start_serve(tmp_path / "db")
    try:
        names = [f"scratch{i}" for i in range(PROCESSES)]
        workers = [multiprocessing.Process(target=drop_and_create, args=(server.url, name)) for name in names]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(120)
        conn = tique.connect(server.url)
        cur = conn.cursor()
        unusable = {}
        for name in names:
            try:
                cur.execute(f"DROP TABLE IF EXISTS {name}")
                cur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT)")
                cur.execute(f"INSERT INTO {name} VALUES (1, 1)")
                conn.commit()
            except tique.Error as exc:
                unusable[name] = str(exc)
                conn.rollback()
        assert unusable == {}
    finally:
        server.stop()
