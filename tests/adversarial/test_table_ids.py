"""Guarantee: every tique table gets an id no other table has, had, or will have, even when several processes
create tables at once or the server restarts; DROP TABLE unregisters exactly the table dropped."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.adversarial.clients import Client
from tests.conftest import start_serve

PER_PROCESS = 25


def _ids(client: Client) -> dict[str, int]:
    rows = client.ok("SELECT name, table_id FROM tique.tables")
    client.commit()
    return {str(n): int(i) for n, i in rows}


def test_concurrent_creates_get_distinct_ids_and_drop_removes_one(tmp_path: Path) -> None:
    served = start_serve(tmp_path / "db")
    clients = [Client(served.url), Client(served.url)]
    try:

        def create_many(client: Client, prefix: str) -> None:
            for i in range(PER_PROCESS):
                client.ok(f"CREATE TABLE {prefix}_{i} (k INT PRIMARY KEY, v INT)")

        threads = [threading.Thread(target=create_many, args=(c, p)) for c, p in zip(clients, ("a", "b"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ids = _ids(clients[0])
        assert len(ids) == 2 * PER_PROCESS
        assert len(set(ids.values())) == len(ids), "duplicate table ids"

        for i in range(PER_PROCESS):
            clients[0].ok(f"DROP TABLE a_{i}")
        left = _ids(clients[0])
        assert sorted(left) == sorted(f"b_{i}" for i in range(PER_PROCESS))
        for i in range(PER_PROCESS):  # every table of the other process still works
            clients[1].ok(f"INSERT INTO b_{i} VALUES (1, {i})")
        assert "error" not in clients[1].commit()
        assert clients[1].ok("SELECT v FROM b_7") == [[7]]
    finally:
        for c in clients:
            c.close()
        served.stop()


def test_ids_are_never_reused_even_after_a_restart(tmp_path: Path) -> None:
    directory = tmp_path / "db"
    served = start_serve(directory)
    client = Client(served.url)
    try:
        client.ok("CREATE TABLE first (k INT PRIMARY KEY)")
        client.ok("CREATE TABLE second (k INT PRIMARY KEY)")
        seen = set(_ids(client).values())
        client.ok("DROP TABLE second")
        client.ok("CREATE TABLE third (k INT PRIMARY KEY)")
        third = _ids(client)["third"]
        assert third not in seen
        seen.add(third)
        client.ok("DROP TABLE third")
    finally:
        client.close()
        served.stop()
    served = start_serve(directory)
    client = Client(served.url)
    try:
        client.ok("CREATE TABLE fourth (k INT PRIMARY KEY)")
        fourth = _ids(client)["fourth"]
        assert fourth not in seen
        assert fourth > max(seen)
    finally:
        client.close()
        served.stop()


@pytest.mark.parametrize("dropped", ["x", "y"])
def test_drop_unregisters_exactly_that_table(tmp_path: Path, dropped: str) -> None:
    served = start_serve(tmp_path / "db")
    client = Client(served.url)
    try:
        client.ok("CREATE TABLE x (k INT PRIMARY KEY)")
        client.ok("CREATE TABLE y (k INT PRIMARY KEY)")
        client.ok(f"DROP TABLE {dropped}")
        assert list(_ids(client)) == [n for n in ("x", "y") if n != dropped]
    finally:
        client.close()
        served.stop()
