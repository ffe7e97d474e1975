"""Versions follow commit order, not transaction-id order, through every checkpoint.

A priority retry takes its id, then refreshes its snapshot: its version can be newer (later commit timestamp)
than that of a transaction with a larger id. The checkpointer must never leave the older version in the Cache
once the newer one went to Storage, or the key reads an old value from then on."""

from __future__ import annotations

from typing import Any

import pytest

import tique
from tests.conftest import ServeProcess
from tests.physical import cache, storage
from tique.checkpoint import Checkpointer
from tique.engine import open_engine
from tique.transaction import Transaction


def read(conn: tique.Connection, k: int) -> str:
    cur = conn.cursor()
    cur.execute("SELECT v FROM kv WHERE k = %s", (k,))
    value = cur.fetchone()[0]
    conn.commit()
    return value


def test_newer_version_with_smaller_id_wins_after_checkpoints(
    served: ServeProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup = tique.connect(served.url)
    setup.cursor().execute("CREATE TABLE kv (k INT PRIMARY KEY, v VARCHAR(10))")
    setup.cursor().executemany("INSERT INTO kv VALUES (%s, %s)", [(1, "init"), (2, "init")])
    setup.commit()
    setup.close()
    prio, rival, between, late, reader = (tique.connect(served.url) for _ in range(5))
    ids: dict[str, int] = {}
    attempts: list[int] = []

    original = Transaction.reserve

    def reserve(self: Transaction, hashes: Any, lease_ms: int) -> None:
        # The retry has its id already. Now a transaction with a larger id begins and stays busy, and another
        # one, larger still, commits key 1 before the retry reserves it.
        ids["prio"] = self.txid
        between.cursor().execute("SELECT v FROM kv WHERE k = 2")
        ids["between"] = between.transaction().txid
        late.cursor().execute("UPDATE kv SET v = 'late' WHERE k = 1")
        ids["late"] = late.transaction().txid
        late.commit()
        original(self, hashes, lease_ms)

    monkeypatch.setattr(Transaction, "reserve", reserve)

    def work(conn: tique.Connection) -> None:
        attempts.append(1)
        conn.cursor().execute("UPDATE kv SET v = %s WHERE k = 1", (f"prio{len(attempts)}",))
        if len(attempts) == 1:  # a rival commits key 1 first: this attempt loses certification
            rival.cursor().execute("UPDATE kv SET v = 'rival' WHERE k = 1")
            rival.commit()

    prio.run(work, retries=2, priority=True)
    assert len(attempts) == 2 and ids["prio"] < ids["between"] < ids["late"], ids
    assert read(reader, 1) == "prio2"  # committed after 'late', with a smaller id
    # A snapshot taken now pins the horizon; 'between' then commits above it: the low-water id stops there,
    # between the two versions of key 1.
    hold = tique.connect(served.url)
    assert read(hold, 2) == "init"
    hold.cursor().execute("SELECT v FROM kv WHERE k = 2")
    between.cursor().execute("UPDATE kv SET v = 'between' WHERE k = 2")
    between.commit()
    raw = open_engine(served.url).connect()
    ckpt = Checkpointer(raw)
    for _ in range(3):
        report = ckpt.run_once()
        assert not report.errors, report.errors
        assert read(reader, 1) == "prio2", report.line()
    hold.close()
    for conn in (prio, rival, between, late):
        conn.close()
    for _ in range(2):
        ckpt.run_once()
        assert read(reader, 1) == "prio2"
    assert int(raw.execute(f"SELECT COUNT(*) FROM {cache(raw, 'kv')}").scalar()) == 0
    assert [tuple(r) for r in raw.execute(f"SELECT k, v FROM {storage(raw, 'kv')} ORDER BY k").rows] == [
        (1, "prio2"),
        (2, "between"),
    ]
    reader.close()
    raw.close()
