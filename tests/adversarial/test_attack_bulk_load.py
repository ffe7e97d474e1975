"""Attack: bulk_load / bulk_load_csv refusing keys that have Cache versions (tique/bulk_load.py, commit 220a9a5).

A load writes Storage directly, outside the commit protocol; a key whose newest version is in the Cache (written
since the last checkpoint) would hide the loaded row, so such a load must load nothing. When the table's Cache
holds live rows the load is staged in a LOCAL TEMPORARY table, checked by a join with the Cache and moved with
INSERT ... SELECT, all in one engine transaction. Attacked here, against the real kernel (embedded and over MAPI):

- keys compared as the engine compares them (CHAR/VARCHAR, DECIMAL scales, DOUBLE/REAL zeros, dates and times,
  BIGINT/HUGEINT extremes, BLOB, composite keys), quoted mixed-case names, renamed tables and columns, CSV files;
- what the staging path writes (every value type, -0.0 in non-key columns), SERIAL counters after it, tables
  without a primary key;
- the staging path's state: failed loads then successful ones, two loads at once, aborted and rolled-back
  transactions' Cache rows, a checkpointer run;
- writers that race the load: rows still buffered in a client, a commit between the check and the load's COMMIT;

Found here and fixed: a key buffered in another transaction's client, or committed while the load ran, hid the
loaded row for good (the load now runs as a committed catalog change of its table, so such a writer fails its
certification, and its check runs after every earlier commit is published); a load by a connection whose own
transaction wrote the key (now refused); a rolled-back transaction's Cache rows refused their keys even after a
checkpoint (its pin now ends at the rollback); a CSV duplicate named tique's Storage; refused TIMESTAMP(6) keys
were named at millisecond precision.
- a SIGKILL after each engine statement of a staged load (rows and CSV), then a restart on the same directory
  (the kill runs in a child process: this file run as a module, as in test_attack_ddl_kills.py).
"""

from __future__ import annotations

import datetime
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import tique
from tests.committed import rows, run
from tests.conftest import ROOT, thinned
from tique import IntegrityError
from tique.checkpoint.algorithm import Checkpointer
from tique.connection import Connection

Connect = Callable[..., Connection]
Names = Callable[[str], str]


def checkpoint(conn: Connection) -> list[str]:
    checkpointer = Checkpointer(conn.db.connect_raw())
    try:
        return list(checkpointer.run_once().errors)
    finally:
        checkpointer.conn.close()


def sign(x: float) -> float:
    return math.copysign(1.0, x)


# ---- keys compared as the engine compares them ---------------------------------------------------------------

# (column type, the key a transaction committed, loaded keys the engine finds equal, loaded keys it finds different)
TYPED_KEYS: list[tuple[str, Any, list[Any], list[Any]]] = [
    ("CHAR(3)", "ab", ["ab"], ["AB", "ab "]),
    ("VARCHAR(5)", "ab", ["ab"], ["ab ", "AB", "aB"]),
    ("DECIMAL(5,2)", Decimal("1.5"), [Decimal("1.50"), 1.5, Decimal("1.499999")], [Decimal("1.51")]),
    ("DOUBLE", 0.0, [-0.0, 0.0], [5e-324]),
    ("DOUBLE", -0.0, [0.0], []),
    ("REAL", 0.1, [0.1, 0.10000000149011612], [0.2]),
    ("DATE", datetime.date(2020, 1, 2), [datetime.datetime(2020, 1, 2, 5, 0)], [datetime.date(2020, 1, 3)]),
    (
        "TIMESTAMP(6)",
        datetime.datetime(2020, 1, 2, 3, 4, 5, 123456),
        [datetime.datetime(2020, 1, 2, 3, 4, 5, 123456)],
        [datetime.datetime(2020, 1, 2, 3, 4, 5, 123457)],
    ),
    (
        "TIMESTAMP(3)",
        datetime.datetime(2020, 1, 2, 3, 4, 5, 123000),
        [datetime.datetime(2020, 1, 2, 3, 4, 5, 123400)],
        [datetime.datetime(2020, 1, 2, 3, 4, 5, 124000)],
    ),
    ("TIME(6)", datetime.time(3, 4, 5, 123456), [datetime.time(3, 4, 5, 123456)], [datetime.time(3, 4, 5, 123455)]),
    ("BIGINT", 2**63 - 1, [2**63 - 1], [2**63 - 2]),
    ("BIGINT", -(2**63) + 1, [-(2**63) + 1], [-(2**63) + 2]),
    ("HUGEINT", 2**100, [2**100], [2**100 + 1]),
    ("BOOLEAN", True, [True, 1], [False]),
    ("BLOB", b"\x00\x01", [b"\x00\x01"], [b"\x00\x01\x00", b"\x00"]),
    ("CLOB", "é'x", ["é'x"], ["é'x "]),
]


def test_typed_keys_are_refused_exactly_when_the_engine_finds_them_equal(connect: Connect, unique_name: Names) -> None:
    """Each key a transaction committed is refused in every form the engine stores as the same key, and a key
    the engine finds different loads beside it (and both are read)."""
    conn = connect()
    for sql_type, committed, equal, different in TYPED_KEYS:
        name = unique_name("blk")
        run(conn, f"CREATE TABLE {name} (k {sql_type} PRIMARY KEY, v INT)")
        run(conn, f"INSERT INTO {name} VALUES (%s, 0)", (committed,))
        for i, key in enumerate(equal):
            with pytest.raises(IntegrityError, match="loaded nothing"):
                conn.bulk_load(name, [(key, 100 + i)])
        loaded = [(key, 200 + i) for i, key in enumerate(different)]
        assert conn.bulk_load(name, loaded) == len(loaded), sql_type
        assert sorted(v for (v,) in rows(conn, f"SELECT v FROM {name}")) == [0] + [v for _, v in loaded], sql_type


def test_composite_key_of_mixed_types_in_quoted_mixed_case_names(connect: Connect, unique_name: Names) -> None:
    name = unique_name("Blk_Mixed")
    conn = connect()
    run(
        conn,
        f'CREATE TABLE "{name}" ("Day" DATE, "Amount" DECIMAL(6,2), "Who Name" VARCHAR(9), v INT, '
        'PRIMARY KEY ("Day", "Amount", "Who Name"))',
    )
    day = datetime.date(2021, 5, 6)
    run(conn, f'INSERT INTO "{name}" VALUES (%s, %s, %s, 1)', (day, Decimal("2.5"), "x y"))
    with pytest.raises(IntegrityError, match=r"loaded nothing.*Who Name='x y'"):
        conn.bulk_load(name, [(day, Decimal("2.50"), "x y", 2)])
    assert conn.bulk_load(name, [(day, Decimal("2.5"), "X y", 3), (day, Decimal("2.51"), "x y", 4)]) == 2
    assert rows(conn, f'SELECT v FROM "{name}" ORDER BY v') == [(1,), (3,), (4,)]


def test_renamed_table_and_columns_and_an_added_column(connect: Connect, unique_name: Names) -> None:
    """After RENAME COLUMN, RENAME TO (the Storage keeps its old name) and ADD COLUMN, the staged check and move
    use the catalog's current shape; a new table of the old name gets a Storage name of its own."""
    old, new = unique_name("blr"), unique_name("blr2")
    conn = connect()
    run(conn, f"CREATE TABLE {old} (k INT PRIMARY KEY, v INT)")
    run(conn, f"INSERT INTO {old} VALUES (1, 1)")
    run(conn, f"ALTER TABLE {old} RENAME COLUMN v TO w")
    run(conn, f"ALTER TABLE {old} RENAME TO {new}")
    run(conn, f"ALTER TABLE {new} ADD COLUMN x VARCHAR(3) DEFAULT 'd'")
    with pytest.raises(IntegrityError, match=rf"'{new}' was refused and loaded nothing.*\(k=1\)"):
        conn.bulk_load(new, [(2, 2, "a"), (1, 9, "b")])
    assert conn.bulk_load(new, [(2, 2, "a")]) == 1
    with pytest.raises(IntegrityError, match=rf"'{new}' was refused and loaded nothing") as refused:
        conn.bulk_load(new, [(2, 2, "a")])  # a Storage duplicate: the engine names the old Storage
    assert not re.search(r"__storage|tique_data", str(refused.value)), refused.value
    run(conn, f"CREATE TABLE {old} (k INT PRIMARY KEY, v INT)")  # its Storage: "<base>__<id>__storage"
    run(conn, f"INSERT INTO {old} VALUES (1, 1)")
    with pytest.raises(IntegrityError, match=rf"'{old}' was refused and loaded nothing.*\(k=1\)"):
        conn.bulk_load(old, [(1, 5)])
    assert conn.bulk_load(old, [(2, 5)]) == 1
    with pytest.raises(IntegrityError, match="loaded nothing") as refused:
        conn.bulk_load(old, [(2, 5)])
    assert not re.search(r"__storage|tique_data", str(refused.value)), refused.value
    assert rows(conn, f"SELECT * FROM {new} ORDER BY k") == [(1, 1, "d"), (2, 2, "a")]
    assert rows(conn, f"SELECT * FROM {old} ORDER BY k") == [(1, 1), (2, 5)]


def test_csv_keys_the_engine_reads_are_compared_as_stored(connect: Connect, unique_name: Names, tmp_path: Path) -> None:
    """COPY INTO converts the file's text itself (no coerce, no -0.0 -> 0.0): the staged check must still find
    the Cache's key."""
    conn = connect()
    cases = [("DOUBLE", 0.0, "-0.0"), ("REAL", 0.1, "0.1"), ("DECIMAL(6,2)", Decimal("1.5"), "1.50")]
    for sql_type, committed, text in cases:
        name = unique_name("blcsv")
        run(conn, f"CREATE TABLE {name} (k {sql_type} PRIMARY KEY, v VARCHAR(9))")
        run(conn, f"INSERT INTO {name} VALUES (%s, 'cache')", (committed,))
        path = tmp_path / f"{name}.csv"
        path.write_text(f"{text},csv\n")
        with pytest.raises(IntegrityError, match="loaded nothing"):
            conn.bulk_load_csv(name, path)
        assert rows(conn, f"SELECT v FROM {name}") == [("cache",)], sql_type


# ---- what the staged move writes -------------------------------------------------------------------------------


def test_staged_rows_keep_every_value_exactly(connect: Connect, unique_name: Names) -> None:
    """The INSERT ... SELECT from the staging table keeps zero signs, fractions, bytes and text, as the direct
    path does."""
    conn = connect()
    columns = "k INT PRIMARY KEY, d DOUBLE, r REAL, ts TIMESTAMP(6), t TIME(3), b BLOB, s CLOB, m DECIMAL(18,3)"
    value = (
        2,
        -0.0,
        -0.0,
        datetime.datetime(2020, 1, 2, 3, 4, 5, 123457),
        datetime.time(1, 2, 3, 456000),
        b"\x00\xff",
        "é\n'\"x",
        Decimal("-123.456"),
    )
    staged, direct = unique_name("bls"), unique_name("bld")
    for name in (staged, direct):
        run(conn, f"CREATE TABLE {name} ({columns})")
    run(conn, f"INSERT INTO {staged} (k) VALUES (1)")  # a live Cache row: the load is staged
    assert conn.bulk_load(staged, [value, (3, 0.0, 0.0, None, None, None, None, None)], batch=1) == 2
    assert conn.bulk_load(direct, [value]) == 1
    got = rows(conn, f"SELECT * FROM {staged} WHERE k = 2")
    assert got == rows(conn, f"SELECT * FROM {direct}") == [value]
    assert [sign(x) for x in got[0][1:3]] == [-1.0, -1.0]
    (zero,) = rows(conn, f"SELECT d, r FROM {staged} WHERE k = 3")
    assert [sign(x) for x in zero] == [1.0, 1.0]


def test_serial_counter_moves_past_a_staged_load(connect: Connect, unique_name: Names) -> None:
    name = unique_name("blser")
    conn = connect()
    run(conn, f"CREATE TABLE {name} (id SERIAL, v INT)")
    run(conn, f"INSERT INTO {name} (v) VALUES (1)")
    assert conn.bulk_load(name, [(10, 10), (11, 11)]) == 2
    run(conn, f"INSERT INTO {name} (v) VALUES (2)")
    got = rows(conn, f"SELECT id, v FROM {name} ORDER BY v")
    assert got[0] == (1, 1) and got[2:] == [(10, 10), (11, 11)] and got[1][0] > 11, got


def test_a_table_without_primary_key_loads_every_row_again(
    connect: Connect, unique_name: Names, tmp_path: Path
) -> None:
    """Hidden row ids: a row equal to a committed one is another row, never refused, never hidden."""
    name = unique_name("blnp")
    conn = connect()
    run(conn, f"CREATE TABLE {name} (a INT, b VARCHAR(3))")
    run(conn, f"INSERT INTO {name} VALUES (1, 'x')")
    assert conn.bulk_load(name, [(1, "x"), (2, "y")]) == 2
    path = tmp_path / "np.csv"
    path.write_text("1,x\n3,z\n")
    assert conn.bulk_load_csv(name, path) == 2
    assert conn.bulk_load_csv(name, path) == 2
    assert rows(conn, f"SELECT a, COUNT(*) FROM {name} GROUP BY a ORDER BY a") == [(1, 4), (2, 1), (3, 2)]
    run(conn, f"DELETE FROM {name} WHERE a = 1")
    assert rows(conn, f"SELECT COUNT(*) FROM {name}") == [(3,)]


# ---- the staging path's state --------------------------------------------------------------------------------


def test_failed_staged_loads_leave_nothing_behind(connect: Connect, unique_name: Names, tmp_path: Path) -> None:
    """Refused by the Cache, by Storage's key, by a NULL key, by a value too long, by the caller's iterator
    raising, by a short row: each leaves no rows and no staging table, and the next load (rows or CSV) works."""
    name = unique_name("blf")
    conn = connect()
    run(conn, f"CREATE TABLE {name} (k INT PRIMARY KEY, v VARCHAR(3) NOT NULL)")
    run(conn, f"INSERT INTO {name} VALUES (1, 'c')")
    assert conn.bulk_load(name, [(2, "a")]) == 1

    def broken() -> Iterator[tuple[int, str]]:
        yield (10, "a")
        raise RuntimeError("the caller's iterator broke")

    failures: list[tuple[type[Exception], Callable[[], object]]] = [
        (IntegrityError, lambda: conn.bulk_load(name, [(3, "a"), (1, "x")])),
        (IntegrityError, lambda: conn.bulk_load(name, [(3, "a"), (2, "x")])),
        (IntegrityError, lambda: conn.bulk_load(name, [(3, "a"), (3, "b")])),
        (IntegrityError, lambda: conn.bulk_load(name, [(3, "a"), (None, "b")])),
        (IntegrityError, lambda: conn.bulk_load(name, [(3, None)])),
        (tique.DataError, lambda: conn.bulk_load(name, [(3, "toolong")])),
        (RuntimeError, lambda: conn.bulk_load(name, broken())),
        (tique.ProgrammingError, lambda: conn.bulk_load(name, [(3, "a"), (4,)])),
    ]
    stored = [(1,), (2,)]
    for i, (kind, load) in enumerate(failures):
        with pytest.raises(kind):
            load()
        assert rows(conn, f"SELECT k FROM {name} ORDER BY k") == stored, i
        assert conn.bulk_load(name, [(100 + i, "ok")]) == 1, i  # CREATE of the same staging table works
        stored.append((100 + i,))
    bad = tmp_path / "bad.csv"
    bad.write_text("200,a\n1,b\n")
    with pytest.raises(IntegrityError, match="loaded nothing"):
        conn.bulk_load_csv(name, bad)
    good = tmp_path / "good.csv"
    good.write_text("200,a\n201,b\n")
    assert conn.bulk_load_csv(name, good) == 2
    assert conn.bulk_load(name, []) == 0
    assert rows(conn, f"SELECT COUNT(*) FROM {name}") == [(2 + len(failures) + 2,)]


def test_two_staged_loads_at_once_one_loses_whole(connect: Connect, unique_name: Names) -> None:
    """A second connection loads while the first is between its move and its COMMIT: the engine lets one of
    them commit; the other loads nothing and says so; both can load again."""
    name = unique_name("bl2")
    first, second = connect(), connect()
    run(first, f"CREATE TABLE {name} (k INT PRIMARY KEY, v VARCHAR(3))")
    run(first, f"INSERT INTO {name} VALUES (1, 'c')")
    outcome: dict[str, object] = {}

    def hook(sql: str, _seconds: float, error: Exception | None) -> None:
        if error is None and "second" not in outcome and re.match(r"INSERT INTO .*__storage", sql):
            try:
                outcome["second"] = second.bulk_load(name, [(7, "B"), (8, "B")])
            except tique.Error as exc:
                outcome["second"] = exc

    first.statement_hooks.append(hook)
    try:
        outcome["first"] = first.bulk_load(name, [(7, "A"), (6, "A")])
    except tique.Error as exc:
        outcome["first"] = exc
    finally:
        first.statement_hooks.clear()
    won = [who for who, got in outcome.items() if got == 2]
    assert len(won) == 1, outcome
    lost = outcome["second" if won == ["first"] else "first"]
    assert isinstance(lost, tique.Error), outcome
    expected = [(1, "c"), (6, "A"), (7, "A")] if won == ["first"] else [(1, "c"), (7, "B"), (8, "B")]
    assert rows(first, f"SELECT k, v FROM {name} ORDER BY k") == expected
    assert first.bulk_load(name, [(100, "A")]) == second.bulk_load(name, [(101, "B")]) == 1


def test_an_aborted_transactions_rows_do_not_refuse(connect: Connect, unique_name: Names) -> None:
    """A transaction that lost certification has an outcome NOT ok: its Cache rows hide nothing."""
    name = unique_name("bla")
    winner, loser, loader = connect(), connect(), connect()
    run(winner, f"CREATE TABLE {name} (k INT PRIMARY KEY, v VARCHAR(3))")
    run(winner, f"INSERT INTO {name} VALUES (1, 'one')")
    winner.cursor().execute(f"UPDATE {name} SET v = 'w' WHERE k = 1")
    loser.cursor().execute(f"UPDATE {name} SET v = 'l' WHERE k = 1")
    loser.cursor().execute(f"INSERT INTO {name} VALUES (50, 'l')")
    loser.cursor().execute(f"SELECT COUNT(*) FROM {name}")  # its rows go to the Cache
    winner.commit()
    with pytest.raises(tique.SerializationFailure):
        loser.commit()
    assert loader.bulk_load(name, [(50, "new")]) == 1
    with pytest.raises(IntegrityError, match=r"loaded nothing.*\(k=1\)"):
        loader.bulk_load(name, [(1, "new")])
    assert rows(loader, f"SELECT k, v FROM {name} ORDER BY k") == [(1, "w"), (50, "new")]


def test_keys_load_again_after_delete_and_checkpoint(connect: Connect, unique_name: Names) -> None:
    """The checkpointer removes a deleted key from Storage and its versions from the Cache: the key can be
    loaded, and the loaded row is what every later snapshot reads (also after another checkpoint)."""
    name = unique_name("blcp")
    conn = connect()
    run(conn, f"CREATE TABLE {name} (k INT PRIMARY KEY, v VARCHAR(5))")
    run(conn, f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    run(conn, f"DELETE FROM {name} WHERE k = 1")
    run(conn, f"UPDATE {name} SET v = 'bb' WHERE k = 2")
    with pytest.raises(IntegrityError, match="loaded nothing"):
        conn.bulk_load(name, [(1, "load")])
    assert checkpoint(conn) == []
    assert conn.bulk_load(name, [(1, "load"), (4, "d")]) == 2
    with pytest.raises(IntegrityError, match="loaded nothing"):
        conn.bulk_load(name, [(2, "load")])
    run(conn, f"UPDATE {name} SET v = 'dd' WHERE k = 4")
    assert checkpoint(conn) == []
    assert rows(conn, f"SELECT k, v FROM {name} ORDER BY k") == [(1, "load"), (2, "bb"), (3, "c"), (4, "dd")]


@pytest.mark.parametrize("after", [r"^START TRANSACTION", r"^SELECT s\.", r"^INSERT INTO .*__storage"])
def test_a_checkpointer_run_during_a_staged_load(connect: Connect, unique_name: Names, after: str) -> None:
    """The checkpointer moves key 1's committed version to Storage while a load of other keys is between its
    statements: both write Storage, so the engine may refuse one of them, but nothing is lost or doubled."""
    name = unique_name("blck")
    conn = connect()
    run(conn, f"CREATE TABLE {name} (k INT PRIMARY KEY, v VARCHAR(5))")
    run(conn, f"INSERT INTO {name} VALUES (1, 'one'), (2, 'two')")
    run(conn, f"DELETE FROM {name} WHERE k = 2")
    ran: list[object] = []

    def hook(sql: str, _seconds: float, error: Exception | None) -> None:
        if error is None and not ran and re.search(after, sql):
            ran.append(checkpoint(conn))

    conn.statement_hooks.append(hook)
    try:
        loaded = conn.bulk_load(name, [(3, "three"), (4, "four")])
    except tique.Error as exc:
        loaded = 0
        assert "loaded nothing" in str(exc) or isinstance(exc, tique.SerializationFailure), exc
    finally:
        conn.statement_hooks.clear()
    assert ran == [[]], ran
    assert checkpoint(conn) == []
    expected = [(1, "one")] + ([(3, "three"), (4, "four")] if loaded else [])
    assert rows(conn, f"SELECT k, v FROM {name} ORDER BY k") == expected
    with pytest.raises(IntegrityError, match="loaded nothing"):
        conn.bulk_load(name, [(1, "again")])
    assert conn.bulk_load(name, [(2, "two")]) == 1
    assert rows(conn, f"SELECT COUNT(*) FROM {name}") == [(len(expected) + 1,)]


# ---- writers racing the load (found by this attack, fixed) ----------------------------------------------------


def test_a_key_buffered_in_another_open_transaction_is_not_lost(connect: Connect, unique_name: Names) -> None:
    name = unique_name("blbuf")
    writer, loader = connect(), connect()
    run(loader, f"CREATE TABLE {name} (k INT PRIMARY KEY, v VARCHAR(9))")
    writer.cursor().execute(f"INSERT INTO {name} VALUES (9, 'pending')")  # buffered in the client
    loaded = committed = True
    try:
        loader.bulk_load(name, [(9, "loaded")])
    except IntegrityError:
        loaded = False
    try:
        writer.commit()
    except tique.Error:
        committed = False
    assert not (loaded and committed), rows(loader, f"SELECT k, v FROM {name}")


def test_a_key_buffered_in_the_loaders_own_transaction_is_not_lost(connect: Connect, unique_name: Names) -> None:
    name = unique_name("blown")
    conn = connect()
    run(conn, f"CREATE TABLE {name} (k INT PRIMARY KEY, v VARCHAR(9))")
    conn.cursor().execute(f"INSERT INTO {name} VALUES (10, 'own')")
    loaded = committed = True
    try:
        conn.bulk_load(name, [(10, "loaded")])
    except tique.Error:
        loaded = False
    try:
        conn.commit()
    except tique.Error:
        committed = False
    assert not (loaded and committed), rows(conn, f"SELECT k, v FROM {name}")


@pytest.mark.parametrize(
    ("cache_rows", "after"),
    [(False, r"^SELECT COUNT\(\*\) FROM .*__cache"), (True, r"^INSERT INTO tmp\."), (True, r"^SELECT s\.")],
    ids=["straight-after-count", "staged-after-batch", "staged-after-check"],
)
def test_a_commit_during_the_load_does_not_hide_the_loaded_row(
    connect: Connect, unique_name: Names, cache_rows: bool, after: str
) -> None:
    name = unique_name("blrace")
    loader, writer = connect(), connect()
    run(loader, f"CREATE TABLE {name} (k INT PRIMARY KEY, v VARCHAR(9))")
    if cache_rows:
        run(loader, f"INSERT INTO {name} VALUES (1, 'one')")
    fired: list[object] = []

    def hook(sql: str, _seconds: float, error: Exception | None) -> None:
        if error is None and not fired and re.search(after, sql):
            try:
                run(writer, f"INSERT INTO {name} VALUES (5, 'writer')")
                fired.append("committed")
            except tique.Error as exc:
                fired.append(exc)

    loader.statement_hooks.append(hook)
    try:
        loaded = loader.bulk_load(name, [(5, "loaded"), (6, "six")]) == 2
    except IntegrityError:
        loaded = False
    finally:
        loader.statement_hooks.clear()
    assert fired, f"no statement matched {after!r}"
    seen = rows(loader, f"SELECT v FROM {name} WHERE k = 5")
    # the load refused, or the writer lost, or the loaded row is what the key reads: never a load that vanished
    assert not loaded or fired != ["committed"] or seen == [("loaded",)], (fired, seen)


def test_a_key_only_a_rolled_back_transaction_wrote_loads_after_a_checkpoint(
    connect: Connect, unique_name: Names
) -> None:
    name = unique_name("blrb")
    writer, loader = connect(), connect()
    run(loader, f"CREATE TABLE {name} (k INT PRIMARY KEY, v VARCHAR(9))")
    writer.cursor().execute(f"INSERT INTO {name} VALUES (60, 'rolled')")
    writer.cursor().execute(f"SELECT COUNT(*) FROM {name}")  # the row goes to the Cache
    writer.rollback()
    assert checkpoint(loader) == []
    assert loader.bulk_load(name, [(60, "loaded")]) == 1
    assert rows(loader, f"SELECT k, v FROM {name}") == [(60, "loaded")]


def test_the_refusal_names_the_key_that_was_refused(embedded_url: str, unique_name: Names) -> None:
    name = unique_name("blmsg")
    key = datetime.datetime(2020, 1, 2, 3, 4, 5, 123456)
    conn = tique.connect(embedded_url)
    try:
        run(conn, f"CREATE TABLE {name} (k TIMESTAMP(6) PRIMARY KEY, v INT)")
        run(conn, f"INSERT INTO {name} VALUES (%s, 1)", (key,))
        with pytest.raises(IntegrityError, match="loaded nothing") as refused:
            conn.bulk_load(name, [(key, 2)])
        assert repr(key) in str(refused.value), refused.value
    finally:
        conn.close()


def test_csv_duplicate_refused_in_the_users_words_on_either_path(
    connect: Connect, unique_name: Names, tmp_path: Path
) -> None:
    name = unique_name("blcsvdup")
    conn = connect()
    run(conn, f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT)")
    path = tmp_path / "dup.csv"
    path.write_text("1,1\n2,2\n")
    assert conn.bulk_load_csv(name, path) == 2
    with pytest.raises(IntegrityError) as refused:
        conn.bulk_load_csv(name, path)  # the Cache is empty: the direct path
    said = str(refused.value)
    assert "loaded nothing" in said and f"'{name}'" in said and not re.search(r"__storage|tique_data", said), said


# ---- SIGKILL after each engine statement of a staged load ------------------------------------------------------

LOADED = 2500  # rows of a killed load: keys 2 .. 2501 (key 1 is a committed row in the Cache: the load is staged)


def _setup(url: str) -> None:
    conn = tique.connect(url)
    run(conn, "CREATE TABLE keep (k INT PRIMARY KEY, v INT)")
    run(conn, "INSERT INTO keep VALUES (1, 10), (2, 20)")
    run(conn, "CREATE TABLE b (k INT PRIMARY KEY, v INT)")
    run(conn, "INSERT INTO b VALUES (1, 1)")
    conn.close()


def _load(conn: Any, how: str, directory: Path) -> None:
    if how == "rows":
        conn.bulk_load("b", [(i, i) for i in range(2, LOADED + 2)], batch=1000)
    else:
        path = directory / "load.csv"
        path.write_text("".join(f"{i},{i}\n" for i in range(2, LOADED + 2)))
        conn.bulk_load_csv("b", path)


def _kill(url: str, how: str, pattern: str, nth: str = "1") -> None:
    """SIGKILL right after the ``nth`` statement matching ``pattern``; exit 3 if none did."""
    conn = tique.connect(url)
    wanted = re.compile(pattern)
    seen = [0]

    def hook(sql: str, _seconds: float, error: Exception | None) -> None:
        if error is None and wanted.search(sql):
            seen[0] += 1
            if seen[0] == int(nth):
                os.kill(os.getpid(), signal.SIGKILL)

    conn.statement_hooks.append(hook)
    _load(conn, how, Path(url.removeprefix("monetdbe://")).parent)
    conn.close()
    sys.exit(3)


def _probe(url: str, how: str) -> None:
    """Reopen (recovery runs) and report what an application sees, as JSON."""
    out: dict[str, Any] = {}
    conn = tique.connect(url)

    def attempt(key: str, fn: Callable[[], Any]) -> None:
        try:
            out[key] = fn()
        except Exception as exc:  # reported: the test decides
            out[key] = f"ERR {type(exc).__name__}: {exc}"
            try:
                conn.rollback()
            except Exception:
                pass

    def count() -> list[list[Any]]:
        return [list(r) for r in rows(conn, "SELECT COUNT(*), MIN(k), MAX(k), SUM(v) FROM b")]

    attempt("keep", lambda: [list(r) for r in rows(conn, "SELECT k, v FROM keep ORDER BY k")])
    attempt("b", count)
    attempt("b_write", lambda: (run(conn, "INSERT INTO b VALUES (100000, 7)"), "ok")[1])
    attempt("checkpoint", lambda: checkpoint(conn))
    attempt("retry", lambda: (_load(conn, how, Path(url.removeprefix("monetdbe://")).parent), "loaded")[1])
    attempt("b_after", count)
    conn.close()
    print(json.dumps(out))


def _child(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.adversarial.test_attack_bulk_load", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("bulk_load_kills") / "base"
    made = _child("setup", f"monetdbe://{directory}")
    assert made.returncode == 0, made.stderr
    return directory


# (how, statement, which match, loaded): the rows are staged (their own engine transaction: the first COMMIT),
# then the move runs as a committed change of the table (its record, its outcome), in a transaction of its own
KILL_POINTS = [
    ("rows", r"^CREATE LOCAL TEMPORARY TABLE", 1, False),
    ("rows", r"^START TRANSACTION", 1, False),
    ("rows", r"^INSERT INTO tmp\.", 1, False),
    ("rows", r"^COMMIT", 1, False),
    ("rows", r"^INSERT INTO tique\.commits", 1, False),
    ("rows", r"^INSERT INTO tique\.outcomes", 1, False),
    ("rows", r"^SELECT COUNT\(\*\) FROM .*__cache", 1, False),
    ("rows", r"^SELECT s\.", 1, False),
    ("rows", r"^INSERT INTO .*__storage.* SELECT", 1, False),
    ("rows", r"^COMMIT", 2, True),
    ("rows", r"^DROP TABLE tmp\.", 1, True),
    ("csv", r"^COPY INTO tmp\.", 1, False),
    ("csv", r"^INSERT INTO .*__storage.* SELECT", 1, False),
    ("csv", r"^COMMIT", 1, True),
    ("csv", r"^DROP TABLE tmp\.", 1, True),
]


# `make test` kills at 8 of them: each phase's first and last statement (staging, the move, after the COMMIT), the
# last uncommitted and first committed one of each form; `make test-long` at every one
KILL_AT = thinned(KILL_POINTS, [0, 3, 5, 8, 9, 10, 11, 13])


@pytest.mark.parametrize(("how", "after", "nth", "committed"), KILL_AT)
def test_a_staged_load_killed_after_each_statement_is_all_or_nothing(
    base: Path, tmp_path: Path, how: str, after: str, nth: int, committed: bool
) -> None:
    directory = tmp_path / "db"
    shutil.copytree(base, directory)
    url = f"monetdbe://{directory}"
    killed = _child("kill", url, how, after, str(nth))
    assert killed.returncode == -signal.SIGKILL, f"no statement matched {after!r}: {killed.stdout}{killed.stderr}"
    probed = _child("probe", url, how)
    assert probed.returncode == 0, probed.stderr
    state = json.loads(probed.stdout.strip().splitlines()[-1])
    everything = [1 + LOADED, 1, LOADED + 1, sum(range(1, LOADED + 2))]
    assert state["keep"] == [[1, 10], [2, 20]], state
    assert state["b"] == [everything if committed else [1, 1, 1, 1]], state
    assert state["b_write"] == "ok" and state["checkpoint"] == [], state
    if committed:  # refused: the keys are in Storage (the CSV's message: see test_csv_duplicate_...)
        assert state["retry"].startswith("ERR IntegrityError"), state
    else:
        assert state["retry"] == "loaded", state
    assert state["b_after"] == [[everything[0] + 1, 1, 100000, everything[3] + 7]], state


if __name__ == "__main__":
    mode, target = sys.argv[1], sys.argv[2]
    if mode == "setup":
        _setup(target)
    elif mode == "kill":
        _kill(target, sys.argv[3], sys.argv[4], sys.argv[5])
    elif mode == "probe":
        _probe(target, sys.argv[3])
