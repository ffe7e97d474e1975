"""Rows shared across a process's transactions (tique/shared_rows.py) never answer a read with anything but the
reader's snapshot: a commit by another connection or another process, a reader on an older snapshot, a row that
did not exist, the reader's own writes, DDL and bulk loads. Each scenario first checks that sharing happened
(the hit counter moved), so it cannot pass by sharing nothing."""

from __future__ import annotations

import signal
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import pytest

import tique
from tests.adversarial.clients import Client
from tests.conftest import start_serve
from tique import shared_rows
from tique.database import Database

READ = "SELECT name, price FROM {t} WHERE id = %s"


@pytest.fixture(autouse=True)
def _quiet_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A table counts as quiet as soon as a begin saw it unwritten (the default waits a second)."""
    monkeypatch.setattr(shared_rows, "QUIET_S", 0.0)


def setup(connect: Callable[..., tique.Connection], table: str, rows: int = 20) -> tique.Connection:
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(6,2))")
    conn.commit()
    cur.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s)", [(i, f"n{i}", f"{i}.50") for i in range(1, rows)])
    conn.commit()
    return conn


def read(conn: tique.Connection, table: str, key: int) -> tuple[object, ...] | None:
    cur = conn.cursor()
    cur.execute(READ.format(t=table), (key,))
    rows = cur.fetchall()
    assert len(rows) <= 1
    return tuple(rows[0]) if rows else None


def warm(conn: tique.Connection, table: str, keys: range) -> None:
    """Enough transactions reading ``keys`` for the table to be found quiet and its rows shared."""
    for _ in range(4):
        for k in keys:
            read(conn, table, k)
        conn.commit()


def hits(url: str) -> int:
    return Database.get(url).shared_rows.hits


def test_rows_are_shared_and_a_commit_by_another_connection_ends_them(
    url: str, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    table = unique_name("sr_item")
    setup(connect, table)
    reader, writer = connect(), connect()
    warm(reader, table, range(1, 6))
    before = hits(url)
    assert read(reader, table, 3) == ("n3", Decimal("3.50"))
    reader.commit()
    assert hits(url) > before, "a quiet table's row was read from the engine again"

    writer.cursor().execute(f"UPDATE {table} SET price = 9.99 WHERE id = 3")
    writer.commit()
    assert read(reader, table, 3) == ("n3", Decimal("9.99"))
    reader.commit()


def test_an_older_snapshot_never_reads_a_newer_shared_row(
    url: str, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    table = unique_name("sr_old")
    setup(connect, table)
    old, new, writer = connect(), connect(), connect()
    warm(new, table, range(1, 6))
    assert read(old, table, 1) == ("n1", Decimal("1.50"))  # old's snapshot is taken here
    writer.cursor().execute(f"UPDATE {table} SET name = 'changed' WHERE id = 2")
    writer.commit()
    for _ in range(3):  # new's transactions share the new row
        assert read(new, table, 2) == ("changed", Decimal("2.50"))
        new.commit()
    assert read(old, table, 2) == ("n2", Decimal("2.50"))
    old.commit()
    # and the other way round: a row the older snapshot read from the engine is not shared with newer ones
    assert read(old, table, 4) == ("n4", Decimal("4.50"))
    writer.cursor().execute(f"UPDATE {table} SET name = 'again' WHERE id = 4")
    writer.commit()
    assert read(old, table, 4) == ("n4", Decimal("4.50"))
    assert read(new, table, 4) == ("again", Decimal("4.50"))
    old.commit()
    new.commit()


def test_an_absent_key_inserted_later_is_found(
    url: str, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    table = unique_name("sr_absent")
    setup(connect, table)
    reader, writer = connect(), connect()
    warm(reader, table, range(50, 53))  # keys with no row
    before = hits(url)
    assert read(reader, table, 50) is None
    reader.commit()
    assert hits(url) > before
    writer.cursor().execute(f"INSERT INTO {table} VALUES (50, 'new', 1.00)")
    writer.commit()
    assert read(reader, table, 50) == ("new", Decimal("1.00"))
    writer.cursor().execute(f"DELETE FROM {table} WHERE id = 1")
    writer.commit()
    reader.commit()
    assert read(reader, table, 1) is None
    reader.commit()


def test_own_writes_are_never_answered_from_shared_rows(
    url: str, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    table = unique_name("sr_own")
    setup(connect, table)
    conn = connect()
    warm(conn, table, range(1, 4))
    conn.cursor().execute(f"UPDATE {table} SET price = 0.01 WHERE id = 2")
    assert read(conn, table, 2) == ("n2", Decimal("0.01"))
    assert read(conn, table, 1) == ("n1", Decimal("1.50"))
    conn.rollback()
    assert read(conn, table, 2) == ("n2", Decimal("2.50"))
    conn.commit()


def test_ddl_and_bulk_loads_drop_shared_rows(
    url: str, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    table = unique_name("sr_ddl")
    setup(connect, table)
    reader, other = connect(), connect()
    warm(reader, table, range(1, 4))
    warm(reader, table, range(90, 92))
    other.bulk_load(table, [(90, "loaded", 3)])
    assert read(reader, table, 90) == ("loaded", Decimal("3.00"))
    reader.commit()
    other.cursor().execute(f"ALTER TABLE {table} ADD COLUMN extra INT DEFAULT 7")
    other.commit()
    cur = reader.cursor()
    cur.execute(f"SELECT * FROM {table} WHERE id = %s", (1,))
    assert cur.fetchall() == [(1, "n1", Decimal("1.50"), 7)]
    reader.commit()


def test_a_commit_by_another_process_ends_shared_rows(
    server: object, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str], url: str
) -> None:
    if not url.startswith("monetdb://"):
        return  # one embedded database has one process
    table = unique_name("sr_proc")
    setup(connect, table)
    reader = connect()
    warm(reader, table, range(1, 6))
    before = hits(url)
    assert read(reader, table, 5) == ("n5", Decimal("5.50"))
    reader.commit()
    assert hits(url) > before
    other = Client(url)
    try:
        other.ok(f"UPDATE {table} SET name = 'remote' WHERE id = 5")
        assert "error" not in other.commit()
    finally:
        other.close()
    assert read(reader, table, 5) == ("remote", Decimal("5.50"))
    reader.commit()


def test_a_commit_just_before_a_server_kill_ends_shared_rows(tmp_path: Path) -> None:
    """The write marks live in the engine's memory: after a SIGKILL and restart they start again, at the floor
    (the last timestamp recovery restores) and under a new catalog version, so a row a client kept from before
    the restart is not taken for the snapshot's."""
    server = start_serve(tmp_path / "db")
    url = server.url
    try:
        conn = tique.connect(url)
        setup(lambda: conn, "kv_kill")
        warm(conn, "kv_kill", range(1, 4))
        before = hits(url)
        assert read(conn, "kv_kill", 2) == ("n2", Decimal("2.50"))
        conn.commit()
        assert hits(url) > before
        shared = Database.get(url).shared_rows
        writer = tique.connect(url)
        writer.cursor().execute("UPDATE kv_kill SET name = 'late' WHERE id = 2")
        writer.commit()
    finally:
        server.stop(signal.SIGKILL)
    restarted = start_serve(tmp_path / "db", port=server.port)
    try:
        again = tique.connect(url)
        assert Database.get(url).shared_rows is shared  # the same process keeps them across the restart
        assert read(again, "kv_kill", 2) == ("late", Decimal("2.50"))
        again.close()
    finally:
        restarted.stop()


def test_a_table_read_whole_answers_every_key_until_a_write(
    url: str,
    connect: Callable[..., tique.Connection],
    unique_name: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A quiet table that keeps missing is read whole once: its rows and its absent keys are then answered from
    the process, with the values the engine returns, until a commit writes it."""
    monkeypatch.setattr(shared_rows, "WHOLE_AFTER", 3)
    table = unique_name("sr_whole")
    setup(connect, table, rows=40)
    reader, writer, plain = connect(), connect(), connect(shared_rows=False)
    warm(reader, table, range(1, 2))
    for k in range(2, 8):  # misses, then the table is read whole
        read(reader, table, k)
    reader.commit()
    before = hits(url)
    for k in (*range(1, 45), 1000):  # every key, and absent ones, without the engine
        assert read(reader, table, k) == read(plain, table, k), k
    reader.commit()
    plain.commit()
    assert hits(url) - before >= 45
    writer.cursor().execute(f"INSERT INTO {table} VALUES (1000, 'late', 2.00)")
    writer.cursor().execute(f"UPDATE {table} SET price = 0.99 WHERE id = 7")
    writer.commit()
    assert read(reader, table, 1000) == ("late", Decimal("2.00"))
    assert read(reader, table, 7) == ("n7", Decimal("0.99"))
    reader.commit()


def test_a_bulk_load_in_the_process_reaches_rows_an_open_transaction_holds(
    url: str, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    """A bulk load writes Storage for every snapshot at once: a transaction of the same process that held a key as
    absent (read it, no row) or held its row finds what the load wrote, as the engine would answer it."""
    table = unique_name("sr_held_load")
    setup(connect, table)
    reader, loader = connect(shared_rows=False), connect()
    cur = reader.cursor()
    cur.execute(f"SELECT * FROM {table} WHERE id = %s", (70,))  # a whole-row read: the absence is held
    assert cur.fetchall() == []
    loader.bulk_load(table, [(70, "loaded", 7)])
    cur.execute(f"SELECT * FROM {table} WHERE id = %s", (70,))
    assert cur.fetchall() == [(70, "loaded", Decimal("7.00"))]
    with pytest.raises(tique.SerializationFailure):  # it read the table before and after the load: not one state
        reader.commit()
