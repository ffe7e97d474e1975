"""Integer primary keys with generated values (AUTO_INCREMENT, SERIAL, IDENTITY): concurrent inserters never get
the same value, the generated key comes back as cursor.lastrowid, and after a restart the counter continues past
every stored value. Never through MonetDB SEQUENCEs (unsafe under concurrency on 11.41)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

import tique
from tests.conftest import start_serve

DECLARATIONS = {
    "auto_increment": "id INT AUTO_INCREMENT PRIMARY KEY",
    "serial": "id SERIAL",
    "identity": "id INT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    "bigserial": "id BIGSERIAL PRIMARY KEY",
}


@pytest.mark.parametrize("declaration", sorted(DECLARATIONS))
def test_generated_key_and_lastrowid(connect: Callable[..., tique.Connection], unique_name, declaration: str) -> None:
    name = unique_name("gen")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} ({DECLARATIONS[declaration]}, v VARCHAR(10))")
    cur.execute(f"INSERT INTO {name} (v) VALUES (%s)", ("a",))
    first = cur.lastrowid
    cur.execute(f"INSERT INTO {name} (id, v) VALUES (NULL, 'b'), (NULL, 'c')")
    second = cur.lastrowid
    conn.commit()
    cur.execute(f"SELECT id, v FROM {name} ORDER BY id")
    rows = cur.fetchall()
    assert [v for _, v in rows] == ["a", "b", "c"]
    assert [i for i, _ in rows] == [first, second, second + 1]
    assert first is not None and second > first
    cur.execute(f"INSERT INTO {name} (id, v) VALUES (%s, 'd')", (second + 50,))
    assert cur.lastrowid is None  # nothing generated
    cur.execute(f"INSERT INTO {name} (v) VALUES ('e')")
    assert cur.lastrowid == second + 51  # past the explicit value, as MySQL and SQLite
    cur.execute(f"INSERT INTO {name} VALUES (DEFAULT, 'f')")
    assert cur.lastrowid == second + 52
    cur.execute(f"INSERT INTO {name} DEFAULT VALUES")  # what SQLAlchemy sends for an object with no values
    assert cur.lastrowid == second + 53
    conn.commit()
    cur.execute(f"SELECT v FROM {name} WHERE id = %s", (second + 53,))
    assert cur.fetchall() == [(None,)]


def test_bulk_loaded_keys_move_the_counter(connect: Callable[..., tique.Connection], unique_name) -> None:
    name = unique_name("genb")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
    cur.execute(f"INSERT INTO {name} (v) VALUES (0)")  # the counter is in use
    conn.commit()
    conn.bulk_load(name, [(i, i) for i in range(10, 20)])
    cur.execute(f"INSERT INTO {name} (v) VALUES (1)")
    assert cur.lastrowid == 20
    conn.commit()


def test_concurrent_inserters_never_collide(connect: Callable[..., tique.Connection], unique_name) -> None:
    name = unique_name("genc")
    connect().cursor().execute(f"CREATE TABLE {name} (id INT AUTO_INCREMENT PRIMARY KEY, who INT)")
    got: list[int] = []
    errors: list[BaseException] = []

    def inserter(who: int) -> None:
        conn = connect()
        try:
            for _ in range(25):
                cur = conn.cursor()
                cur.execute(f"INSERT INTO {name} (who) VALUES (%s)", (who,))
                got.append(cur.lastrowid)
                conn.commit()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=inserter, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    cur = connect().cursor()
    cur.execute(f"SELECT id FROM {name}")
    stored = sorted(r[0] for r in cur.fetchall())
    assert len(stored) == 100 and len(set(stored)) == 100
    assert sorted(got) == stored


def test_counter_continues_after_restart(tmp_path: Path) -> None:
    """A restarted engine has no counters: the next value starts past everything stored, committed or not."""
    server = start_serve(tmp_path / "gen")
    try:
        conn = tique.connect(server.url)
        cur = conn.cursor()
        cur.execute("CREATE TABLE g (id SERIAL, v INT)")
        cur.execute("INSERT INTO g (v) VALUES (1), (2), (3)")
        conn.commit()
        cur.execute("INSERT INTO g (v) VALUES (4)")  # never committed: its value must not come back either
        provisional = cur.lastrowid
        cur.execute("SELECT COUNT(*) FROM g")  # sends the row to the Cache
        conn.close()
    finally:
        server.stop()
    server = start_serve(tmp_path / "gen")
    try:
        conn = tique.connect(server.url)
        cur = conn.cursor()
        cur.execute("INSERT INTO g (v) VALUES (5)")
        after = cur.lastrowid
        conn.commit()
        cur.execute("SELECT id FROM g ORDER BY id")
        ids = [r[0] for r in cur.fetchall()]
        conn.close()
    finally:
        server.stop()
    assert ids[:3] == [1, 2, 3] and after == ids[-1] and len(ids) == 4
    assert provisional == 4 and after > provisional
