"""Guarantee: every tique table gets an id no other table has, had, or will have, even when several processes
create tables at once or the server restarts; DROP TABLE unregisters exactly the table dropped."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from tests.adversarial.clients import Client
from tests.conftest import start_serve

PER_PROCESS = 25


def _together(*targets: Callable[[], None]) -> None:
    """Run the targets in threads at once (each drives its own client process); fail if any of them failed."""
    failures: list[BaseException] = []

    def guarded(target: Callable[[], None]) -> None:
        try:
            target()
        except BaseException as exc:  # re-raised in the test's thread below
            failures.append(exc)

    threads = [threading.Thread(target=guarded, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures


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

        _together(lambda: create_many(clients[0], "a"), lambda: create_many(clients[1], "b"))
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


def test_drops_and_creates_in_two_processes_at_once_keep_the_catalog_exact(tmp_path: Path) -> None:
    served = start_serve(tmp_path / "db")
    clients = [Client(served.url), Client(served.url)]
    try:
        for i in range(PER_PROCESS):
            clients[0].ok(f"CREATE TABLE old_{i} (k INT PRIMARY KEY)")

        def drop_all() -> None:
            for i in range(PER_PROCESS):
                clients[0].ok(f"DROP TABLE old_{i}")

        def create_all() -> None:
            for i in range(PER_PROCESS):
                clients[1].ok(f"CREATE TABLE new_{i} (k INT PRIMARY KEY)")

        _together(drop_all, create_all)
        ids = _ids(clients[1])
        assert sorted(ids) == sorted(f"new_{i}" for i in range(PER_PROCESS))
        assert len(set(ids.values())) == PER_PROCESS
    finally:
        for c in clients:
            c.close()
        served.stop()
