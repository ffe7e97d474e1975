"""A commit timestamp taken by a record statement whose engine transaction then failed (the rows-and-record
transaction rolled back after ``record_cts`` ran: a conflicting DROP, a failed log write) is never published: the
next committers wait for it, abandon it after the commit lease, and certify correctly. Of two transactions that
wrote the same row, whichever order they commit in afterwards, exactly one commits; a COMMIT stalls about one
lease, not until its publish time-out."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

import tique
from tique.errors import SerializationFailure
from tique.settings import COMMIT_LEASE_MS

Connect = Callable[..., tique.Connection]


def _take_a_timestamp_and_lose_the_record(conn: tique.Connection) -> None:
    """What a rows-and-record transaction that failed after record_cts leaves: a timestamp taken for the
    transaction, TAKEN, with no commit record in the engine."""
    txn = conn.transaction()
    raw = conn.db.connect_raw()
    try:
        raw.execute("START TRANSACTION")
        raw.execute(
            f"INSERT INTO tique.commits SELECT {txn.txid}, {txn.sts}, x.c, 0 "
            f"FROM (SELECT {conn.db.sequencer.call('record_cts', txn.txid)} AS c) AS x"  # as the driver calls it
        )
        raw.execute("ROLLBACK")
        assert raw.execute(f"SELECT COUNT(*) FROM tique.commits WHERE txid = {txn.txid}").scalar() == 0
    finally:
        raw.close()


@pytest.mark.parametrize("first", ["loser of the record", "other"])
def test_exactly_one_of_two_writers_commits_after_a_lost_record(
    embedded_url: str, unique_name: Callable[[str], str], first: str
) -> None:
    table = unique_name("lostrec")
    a, b = tique.connect(embedded_url), tique.connect(embedded_url)
    try:
        cur = a.cursor()
        cur.execute(f"CREATE TABLE {table} (k INT PRIMARY KEY, v INT)")
        cur.execute(f"INSERT INTO {table} VALUES (1, 0)")
        a.commit()
        a.cursor().execute(f"UPDATE {table} SET v = 1 WHERE k = 1")
        b.cursor().execute(f"UPDATE {table} SET v = 2 WHERE k = 1")
        _take_a_timestamp_and_lose_the_record(a)
        order = [a, b] if first == "loser of the record" else [b, a]
        outcomes: list[str] = []
        started = time.monotonic()
        for conn in order:
            try:
                conn.commit()
                outcomes.append("committed")
            except SerializationFailure:
                outcomes.append("aborted")
        elapsed = time.monotonic() - started
        assert outcomes == ["committed", "aborted"], "the first to commit wins, the other sees its write"
        check = tique.connect(embedded_url)
        c = check.cursor()
        c.execute(f"SELECT v FROM {table} WHERE k = 1")
        assert c.fetchone() == ((1,) if order[0] is a else (2,))
        check.close()
        assert elapsed < COMMIT_LEASE_MS / 1000 + 3, f"stalled {elapsed:.1f} s for a lost timestamp"
        a.cursor().execute(f"UPDATE {table} SET v = 3 WHERE k = 1")  # and commits go on without stalling
        started = time.monotonic()
        a.commit()
        assert time.monotonic() - started < 0.5
    finally:
        a.close()
        b.close()
