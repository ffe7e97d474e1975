"""Guarantee: a table dropped and re-created by another process never lets a transaction commit against the wrong
table. Two concurrent ``v = v + 1`` on the re-created table, one from a process whose catalog predates the DDL,
cannot both commit; a write buffered before the DROP never lands in the new table.

Each test drives separate client processes through ``tique serve``, one statement at a time.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.adversarial.clients import Client
from tests.conftest import ServeProcess


@pytest.fixture
def clients(served: ServeProcess) -> Iterator[tuple[Client, Client]]:
    pair = (Client(served.url), Client(served.url))
    yield pair
    for client in pair:
        client.close()


def _create(client: Client, table: str, columns: str = "k INT PRIMARY KEY, v INT") -> None:
    """Create ``table``, and after it another table, so that an id taken as MAX(id) + 1 would not come back."""
    client.ok(f"CREATE TABLE {table} ({columns})")
    client.ok(f"CREATE TABLE {table}_later (k INT PRIMARY KEY)")


def _recreate(client: Client, table: str) -> None:
    client.ok(f"DROP TABLE {table}")
    client.ok(f"CREATE TABLE {table} (k INT PRIMARY KEY, v INT)")
    client.ok(f"INSERT INTO {table} VALUES (1, 0)")
    assert "error" not in client.commit()


def test_no_lost_update_after_drop_and_create_elsewhere(clients: tuple[Client, Client]) -> None:
    stale, fresh = clients
    _create(stale, "lost")
    stale.ok("INSERT INTO lost VALUES (1, 0)")
    assert "error" not in stale.commit()
    assert stale.ok("SELECT v FROM lost WHERE k = 1") == [[0]]  # the stale process knows the old table
    assert "error" not in stale.commit()
    _recreate(fresh, "lost")

    stale.ok("UPDATE lost SET v = v + 1 WHERE k = 1")
    fresh.ok("UPDATE lost SET v = v + 1 WHERE k = 1")
    outcomes = [stale.commit(), fresh.commit()]
    committed = sum("error" not in o for o in outcomes)
    assert committed >= 1, outcomes
    final = fresh.ok("SELECT v FROM lost WHERE k = 1")
    fresh.commit()
    assert final == [[committed]], f"{committed} increments committed but v = {final}: {outcomes}"


def test_buffered_write_does_not_land_in_the_recreated_table(clients: tuple[Client, Client]) -> None:
    writer, ddl = clients
    _create(writer, "moved")
    writer.ok("INSERT INTO moved VALUES (1, 0)")
    assert "error" not in writer.commit()
    writer.ok("INSERT INTO moved VALUES (5, 50)")  # buffered in the writer's process
    _recreate(ddl, "moved")
    outcome = writer.commit()
    assert outcome.get("error") in ("SerializationFailure", "ProgrammingError"), outcome
    assert "re-created" in outcome["message"] or "dropped" in outcome["message"], outcome
    assert ddl.ok("SELECT k, v FROM moved ORDER BY k") == [[1, 0]]
    ddl.commit()


def test_update_of_a_table_dropped_meanwhile_fails_clearly(clients: tuple[Client, Client]) -> None:
    writer, ddl = clients
    _create(writer, "gone")
    writer.ok("INSERT INTO gone VALUES (1, 0)")
    assert "error" not in writer.commit()
    writer.ok("UPDATE gone SET v = 7 WHERE k = 1")
    writer.ok("SELECT COUNT(*) FROM gone")  # the write reaches the old Cache table
    _recreate(ddl, "gone")
    outcome = writer.commit()
    assert outcome.get("error") in ("SerializationFailure", "ProgrammingError"), outcome
    assert ddl.ok("SELECT k, v FROM gone ORDER BY k") == [[1, 0]]
    ddl.commit()


def test_a_new_transaction_uses_the_new_definition(clients: tuple[Client, Client]) -> None:
    old, ddl = clients
    _create(old, "shape")
    assert "error" not in old.commit()
    old.ok("SELECT * FROM shape")
    old.commit()
    ddl.ok("DROP TABLE shape")
    ddl.ok("CREATE TABLE shape (a INT, b INT PRIMARY KEY, c VARCHAR(10))")
    ddl.commit()
    # the old process must plan against the new columns and key, not its cached definition
    old.ok("INSERT INTO shape VALUES (1, 2, 'x')")
    assert "error" not in old.commit()
    assert ddl.ok("SELECT a, b, c FROM shape") == [[1, 2, "x"]]
    ddl.commit()


def test_buffered_write_to_a_table_dropped_meanwhile_says_so(clients: tuple[Client, Client]) -> None:
    writer, ddl = clients
    _create(writer, "solo")
    assert "error" not in writer.commit()
    writer.ok("INSERT INTO solo VALUES (1, 1)")  # buffered: sent to the Cache table only at COMMIT
    ddl.ok("DROP TABLE solo")
    outcome = writer.commit()
    assert outcome.get("error") in ("SerializationFailure", "ProgrammingError"), outcome
    assert "dropped" in outcome["message"], outcome
    assert "rolled back" in outcome["message"], outcome
