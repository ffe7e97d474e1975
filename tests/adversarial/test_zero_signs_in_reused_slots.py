"""Guarantee: a REAL or DOUBLE zero keeps its sign when MonetDB writes it into a slot a deleted or rolled-back
row left.

MonetDB 11.41 reuses such slots for new rows, and writes a value there only if it compares unequal to the slot's
old one: -0.0 equals 0.0, so a zero landing on a zero of the other sign keeps the old sign. tique deletes rows as
a matter of course (the checkpointer's Cache clean and Storage key deletes), so an UPDATE of another column of two
checkpointed rows, (0, 0.0) and (1, -0.0), swapped their zeros in the Cache, then in Storage, and the checkpointer
kept finding its copy read back otherwise and never cleaned the table (found by a review's SI model run). A flush
and a Storage write that hold a zero now read the zeros back and set a wrong sign again in place.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import tique
from tique.catalog import TableInfo
from tique.checkpoint import Checkpointer
from tique.engine import open_engine
from tique.engine.base import RawConnection


def _sign(value: float) -> str:
    return "-" if math.copysign(1.0, value) < 0 else "+"


def _physical(conn: tique.Connection, table: str) -> TableInfo:
    info = conn.db.catalog.get(conn.db.default_schema, table)
    assert info is not None
    return info


@pytest.fixture
def engine_side(url: str) -> Iterator[tuple[RawConnection, Checkpointer]]:
    """A raw session on the test's database (to look at Storage and Cache as stored) and a checkpointer on it."""
    raw = open_engine(url).connect()
    try:
        yield raw, Checkpointer(raw)
    finally:
        raw.close()


@pytest.mark.parametrize("kind", ["DOUBLE", "REAL"])
def test_an_update_of_another_column_keeps_each_rows_zero(
    engine_side: tuple[RawConnection, Checkpointer],
    connect: Callable[..., tique.Connection],
    unique_name: Callable[[str], str],
    kind: str,
) -> None:
    conn = connect()
    cur = conn.cursor()
    t = unique_name("zr")
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT, f {kind})")
    want = {0: 0.0, 1: -0.0, 2: -0.0, 3: 0.0}
    for k, f in want.items():
        cur.execute(f"INSERT INTO {t} VALUES (%s, 0, %s)", (k, f))
    conn.commit()
    raw, checkpointer = engine_side
    for round_ in range(3):
        checkpointer.run_once()  # the rows to Storage, their Cache slots deleted
        for k in (1, 0, 3, 2):  # each new version lands in a slot a row of the other sign left
            cur.execute(f"UPDATE {t} SET v = v + 1 WHERE k = {k}")  # as text: parameters' PREPAREs pass time
        conn.commit()
        got = {k: _sign(f) for k, _, f in conn.execute(f"SELECT k, v, f FROM {t}").fetchall()}
        assert got == {k: _sign(f) for k, f in want.items()}, f"round {round_}"
        cache = raw.execute(f"SELECT k, CAST(f AS CLOB) FROM {_physical(conn, t).cache} WHERE tq_deleted = FALSE")
        assert {int(k): text.startswith("-") for k, text in cache.rows} == {k: f == "-" for k, f in got.items()}
    report = checkpointer.run_once()
    assert not report.errors, report.errors  # Storage read back as the Cache holds it: the Cache is cleaned
    stored = raw.execute(f"SELECT k, CAST(f AS CLOB) FROM {_physical(conn, t).storage} ORDER BY k").rows
    assert [(int(k), text.startswith("-")) for k, text in stored] == [(k, f < 0 or _sign(f) == "-")
                                                                     for k, f in want.items()]  # fmt: skip
    assert raw.execute(f"SELECT COUNT(*) FROM {_physical(conn, t).cache}").scalar() == 0


def test_a_zero_on_a_slot_a_rolled_back_engine_transaction_left(
    url: str, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    """A flush that failed (a full disk, a lost connection, an interrupt) leaves its rows' slots to the next."""
    conn = connect()
    cur = conn.cursor()
    t = unique_name("zb")
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, f DOUBLE, g REAL)")
    conn.commit()
    info = _physical(conn, t)
    raw = open_engine(url).connect()
    try:
        names = ", ".join(info.stored_names)
        for zero in ("-0.0e0", "0.0e0"):
            raw.execute("SET optimizer = 'minimal_fast'")  # keeps the zero constants' signs
            raw.execute("START TRANSACTION")
            raw.execute(
                f"INSERT INTO {info.cache} ({names}, tq_txid, tq_seq, tq_deleted) VALUES "
                f"(100, {zero}, {zero}, -5, 1, FALSE)"
            )
            raw.execute("ROLLBACK")
            raw.execute(f"SELECT COUNT(*) FROM {info.cache}")
            value = "0.0e0" if zero.startswith("-") else "-0.0e0"  # the other sign, into the slot left
            cur.execute(f"INSERT INTO {t} VALUES ({len(zero)}, {value}, {value})")
            conn.commit()
        got = conn.execute(f"SELECT k, f, g FROM {t} ORDER BY k").fetchall()
        assert [(k, _sign(f), _sign(g)) for k, f, g in got] == [(5, "-", "-"), (6, "+", "+")]
    finally:
        raw.close()


def test_random_zeros_through_updates_and_checkpoints(
    engine_side: tuple[RawConnection, Checkpointer],
    connect: Callable[..., tique.Connection],
    unique_name: Callable[[str], str],
) -> None:
    rng = random.Random(31)
    conn = connect()
    cur = conn.cursor()
    t = unique_name("zm")
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT, f DOUBLE, g REAL)")
    model = {k: (0, rng.choice((0.0, -0.0)), rng.choice((0.0, -0.0, 1.5))) for k in range(12)}
    for k, row in model.items():
        cur.execute(f"INSERT INTO {t} VALUES (%s, %s, %s, %s)", (k, *row))
    conn.commit()
    _raw, checkpointer = engine_side
    for _ in range(8):
        checkpointer.run_once()
        for k in rng.sample(sorted(model), 6):
            v, f, g = model[k]
            if rng.random() < 0.5:  # another column: the zeros are copied into the new version
                model[k] = (v + 1, f, g)
                cur.execute(f"UPDATE {t} SET v = v + 1 WHERE k = {k}")
            else:
                model[k] = (v, rng.choice((0.0, -0.0)), rng.choice((0.0, -0.0)))
                cur.execute(f"UPDATE {t} SET f = %s, g = %s WHERE k = %s", (*model[k][1:], k))
        conn.commit()
        got = {k: (v, _sign(f), _sign(g)) for k, v, f, g in conn.execute(f"SELECT * FROM {t}").fetchall()}
        assert got == {k: (v, _sign(f), _sign(g)) for k, (v, f, g) in model.items()}
    assert not checkpointer.run_once().errors


def test_the_checkpointer_writes_a_changed_zero_into_storage(
    engine_side: tuple[RawConnection, Checkpointer],
    connect: Callable[..., tique.Connection],
    unique_name: Callable[[str], str],
) -> None:
    """A key whose zero changes sign: its Storage row is deleted and written again into the slot it left, which
    kept the old sign; the read-back found the copy wrong every run and the Cache was never cleaned."""
    conn = connect()
    cur = conn.cursor()
    t = unique_name("zc")
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT, f DOUBLE)")
    cur.execute(f"INSERT INTO {t} VALUES (0, 0, 0.0e0), (1, 0, 0.0e0)")
    conn.commit()
    raw, checkpointer = engine_side
    checkpointer.run_once()
    want = {0: "0", 1: "0"}
    for round_ in range(6):
        k = round_ % 2
        want[k] = "-0" if want[k] == "0" else "0"
        cur.execute(f"UPDATE {t} SET f = {want[k]}.0e0 WHERE k = {k}")
        conn.commit()
        report = checkpointer.run_once()
        assert not report.errors, (round_, report.errors)
        stored = raw.execute(f"SELECT k, CAST(f AS CLOB) FROM {_physical(conn, t).storage}").rows
        assert {int(key): text for key, text in stored} == want, round_


def test_a_zero_whose_sign_cannot_be_kept_fails_commit_and_settles_its_record(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check runs after COMMIT's record went with the rows: failing, it settles the record as aborted at once
    (a later committer does not wait for its lease) and nothing of the transaction is visible."""
    from tique import transaction

    conn, other = connect(), connect()
    cur = conn.cursor()
    t = unique_name("zf")
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, f DOUBLE)")
    conn.commit()
    # as if every send landed on a zero of the other sign
    monkeypatch.setattr(transaction, "zeros_wrong", lambda *_: "SELECT 1")
    monkeypatch.setattr(
        transaction, "zeros_wrong_by_row", lambda _t, _w, rows: "SELECT " + ", ".join("1" for _ in rows)
    )
    cur.execute(f"INSERT INTO {t} VALUES (1, 0.0e0)")
    assert conn._txn is not None
    txid = conn._txn.txid
    with pytest.raises(tique.OperationalError, match="zero"):
        conn.commit()
    conn.rollback()
    settled = other.execute(f"SELECT ok FROM tique.outcomes WHERE txid = {txid}").fetchall()
    assert settled == [(False,)]  # its record has its outcome: nobody waits for the lease
    other.rollback()
    monkeypatch.undo()
    other.execute(f"INSERT INTO {t} VALUES (2, 1.5e0)")
    other.commit()  # not held behind an unsettled record
    assert other.execute(f"SELECT k FROM {t}").fetchall() == [(2,)]
    assert conn.execute(f"SELECT k FROM {t}").fetchall() == [(2,)]


@pytest.mark.parametrize("keyed", [True, False], ids=["primary key", "row ids"])
def test_a_bulk_load_into_slots_deleted_rows_left(
    engine_side: tuple[RawConnection, Checkpointer],
    connect: Callable[..., tique.Connection],
    unique_name: Callable[[str], str],
    keyed: bool,
) -> None:
    conn = connect()
    cur = conn.cursor()
    t = unique_name("zl")
    cur.execute(f"CREATE TABLE {t} (k INT{' PRIMARY KEY' if keyed else ''}, f DOUBLE)")
    cur.execute(f"INSERT INTO {t} VALUES (1, -0.0e0), (2, -0.0e0), (3, 0.0e0)")
    conn.commit()
    raw, checkpointer = engine_side
    checkpointer.run_once()
    cur.execute(f"DELETE FROM {t}")
    conn.commit()
    checkpointer.run_once()  # their Storage rows deleted: three slots, two -0.0, one 0.0
    raw.execute(f"SELECT COUNT(*) FROM {_physical(conn, t).storage}")
    conn.bulk_load(t, [(11, 0.0), (12, 0.0), (13, -0.0)])
    got = conn.execute(f"SELECT k, f FROM {t} ORDER BY k").fetchall()
    assert [(k, _sign(f)) for k, f in got] == [(11, "+"), (12, "+"), (13, "-")]


def test_a_large_flush_of_both_zeros_commits(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    """A column holding both signs needs a condition per row to check: put in one statement, 7,000 of them ran
    MonetDB out of stack ('Query too complex'), and the transaction could never commit (found by a review)."""
    conn = connect()
    cur = conn.cursor()
    t = unique_name("zg")
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT, f DOUBLE)")
    conn.commit()
    conn.bulk_load(t, [(i, 0, -0.0 if i % 2 else 0.0) for i in range(16000)])
    cur.execute(f"UPDATE {t} SET v = v + 1")
    conn.commit()
    rows = conn.execute(f"SELECT k, v, f FROM {t} WHERE k < 4 OR k > 15995 ORDER BY k").fetchall()
    assert [(k, v, _sign(f)) for k, v, f in rows] == [
        (k, 1, "-" if k % 2 else "+") for k in (0, 1, 2, 3, 15996, 15997, 15998, 15999)
    ]


def _storage_slots_of_sign(conn: tique.Connection, checkpointer: Checkpointer, t: str, zero: float) -> None:
    """Ten checkpointed rows holding ``zero`` in every float column, deleted and checkpointed again: Storage keeps
    their slots, each holding that zero, for the next rows the engine appends."""
    cur = conn.cursor()
    for k in range(10):
        cur.execute(f"INSERT INTO {t} VALUES (%s, %s, %s)", (k, zero, zero))
    conn.commit()
    checkpointer.run_once()
    cur.execute(f"DELETE FROM {t} WHERE k < 10")
    conn.commit()
    checkpointer.run_once()
    conn.execute(f"SELECT COUNT(*) FROM {t}").fetchall()  # a later engine transaction: the slots are free
    conn.rollback()


@pytest.mark.parametrize("key", ["PRIMARY KEY", ""], ids=["keyed", "row_ids"])
@pytest.mark.parametrize("how", ["rows", "rows_by_one", "csv"])
@pytest.mark.parametrize("old", [-0.0, 0.0], ids=["onto_negative", "onto_positive"])
def test_a_bulk_load_keeps_its_zeros_in_slots_deleted_rows_left(
    engine_side: tuple[RawConnection, Checkpointer],
    connect: Callable[..., tique.Connection],
    unique_name: Callable[[str], str],
    tmp_path: Path,
    key: str,
    how: str,
    old: float,
) -> None:
    """A load's rows land in Storage's free slots. One row appended alone there (the last of a load whose size
    is one more than a multiple of its batch, or a load of one row) kept the slot's zero: a loaded 0.0 read back
    as -0.0, for good (measured on MonetDB 11.41)."""
    conn = connect()
    t = unique_name("zl")
    conn.execute(f"CREATE TABLE {t} (k INT {key}, f DOUBLE, g REAL)")
    conn.commit()
    raw, checkpointer = engine_side
    _storage_slots_of_sign(conn, checkpointer, t, old)
    new = 0.0 if math.copysign(1.0, old) < 0 else -0.0
    loaded = [(100, new, new), (101, 1.5, new), (102, new, -2.5)]
    if how == "csv":
        path = tmp_path / "zeros.csv"
        path.write_text("".join(f"{k},{f!r},{g!r}\n" for k, f, g in loaded[:1]))  # one row: appended alone
        assert conn.bulk_load_csv(t, path) == 1
        loaded = [(100, new, 0.0)]  # MonetDB reads no sign into a REAL from text (README), and tique agrees
    else:
        assert conn.bulk_load(t, loaded, batch=1 if how == "rows_by_one" else 2) == 3
    got = conn.execute(f"SELECT k, f, g FROM {t} ORDER BY k").fetchall()
    conn.rollback()
    assert [(k, _sign(f), _sign(g)) for k, f, g in got] == [(k, _sign(f), _sign(g)) for k, f, g in loaded]
    report = checkpointer.run_once()
    assert not report.errors, report.errors
    stored = raw.execute(f"SELECT k, CAST(f AS CLOB), CAST(g AS CLOB) FROM {_physical(conn, t).storage}").rows
    assert sorted((int(k), f.startswith("-"), g.startswith("-")) for k, f, g in stored) == [
        (k, _sign(f) == "-", _sign(g) == "-") for k, f, g in loaded
    ]


def test_zeros_copied_writes_again_the_zeros_an_append_kept_from_the_slot(
    url: str, unique_name: Callable[[str], str]
) -> None:
    """The load's check itself, on rows made wrong as MonetDB makes them: one row appended alone onto a slot whose
    zero has the other sign. Zeros that came out right, other values (1.0 too: the fix passes through it) and
    rows not from the source stay as they are, and the fix is in place before the transaction commits."""
    from tique.zero_signs import zeros_copied

    raw = open_engine(url).connect()
    t, source = unique_name("zq"), unique_name("zqs")
    try:
        raw.execute("SET optimizer = 'minimal_fast'")  # keeps the zero constants' signs
        raw.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, f DOUBLE, g REAL)")
        raw.execute(f"INSERT INTO {t} VALUES " + ", ".join(f"({k}, -0.0e0, 0.0e0)" for k in range(8)))
        raw.execute(f"DELETE FROM {t} WHERE k < 6")
        raw.execute(f"SELECT COUNT(*) FROM {t}")  # a later engine transaction: the slots are free
        raw.execute(f"CREATE TABLE {source} (k INT, f DOUBLE, g REAL)")
        want = {10: ("0", "-0"), 11: ("1", "-0"), 12: ("0", "2.5"), 13: ("-0", "0")}
        raw.execute("START TRANSACTION")
        for k, (f, g) in want.items():  # one row a statement: each lands on a slot (-0.0, 0.0)
            raw.execute(f"INSERT INTO {t} VALUES ({k}, {f}.0e0, {g}e0)")
            raw.execute(f"INSERT INTO {source} VALUES ({k}, {f}.0e0, {g}e0)")
        read = f"SELECT k, CAST(f AS CLOB), CAST(g AS CLOB) FROM {t} ORDER BY k"
        landed = {int(k): (f, g) for k, f, g in raw.execute(read).rows if int(k) >= 10}
        assert landed != want  # the engine kept some slots' zeros (else this test tests nothing)
        assert zeros_copied(raw, t, source, ["k"], ["f", "g"])
        assert not zeros_copied(raw, t, source, ["k"], ["f", "g"])
        raw.execute("COMMIT")
        got = {int(k): (f, g) for k, f, g in raw.execute(read).rows}
        assert got == {6: ("-0", "0"), 7: ("-0", "0"), **want}
    finally:
        raw.close()
