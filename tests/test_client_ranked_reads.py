"""A read of whole rows by key (the read that lets a later UPDATE of them need no engine call) gets every visible
version of its keys and ranks them in the client (rewrite/point.py, newest_versions) instead of the engine's
ROW_NUMBER. Checked against a model of the committed data and the transaction's own writes over random histories:
versions in Storage and the Cache, several per key, tombstones, keys deleted and inserted again, the reader's own
flushed and unflushed writes, rollbacks, and a checkpointer moving versions between the reads."""

from __future__ import annotations

import decimal
import random
from collections.abc import Callable

import pytest

import tique
from tests.conftest import sized
from tique.checkpoint import Checkpointer
from tique.engine import open_engine

Row = tuple[int, int, str, decimal.Decimal]
VERSIONS_READ = "tq_cts, tq_seq FROM"  # the SQL of a read that leaves the ranking to the client
STORAGE_ROW_READ = 'SELECT "w", "i", "name", "amount" FROM'  # the whole row of Storage alone: nothing to rank


def read(cur: tique.Cursor, w: int, i: int) -> list[tuple[str, decimal.Decimal]]:
    # not every column: the first run reads these, and the rows whole once an UPDATE followed (Learned.whole)
    cur.execute("SELECT amount, name FROM vers WHERE w = %s AND i = %s", (w, i))
    return [tuple(r) for r in cur.fetchall()]  # type: ignore[misc]


def expected(model: dict[tuple[int, int], Row], w: int, i: int) -> list[tuple[str, decimal.Decimal]]:
    return [(model[(w, i)][3], model[(w, i)][2])] if (w, i) in model else []


@pytest.mark.parametrize("seed", range(sized(2, 12)))
def test_whole_row_reads_ranked_in_the_client_answer_as_the_model(
    connect: Callable[..., tique.Connection], url: str, unique_name: Callable[[str], str], seed: int
) -> None:
    rng = random.Random(seed)
    conn = connect()
    cur = conn.cursor()
    cur.execute("DROP TABLE IF EXISTS vers")
    cur.execute("CREATE TABLE vers (w INT, i INT, name VARCHAR(20), amount DECIMAL(8,2), PRIMARY KEY (w, i))")
    conn.commit()
    sent: list[str] = []
    conn.statement_hooks.append(lambda sql, _s, _e: sent.append(sql))
    checkpointer = Checkpointer(open_engine(url).connect())
    keys = [(w, i) for w in (1, 2) for i in range(1, 5)]
    committed: dict[tuple[int, int], Row] = {}
    try:
        for step in range(sized(50, 150)):
            model = dict(committed)
            for _ in range(rng.randint(1, 8)):
                w, i = rng.choice(keys)
                action = rng.random()
                if action < 0.3:  # read, then update what was read: the next read of the key reads it whole
                    assert read(cur, w, i) == expected(model, w, i), (step, w, i)
                    cur.execute("UPDATE vers SET amount = amount + 1 WHERE w = %s AND i = %s", (w, i))
                    if (w, i) in model:
                        old = model[(w, i)]
                        model[(w, i)] = (w, i, old[2], old[3] + 1)
                elif action < 0.55:
                    name = f"n{step}-{rng.randint(0, 99)}"
                    if (w, i) in model:
                        cur.execute("UPDATE vers SET name = %s WHERE w = %s AND i = %s", (name, w, i))
                        model[(w, i)] = (w, i, name, model[(w, i)][3])
                    else:
                        amount = decimal.Decimal(rng.randint(0, 9999)) / 100
                        cur.execute("INSERT INTO vers VALUES (%s, %s, %s, %s)", (w, i, name, amount))
                        model[(w, i)] = (w, i, name, amount)
                elif action < 0.7:
                    cur.execute("DELETE FROM vers WHERE w = %s AND i = %s", (w, i))
                    model.pop((w, i), None)
                else:
                    assert read(cur, w, i) == expected(model, w, i), (step, w, i)
            if rng.random() < 0.2:
                conn.rollback()
            else:
                conn.commit()
                committed = model
            if rng.random() < 0.3:
                checkpointer.run_once()
        conn.commit()
        for w, i in keys:  # and a fresh transaction sees the committed data
            assert read(cur, w, i) == expected(committed, w, i)
        conn.commit()
    finally:
        checkpointer.conn.close()
    assert sum(VERSIONS_READ in s for s in sent) >= 3, "the client-ranked read was not exercised"
    if url.startswith("monetdbe:"):  # and its Storage-only form, for keys with no Cache row (tique/cache_keys.py)
        assert any(s.startswith(STORAGE_ROW_READ) and "__cache" not in s for s in sent), (
            "Storage-only reads not exercised"
        )


def test_a_hot_keys_versions_come_back_as_its_newest_alone(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key updated by every transaction piles up versions in the Cache until a checkpoint (a TPC-C warehouse:
    dozens): a read of it by its whole key ranks them in the engine and gets the newest alone (ORDER BY ... LIMIT
    1), where every version came back to be decoded and ranked in Python. Reads of several keys (an IN list) still
    rank in the client."""
    conn = connect()
    cur = conn.cursor()
    t = unique_name("hot")
    cur.execute(f"CREATE TABLE {t} (w INT, i INT, name VARCHAR(20), amount DECIMAL(8,2), PRIMARY KEY (w, i))")
    cur.execute(f"INSERT INTO {t} VALUES (1, 1, 'a', 0), (1, 2, 'b', 0)")
    conn.commit()
    for n in range(40):  # no checkpointer: 31 versions of (1, 1), 11 of (1, 2)
        cur.execute(f"UPDATE {t} SET amount = amount + 1 WHERE w = %s AND i = %s", (1, 1 if n < 30 else 2))
        conn.commit()
    counts: list[int] = []
    raw = conn._raw
    execute = raw.execute

    def counted(sql: str) -> object:
        result = execute(sql)
        if VERSIONS_READ in sql and not sql.startswith("PREPARE"):  # as text (not its EXEC, once prepared)
            counts.append(len(result.rows))
        return result

    monkeypatch.setattr(raw, "execute", counted)
    for _ in range(2):
        cur.execute(f"UPDATE {t} SET name = %s WHERE w = %s AND i = %s", ("x", 1, 1))
        cur.execute(f"SELECT amount, name FROM {t} WHERE w = %s AND i = %s", (1, 1))
        assert cur.fetchall() == [(decimal.Decimal(30), "x")]
        conn.commit()
    assert counts and all(n == 1 for n in counts), counts
    counts.clear()
    cur.execute(f"UPDATE {t} SET name = %s WHERE w = %s AND i IN (%s, %s)", ("y", 1, 1, 2))
    cur.execute(f"SELECT i, amount, name FROM {t} WHERE w = 1 ORDER BY i")
    assert cur.fetchall() == [(1, decimal.Decimal(30), "y"), (2, decimal.Decimal(10), "y")]
    conn.commit()
