"""The checkpointer's deletes of Storage rows by composite key. MonetDB 11.41 merges the columns of a VALUES list
whose values are the same up to order: ``(VALUES (1, 2), (2, 1))`` reads as (1, 1), (2, 2). The checkpointer
deleted moved keys by a join with such a list, so deleting keys (1, 2) and (2, 1) in one run removed rows (1, 1)
and (2, 2) of other keys and left the deleted ones: committed rows vanished and deleted ones came back. Found by
a test of group transfers (writers deleting a line and inserting another with its amount) whose sums drifted.
Here Storage must end as a model of the committed rows says, after every run, for random composite-key writes
whose keys share their values across columns."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

import tique
from tique.checkpoint import Checkpointer
from tique.database import Database
from tique.engine import open_engine


def test_the_kernel_merges_values_columns_that_are_permutations(embedded_url: str) -> None:
    """The engine fact the checkpointer works around (if a kernel upgrade fixes it, this says so)."""
    raw = Database.get(embedded_url).connect_raw()
    try:
        rows = raw.execute("SELECT * FROM (VALUES (1, 2), (2, 1)) AS v(a, b)").rows
        union = raw.execute("SELECT * FROM (SELECT 1 AS a, 2 AS b UNION ALL SELECT 2, 1) AS v").rows
    finally:
        raw.close()
    assert sorted(union) == [(1, 2), (2, 1)]
    assert sorted(rows) == [(1, 1), (2, 2)], "MonetDB reads VALUES lists exactly now: see README, engine facts"


def stored(url: str, name: str) -> dict[tuple[int, ...], int]:
    raw = Database.get(url).connect_raw()
    try:
        rows = raw.execute(f'SELECT a, b, c, v FROM "tique_data"."sys__{name}__storage"').rows
    finally:
        raw.close()
    out: dict[tuple[int, ...], int] = {}
    for a, b, c, v in rows:
        assert (a, b, c) not in out, f"key {(a, b, c)} twice in Storage"
        out[(a, b, c)] = v
    return out


def test_deleting_keys_whose_values_are_permutations_deletes_those_keys(
    embedded_url: str, unique_name: Callable[[str], str]
) -> None:
    name = unique_name("ckperm")
    conn = tique.connect(embedded_url)
    cur = conn.cursor()
    checkpointer = Checkpointer(open_engine(embedded_url).connect())
    try:
        cur.execute(f"CREATE TABLE {name} (a INT, b INT, c INT, v INT, PRIMARY KEY (a, b, c))")
        conn.commit()
        conn.bulk_load(name, [(a, b, 1, 10 * a + b) for a in (1, 2) for b in (1, 2)])
        cur.execute(f"DELETE FROM {name} WHERE a = 1 AND b = 2 AND c = 1")
        cur.execute(f"DELETE FROM {name} WHERE a = 2 AND b = 1 AND c = 1")
        conn.commit()
        checkpointer.run_once()
        assert stored(embedded_url, name) == {(1, 1, 1): 11, (2, 2, 1): 22}
        cur.execute(f"UPDATE {name} SET v = v + 100")  # both keys in Storage again: delete and insert each
        conn.commit()
        checkpointer.run_once()
        assert stored(embedded_url, name) == {(1, 1, 1): 111, (2, 2, 1): 122}
        cur.execute(f"SELECT a, b, c, v FROM {name} ORDER BY a, b")
        assert cur.fetchall() == [(1, 1, 1, 111), (2, 2, 1, 122)]
        conn.rollback()
    finally:
        checkpointer.conn.close()
        conn.close()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_storage_equals_the_committed_rows_after_every_run(
    embedded_url: str, unique_name: Callable[[str], str], seed: int
) -> None:
    """Random transactions of inserts, updates (also of key columns) and deletes over a small key domain, where
    keys often repeat each other's values in other columns; a checkpoint after each. Storage holds exactly the
    model's rows once the Cache is moved, and reads agree."""
    rng = random.Random(seed)
    name = unique_name("ckmodel")
    conn = tique.connect(embedded_url)
    cur = conn.cursor()
    checkpointer = Checkpointer(open_engine(embedded_url).connect())
    domain = range(1, 4)
    model: dict[tuple[int, int, int], int] = {}
    try:
        cur.execute(f"CREATE TABLE {name} (a INT, b INT, c INT, v INT, PRIMARY KEY (a, b, c))")
        conn.commit()
        for step in range(40):
            for _ in range(rng.randint(1, 6)):
                key = (rng.choice(domain), rng.choice(domain), rng.choice(domain))
                where = "a = %s AND b = %s AND c = %s"
                roll = rng.random()
                if key not in model:
                    model[key] = rng.randint(0, 999)
                    cur.execute(f"INSERT INTO {name} VALUES (%s, %s, %s, %s)", (*key, model[key]))
                elif roll < 0.4:
                    del model[key]
                    cur.execute(f"DELETE FROM {name} WHERE {where}", key)
                elif roll < 0.6:
                    moved = (key[1], key[0], key[2])  # the key's values swapped between columns
                    if moved not in model:
                        model[moved] = model.pop(key)
                        cur.execute(f"UPDATE {name} SET a = %s, b = %s WHERE {where}", (moved[0], moved[1], *key))
                else:
                    model[key] += 1
                    cur.execute(f"UPDATE {name} SET v = v + 1 WHERE {where}", key)
            conn.commit()
            checkpointer.run_once()
            assert stored(embedded_url, name) == model, f"step {step}"
        cur.execute(f"SELECT a, b, c, v FROM {name}")
        got: dict[Any, int] = {(a, b, c): v for a, b, c, v in cur.fetchall()}
        assert got == model
        conn.rollback()
    finally:
        checkpointer.conn.close()
        conn.close()
