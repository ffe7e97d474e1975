"""The begin and the finish as direct C calls (tique/engine/local_calls.py), for the process that loaded the
module: the same values, the same errors and the same waits as the statements they replace."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

import tique
from tique.database import Database
from tique.engine.base import Engine, RawConnection
from tique.engine.local_calls import LocalCalls
from tique.errors import CommitStuck, DatabaseError, Timeout
from tique.sequencer import DECIDING, CSequencer


@pytest.fixture
def local(embedded_url: str) -> LocalCalls:
    calls = Database.get(embedded_url).sequencer.local
    assert calls is not None, "an embedded database opened by tique's owner makes the local calls"
    return calls


@pytest.fixture
def raw(embedded_engine: Engine) -> Iterator[RawConnection]:
    conn = embedded_engine.connect()
    yield conn
    conn.close()


def _begin_statement(raw: RawConnection, tables: list[int]) -> tuple[int, int, int, int, list[int]]:
    marks = "".join(f", tique.last_write(x.t, {t})" for t in tables)
    row = raw.execute(
        f"SELECT x.t, tique.snapshot_of(x.t), tique.stuck(), tique.catalog_version(x.t){marks} "
        "FROM (SELECT tique.begin_txn_as(0, 60000, 0) AS t) AS x"
    ).rows[0]
    return int(row[0]), int(row[1]), int(row[2]), int(row[3]), [int(m) for m in row[4:]]


def _end(raw: RawConnection, *txids: int) -> None:
    for txid in txids:
        raw.execute(f"SELECT tique.end_txn_as({txid}, 0)")


def _pins(raw: RawConnection) -> int:
    return int(raw.execute("SELECT tique.pins()").scalar())


def test_the_local_begin_reads_what_the_statement_reads(
    local: LocalCalls, raw: RawConnection, embedded_url: str, unique_name: Callable[[str], str]
) -> None:
    name = unique_name("marked")
    conn = tique.connect(embedded_url)
    try:
        conn.cursor().execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT)")
        conn.commit()
        table = int(raw.execute(f"SELECT table_id FROM tique.tables WHERE name = '{name}'").scalar())
        marks = []
        for round_ in range(3):
            by_statement = _begin_statement(raw, [table, 999_999_999])
            by_call = local.begin(0, 60_000, [table, 999_999_999])
            assert by_call[0] == by_statement[0] + 1  # the next transaction id
            assert by_call[1:] == by_statement[1:], round_  # snapshot, stuck, catalog version, both marks
            _end(raw, by_statement[0], by_call[0])
            marks.append(by_call[4][0])
            conn.cursor().execute(f"INSERT INTO {name} VALUES ({round_}, 0)")
            conn.commit()  # the table's mark moves to this commit, for both forms
        assert marks == sorted(set(marks))
    finally:
        conn.close()


def test_the_local_begin_ends_the_previous_pin(local: LocalCalls, raw: RawConnection) -> None:
    before = _pins(raw)
    first = local.begin(0, 60_000, [])[0]
    second = 0
    try:
        assert _pins(raw) == before + 1
        second = local.begin(first, 60_000, [])[0]  # ends first, as begin_txn(prev) does
        assert _pins(raw) == before + 1 and second > first
    finally:
        _end(raw, first, second)
    assert _pins(raw) == before


def test_the_local_finish_fails_as_the_statement_fails(local: LocalCalls, raw: RawConnection) -> None:
    never = int(raw.execute("SELECT tique.last_cts()").scalar()) + 1000
    with pytest.raises(DatabaseError) as by_statement:
        raw.execute(f"SELECT tique.advance({never}, 0)")
    with pytest.raises(DatabaseError) as by_call:
        local.finish(never, 0, 0)
    assert type(by_call.value) is type(by_statement.value)
    assert by_call.value.sqlstate == by_statement.value.sqlstate
    assert str(by_call.value) == str(by_statement.value)


def test_the_local_finish_waits_and_reports_a_stuck_predecessor(local: LocalCalls, raw: RawConnection) -> None:
    """A predecessor stuck deciding: the wait returns early with CommitStuck (which the driver settles), as the
    statement's does; a predecessor that never arrives: a time-out after the wait, naming it."""
    seq = CSequencer()
    old = seq.set_lease(raw, 100)
    try:
        deciding, waiter = seq.next_cts(raw), seq.next_cts(raw)
        seq.publish(raw, deciding, 1000)
        seq.decide(raw, deciding)
        time.sleep(0.15)
        for finish in (
            lambda: local.finish(waiter, 2000, 0),
            lambda: raw.execute(f"SELECT tique.advance({waiter}, 2000)"),
        ):
            with pytest.raises(CommitStuck, match=f"commit {deciding}"):
                finish()
        assert seq.state(raw, deciding) == DECIDING
        seq.advance(raw, deciding, 1000)
        assert local.finish(waiter, 1000, 0) >= waiter
    finally:
        seq.set_lease(raw, old)
    missing, late = seq.next_cts(raw), seq.next_cts(raw)
    t0 = time.monotonic()
    with pytest.raises(Timeout, match=f"commit {missing}"):
        local.finish(late, 300, 0)
    assert time.monotonic() - t0 >= 0.25
    seq.advance(raw, missing, 1000)
    assert seq.sts(raw) >= late


def test_the_local_finish_waits_without_holding_the_gil(local: LocalCalls, raw: RawConnection) -> None:
    """A commit waiting to become visible blocks in C; the other threads of the process go on meanwhile."""
    seq = CSequencer()
    first, second = seq.next_cts(raw), seq.next_cts(raw)
    returned: list[int] = []
    waiter = threading.Thread(target=lambda: returned.append(local.finish(second, 5000, 0)))
    waiter.start()
    counted = 0
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:
        counted += 1
    assert waiter.is_alive() and counted > 1000
    seq.advance(raw, first, 1000)
    waiter.join(5)
    assert returned and returned[0] >= second


def test_a_time_longer_than_an_int_waits_instead_of_failing(local: LocalCalls, raw: RawConnection) -> None:
    seq = CSequencer()
    txid = local.begin(0, 2**40, [])[0]  # a pin for about 24 days, ended below
    try:
        c = seq.next_cts(raw)
        assert local.finish(c, 2**40, txid) >= c
    finally:
        _end(raw, txid)


def test_transactions_run_alike_with_and_without_local_calls(
    embedded_url: str, unique_name: Callable[[str], str]
) -> None:
    """Two sessions, each reading and updating a row the other updates, both ways: first committer wins, the
    loser's retry sees the winner's value, and the sum is the count of committed increments."""
    db = Database.get(embedded_url)
    calls = db.sequencer.local
    name = unique_name("alike")
    setup = tique.connect(embedded_url)  # (every connection is closed: an open one keeps its last snapshot pinned)
    setup.cursor().execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT)")
    setup.cursor().execute(f"INSERT INTO {name} VALUES (1, 0)")
    setup.commit()
    setup.close()
    try:
        for use_local in (True, False, True):
            db.sequencer.local = calls if use_local else None
            a, b = tique.connect(embedded_url), tique.connect(embedded_url)
            try:
                a.cursor().execute(f"SELECT v FROM {name} WHERE k = 1")
                b.cursor().execute(f"SELECT v FROM {name} WHERE k = 1")
                a.cursor().execute(f"UPDATE {name} SET v = v + 1 WHERE k = 1")
                b.cursor().execute(f"UPDATE {name} SET v = v + 1 WHERE k = 1")
                a.commit()
                with pytest.raises(tique.SerializationFailure):
                    b.commit()
                cur = b.cursor()
                cur.execute(f"UPDATE {name} SET v = v + 1 WHERE k = 1")
                b.commit()
            finally:
                a.close()
                b.close()
    finally:
        db.sequencer.local = calls
    check = tique.connect(embedded_url)
    try:
        cur = check.cursor()
        cur.execute(f"SELECT v FROM {name} WHERE k = 1")
        assert cur.fetchall() == [(6,)]
    finally:
        check.close()


def test_times_a_c_int_cannot_hold_are_refused_at_connect(embedded_url: str) -> None:
    """The module takes its times as INT: a longer setting is a clear error at connect, not a later failure of
    one statement (a renew) or a silent cut."""
    for setting in ("snapshot_lease_ms", "advance_timeout_ms", "publish_timeout_ms", "lease_ms"):
        with pytest.raises(tique.InterfaceError, match=setting):
            tique.connect(embedded_url, **{setting: 2**31})
