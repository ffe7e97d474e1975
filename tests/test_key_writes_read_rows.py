"""An UPDATE of one row by its whole key, or a DELETE by whole keys, whose rows the transaction does not hold reads
them whole, cheaply (their versions ranked by the client, or their Storage rows alone when no Cache row has the
key), and computes the statement itself, holding the rows (Transaction.update, Transaction.delete). These tests
check what is sent, and that the snapshot, the transaction's own writes and first-committer-wins are as with the
engine's own read of the statement."""

from __future__ import annotations

import decimal
from collections.abc import Callable
from contextlib import closing

import pytest

import tique
from tique.checkpoint import Checkpointer
from tique.engine import open_engine

CLIENT_RANKED = "tq_cts, tq_seq FROM"  # a whole-row key read ranked in the client
WHOLE_ROW = 'SELECT "w", "k", "v", "n", "pad" FROM'  # ... or of Storage alone, with nothing to rank


def cheap_whole_row(sql: str) -> bool:
    """A whole-row key read that MonetDB does not rank: its versions, or its Storage row alone."""
    storage_alone = sql.startswith(WHOLE_ROW) and "__cache" not in sql
    return "ROW_NUMBER" not in sql and (CLIENT_RANKED in sql or storage_alone)


@pytest.fixture
def kv(embedded_url: str, unique_name: Callable[[str], str]) -> tuple[str, str]:
    name = unique_name("ur")
    conn = tique.connect(embedded_url)
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} (w INT, k INT, v DECIMAL(10,2), n INT, pad VARCHAR(20), PRIMARY KEY (w, k))")
    conn.bulk_load(name, [(1, k, k, 0, "p") for k in range(1, 21)])
    conn.close()
    return embedded_url, name


def traced(url: str) -> tuple[tique.Connection, list[str]]:
    conn = tique.connect(url, prepare=False)  # every statement sent as text: what it reads is in what is traced
    sent: list[str] = []
    conn.statement_hooks.append(lambda sql, _s, _e: sent.append(sql))
    return conn, sent


def reads(sent: list[str], name: str) -> list[str]:
    """The statements on ``name`` that read it (not the planner's statistics of its key, PointShape)."""
    return [s for s in sent if name in s and " SAMPLE " not in s]


def value(url: str, name: str, k: int) -> tuple[object, ...]:
    with closing(tique.connect(url)) as conn:  # closed: an open session pins its last snapshot
        cur = conn.cursor()
        cur.execute(f"SELECT v, n, pad FROM {name} WHERE w = 1 AND k = %s", (k,))
        row = cur.fetchone()
        conn.rollback()
    assert row is not None
    return tuple(row)


def test_one_cheap_read_then_the_row_is_held(kv: tuple[str, str]) -> None:
    url, name = kv
    conn, sent = traced(url)
    cur = conn.cursor()
    select = f"SELECT v, n, pad FROM {name} WHERE w = %s AND k = %s"
    for sql, params in [  # each statement's plan made and its result columns learned here
        (f"UPDATE {name} SET v = v + %s, n = n + 1 WHERE w = %s AND k = %s", (0, 1, 2)),
        (select, (1, 2)),
        (f"UPDATE {name} SET n = n + 1 WHERE w = %s AND k = %s", (1, 2)),
    ]:
        cur.execute(sql, params)
    conn.commit()
    cur.execute("SELECT 1")  # the begin is not the UPDATE's
    sent.clear()
    cur.execute(f"UPDATE {name} SET v = v + %s, n = n + 1 WHERE w = %s AND k = %s", (decimal.Decimal("2.5"), 1, 3))
    assert cur.rowcount == 1
    read = reads(sent, name)
    assert len(read) == 1 and cheap_whole_row(read[0]), read
    sent.clear()
    cur.execute(select, (1, 3))
    assert [tuple(r) for r in cur.fetchall()] == [(decimal.Decimal("5.50"), 1, "p")]
    cur.execute(f"UPDATE {name} SET n = n + 1 WHERE w = %s AND k = %s", (1, 3))
    assert not reads(sent, name)  # both answered from the row held
    conn.commit()
    assert value(url, name, 3) == (decimal.Decimal("5.50"), 2, "p")
    assert value(url, name, 2) == (decimal.Decimal("2.00"), 2, "p")
    conn.close()


def test_a_missing_row_updates_nothing(kv: tuple[str, str]) -> None:
    url, name = kv
    with closing(tique.connect(url)) as conn:  # closed: an open session pins its last snapshot
        cur = conn.cursor()
        cur.execute(f"UPDATE {name} SET n = n + 1 WHERE w = %s AND k = %s", (1, 99))
        assert cur.rowcount == 0
        cur.execute(f"SELECT COUNT(*) FROM {name}")
        assert cur.fetchone()[0] == 20  # type: ignore[index]
        conn.commit()


def test_the_snapshot_is_read_and_the_first_committer_wins(kv: tuple[str, str]) -> None:
    url, name = kv
    a, b = tique.connect(url), tique.connect(url)
    acur, bcur = a.cursor(), b.cursor()
    acur.execute("SELECT 1")  # a's snapshot begins before b's commit
    bcur.execute(f"UPDATE {name} SET n = n + 10 WHERE w = %s AND k = %s", (1, 4))
    b.commit()
    acur.execute(f"UPDATE {name} SET n = n + 1 WHERE w = %s AND k = %s", (1, 4))
    acur.execute(f"SELECT n FROM {name} WHERE w = 1 AND k = 4")
    assert acur.fetchone()[0] == 1  # type: ignore[index]  # its snapshot's 0, plus its own 1
    with pytest.raises(tique.errors.SerializationFailure):
        a.commit()
    assert value(url, name, 4)[1] == 10
    acur.execute(f"UPDATE {name} SET n = n + 1 WHERE w = %s AND k = %s", (1, 4))  # retried: b's commit is seen
    a.commit()
    assert value(url, name, 4)[1] == 11
    a.close()
    b.close()


def test_own_pending_writes_are_seen(kv: tuple[str, str]) -> None:
    """A row the transaction wrote, then forgot holding (DDL elsewhere in the process forgets held rows), is
    read with its pending write sent first."""
    url, name = kv
    conn = tique.connect(url)
    cur = conn.cursor()
    cur.execute(f"UPDATE {name} SET n = n + 1 WHERE w = %s AND k = %s", (1, 5))
    cur.execute(f"DELETE FROM {name} WHERE w = %s AND k = %s", (1, 6))
    conn._txn.known.clear()  # type: ignore[union-attr]
    cur.execute(f"UPDATE {name} SET n = n + 1 WHERE w = %s AND k = %s", (1, 5))
    cur.execute(f"UPDATE {name} SET n = n + 1 WHERE w = %s AND k = %s", (1, 6))
    assert cur.rowcount == 0
    conn.commit()
    assert value(url, name, 5)[1] == 2
    with closing(tique.connect(url)) as other:  # closed: an open session pins its last snapshot
        ocur = other.cursor()
        ocur.execute(f"SELECT COUNT(*) FROM {name} WHERE k = 6")
        assert ocur.fetchone()[0] == 0  # type: ignore[index]
    conn.close()


def test_keys_without_cache_rows_read_storage_alone(kv: tuple[str, str]) -> None:
    url, name = kv
    writer = tique.connect(url)
    wcur = writer.cursor()
    wcur.execute(f"UPDATE {name} SET n = 7 WHERE w = %s AND k = %s", (1, 8))
    writer.commit()
    checkpointer = Checkpointer(open_engine(url).connect())
    conn, sent = traced(url)
    cur = conn.cursor()
    try:
        checkpointer.run_once()
        cur.execute(f"UPDATE {name} SET n = n + 1 WHERE w = %s AND k = %s", (1, 10))  # planned here
        conn.commit()
        cur.execute("SELECT 1")
        sent.clear()
        forms = []
        for k in (8, 9):
            sent.clear()
            cur.execute(f"UPDATE {name} SET n = n + 1 WHERE w = %s AND k = %s", (1, k))
            forms.append(reads(sent, name))
        assert all(len(f) == 1 and cheap_whole_row(f[0]) for f in forms), forms
        assert "__cache" not in forms[1][0], forms[1]  # key 8 may stay in the set until a rebuild
        conn.commit()
        assert [value(url, name, k)[1] for k in (8, 9, 10)] == [8, 1, 1]
    finally:
        checkpointer.conn.close()
        writer.close()
        conn.close()


def test_deletes_by_key(kv: tuple[str, str]) -> None:
    url, name = kv
    conn, sent = traced(url)
    cur = conn.cursor()
    delete = f"DELETE FROM {name} WHERE w = %s AND k = %s"
    select = f"SELECT v, n, pad FROM {name} WHERE w = %s AND k = %s"
    for sql in (delete, select):  # planned here
        cur.execute(sql, (1, 20))
    conn.rollback()
    cur.execute("SELECT 1")
    sent.clear()
    cur.execute(delete, (1, 11))
    assert cur.rowcount == 1
    read = reads(sent, name)
    assert len(read) == 1 and cheap_whole_row(read[0]), read
    sent.clear()
    cur.execute(select, (1, 11))
    assert cur.fetchall() == []
    cur.execute(delete, (1, 11))
    assert cur.rowcount == 0
    cur.execute(delete, (1, 99))  # no such row: read, nothing deleted
    assert cur.rowcount == 0
    assert len(reads(sent, name)) <= 2  # the held row's key answered twice; key 99 read once (or prepared)
    cur.execute(f"DELETE FROM {name} WHERE w = %s AND k IN (%s, %s, %s)", (1, 12, 13, 99))
    assert cur.rowcount == 2
    conn.commit()
    with closing(tique.connect(url)) as other:  # closed: an open session pins its last snapshot
        ocur = other.cursor()
        ocur.execute(f"SELECT k FROM {name} WHERE k BETWEEN 10 AND 14 ORDER BY k")
        assert [r[0] for r in ocur.fetchall()] == [10, 14]
    conn.close()


def test_a_delete_loses_to_an_earlier_committer(kv: tuple[str, str]) -> None:
    url, name = kv
    a, b = tique.connect(url), tique.connect(url)
    acur, bcur = a.cursor(), b.cursor()
    acur.execute("SELECT 1")
    bcur.execute(f"UPDATE {name} SET n = n + 10 WHERE w = %s AND k = %s", (1, 15))
    b.commit()
    acur.execute(f"DELETE FROM {name} WHERE w = %s AND k = %s", (1, 15))
    assert acur.rowcount == 1  # its snapshot's row
    with pytest.raises(tique.errors.SerializationFailure):
        a.commit()
    assert value(url, name, 15)[1] == 10
    b.cursor().execute(f"DELETE FROM {name} WHERE w = %s AND k = %s", (1, 15))
    b.commit()
    acur.execute(f"DELETE FROM {name} WHERE w = %s AND k = %s", (1, 15))  # b's delete is seen: nothing to delete
    assert acur.rowcount == 0
    a.commit()
    a.close()
    b.close()
