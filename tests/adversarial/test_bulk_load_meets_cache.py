"""bulk_load writes Storage directly, but the newest versions of recently written keys live in the Cache until the
checkpointer moves them. A loaded row whose key has such a version would be hidden by it (the snapshot prefers the
Cache): a key committed by INSERT but not yet checkpointed was accepted twice, and a key deleted recently was
loaded and stayed invisible. Both lose the loaded row without a word; they must be refused, loading nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tique import IntegrityError, SerializationFailure
from tique.checkpoint.algorithm import Checkpointer
from tique.connection import Connection

Connect = Callable[..., Connection]
Names = Callable[[str], str]


def rows(conn: Connection, sql: str) -> list[tuple[object, ...]]:
    return [tuple(r) for r in conn.execute(sql).fetchall()]


@pytest.fixture
def table(connect: Connect, unique_name: Names) -> str:
    name = unique_name("bl")
    conn = connect()
    conn.cursor().execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v VARCHAR(20))")
    conn.commit()
    return name


def test_a_key_committed_but_not_yet_checkpointed_is_refused_and_nothing_is_loaded(
    connect: Connect, table: str
) -> None:
    conn = connect()
    conn.cursor().execute(f"INSERT INTO {table} VALUES (5, 'inserted')")
    conn.commit()
    with pytest.raises(IntegrityError, match=r"loaded nothing.*\(k=5\)"):
        conn.bulk_load(table, [(4, "four"), (5, "loaded"), (6, "six")])
    assert rows(conn, f"SELECT k, v FROM {table} ORDER BY k") == [(5, "inserted")]


def test_a_key_deleted_recently_is_refused_rather_than_loaded_invisible(connect: Connect, table: str) -> None:
    conn = connect()
    conn.cursor().execute(f"INSERT INTO {table} VALUES (7, 'old')")
    conn.commit()
    conn.cursor().execute(f"DELETE FROM {table} WHERE k = 7")
    conn.commit()
    with pytest.raises(IntegrityError, match=r"loaded nothing.*checkpoint"):
        conn.bulk_load(table, [(7, "again"), (8, "eight")])
    assert rows(conn, f"SELECT k, v FROM {table} ORDER BY k") == []


def test_a_key_another_open_transaction_sent_to_the_cache_is_refused(connect: Connect, table: str) -> None:
    writer, loader = connect(), connect()
    cur = writer.cursor()
    cur.execute(f"INSERT INTO {table} VALUES (9, 'pending')")
    cur.execute(f"SELECT COUNT(*) FROM {table}")  # the read sends the pending row to the Cache
    with pytest.raises(IntegrityError, match="loaded nothing"):
        loader.bulk_load(table, [(9, "loaded")])
    # a load, even one refused, ends the transactions that used its table meanwhile (they overlap it in commit
    # order): had it gone in, the writer's row would hide the loaded one
    with pytest.raises(SerializationFailure, match="bulk-loaded"):
        writer.commit()
    writer.run(lambda c: c.cursor().execute(f"INSERT INTO {table} VALUES (9, 'pending')"))
    assert rows(loader, f"SELECT k, v FROM {table}") == [(9, "pending")]


def test_keys_without_cache_versions_load_beside_keys_with_them(connect: Connect, table: str) -> None:
    conn = connect()
    conn.cursor().execute(f"INSERT INTO {table} VALUES (1, 'one')")
    conn.commit()
    assert conn.bulk_load(table, [(i, f"v{i}") for i in range(2, 2500)], batch=700) == 2498
    assert rows(conn, f"SELECT COUNT(*), MIN(k), MAX(k) FROM {table}") == [(2499, 1, 2499)]
    assert rows(conn, f"SELECT v FROM {table} WHERE k = 2000") == [("v2000",)]


def test_composite_keys_compared_whole(connect: Connect, unique_name: Names) -> None:
    name = unique_name("blc")
    conn = connect()
    conn.cursor().execute(f"CREATE TABLE {name} (a INT, b VARCHAR(5), v INT, PRIMARY KEY (a, b))")
    conn.cursor().execute(f"INSERT INTO {name} VALUES (1, 'x', 10)")
    conn.commit()
    conn.bulk_load(name, [(1, "y", 11), (2, "x", 12)])  # each column matches, the key does not
    with pytest.raises(IntegrityError, match=r"loaded nothing.*\(a=1, b='x'\)"):
        conn.bulk_load(name, [(3, "z", 13), (1, "x", 14)])
    assert rows(conn, f"SELECT a, b, v FROM {name} ORDER BY a, b") == [(1, "x", 10), (1, "y", 11), (2, "x", 12)]


def test_csv_loads_are_checked_the_same_way(connect: Connect, table: str, tmp_path: Path) -> None:
    conn = connect()
    conn.cursor().execute(f"INSERT INTO {table} VALUES (5, 'inserted')")
    conn.commit()
    bad = tmp_path / "bad.csv"
    bad.write_text("4,four\n5,loaded\n")
    with pytest.raises(IntegrityError, match=r"loaded nothing.*\(k=5\)"):
        conn.bulk_load_csv(table, bad)
    good = tmp_path / "good.csv"
    good.write_text("4,four\n6,six\n")
    assert conn.bulk_load_csv(table, good) == 2
    assert rows(conn, f"SELECT k, v FROM {table} ORDER BY k") == [(4, "four"), (5, "inserted"), (6, "six")]


def test_after_a_checkpoint_the_key_is_refused_by_storage_as_before(connect: Connect, table: str) -> None:
    conn = connect()
    conn.cursor().execute(f"INSERT INTO {table} VALUES (5, 'inserted')")
    conn.commit()
    checkpointer = Checkpointer(conn.db.connect_raw())
    try:
        checkpointer.run_once()
    finally:
        checkpointer.conn.close()
    with pytest.raises(IntegrityError, match="loaded nothing"):
        conn.bulk_load(table, [(5, "loaded")])
    conn.bulk_load(table, [(6, "six")])
    assert rows(conn, f"SELECT k, v FROM {table} ORDER BY k") == [(5, "inserted"), (6, "six")]
