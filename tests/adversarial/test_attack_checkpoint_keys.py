"""Attacks on the checkpointer's Storage deletes by a join with a session temporary table of keys (a264ff1) and its
read-back of Storage against the Cache before it cleans (0744806): composite keys of mixed types whose values
repeat across columns, more than 1000 keys in a run, values whose text is hard to read back (no false
mismatch may keep a table's Cache rows for good), tables with a hidden row id, tables dropped and created
again with other key types under one checkpointer, two checkpointer objects on one session and on two, and
a checkpointer killed at the new 'checked' step. After every run Storage must equal a model of the committed
rows, the run must report no error, and the Cache must be empty."""

from __future__ import annotations

import datetime
import random
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import pytest

import tique
from tests.conftest import sized
from tests.physical import cache, storage
from tique.checkpoint import Checkpointer
from tique.database import Database
from tique.engine.base import RawConnection


@pytest.fixture
def raw(embedded_url: str) -> Iterator[RawConnection]:
    conn = Database.get(embedded_url).connect_raw()
    yield conn
    conn.close()


def stored_rows(raw: RawConnection, name: str, cols: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in raw.execute(f"SELECT {cols} FROM {storage(raw, name)}").rows]


def cache_count(raw: RawConnection, name: str) -> int:
    return int(raw.execute(f"SELECT COUNT(*) FROM {cache(raw, name)}").scalar())


def clean_run(ckpt: Checkpointer, raw: RawConnection, name: str, what: str = "") -> None:
    report = ckpt.run_once()
    assert not report.errors, f"{what}: the run reported {report.errors}"
    table = report.tables.get(f"sys.{name}")
    assert table is None or not table.mismatched, f"{what}: false mismatch {table}"
    assert cache_count(raw, name) == 0, f"{what}: Cache rows left after a clean run: {report.tables}"


# ---- one session, two Checkpointer objects -------------------------------------------------------------------


@pytest.mark.parametrize("key", ["a INT, b INT", "a INT, b VARCHAR(8)"])
def test_a_second_checkpointer_object_on_the_same_session(
    embedded_url: str, raw: RawConnection, unique_name: Callable[[str], str], key: str
) -> None:
    """Checkpointer is public and takes any raw connection; tests (and a caller running one checkpoint at a time)
    make a new one per run on one session. Each object creates tmp.tq_keys_0 at its first composite-key delete:
    the second object's CREATE must not fail on the first one's table, leaving the Cache uncleaned."""
    name = unique_name("ck2s")
    conn = tique.connect(embedded_url)
    cur = conn.cursor()
    try:
        cur.execute(f"CREATE TABLE {name} ({key}, v INT, PRIMARY KEY (a, b))")
        conn.commit()
        conn.bulk_load(name, [(a, a + 1 if "b INT" in key else f"s{a}", 0) for a in range(5)])
        for round_ in range(1, 4):
            cur.execute(f"UPDATE {name} SET v = %s", (round_,))  # every key is in Storage: delete, then insert
            conn.commit()
            report = Checkpointer(raw).run_once()  # a new object each run, on the same session
            assert not report.errors, (
                f"round {round_}: a second Checkpointer on the same session fails its composite-key delete "
                f"(CREATE LOCAL TEMPORARY TABLE tmp.tq_keys_0 again): {report.errors}"
            )
            assert cache_count(raw, name) == 0
            assert sorted(v for (v,) in stored_rows(raw, name, "v")) == [round_] * 5
    finally:
        conn.close()


def test_two_checkpointer_objects_on_two_sessions_one_after_another(
    embedded_url: str, unique_name: Callable[[str], str]
) -> None:
    name = unique_name("ck2c")
    conn = tique.connect(embedded_url)
    cur = conn.cursor()
    db = Database.get(embedded_url)
    try:
        cur.execute(f"CREATE TABLE {name} (a VARCHAR(4), b INT, v INT, PRIMARY KEY (b, a))")
        conn.commit()
        for round_ in range(4):
            cur.execute(f"DELETE FROM {name}")
            cur.execute(f"INSERT INTO {name} VALUES ('1', 2, %s), ('2', 1, %s)", (round_, round_))
            conn.commit()
            raw = db.connect_raw()
            try:
                clean_run(Checkpointer(raw), raw, name, f"round {round_}")
                assert sorted(stored_rows(raw, name, "a, b, v")) == [("1", 2, round_), ("2", 1, round_)]
            finally:
                raw.close()
    finally:
        conn.close()


# ---- mixed key types, the model after every run --------------------------------------------------------------

DOMAINS: dict[str, list[Any]] = {
    "INT": [1, 2, 3],
    "SMALLINT": [-32767, 1, 32767],
    "BIGINT": [-(2**63) + 1, 1, 2**63 - 1],
    "TINYINT": [-127, 0, 127],
    "VARCHAR(6)": ["1", "2", "a'b"],
    "DATE": [datetime.date(1, 1, 1), datetime.date(2024, 2, 29), datetime.date(9999, 12, 31)],
    "DECIMAL(10,2)": [Decimal("1.00"), Decimal("-2.50"), Decimal("99999999.99")],
    "DOUBLE": [0.0, 0.1, -1e300],
    "BOOLEAN": [True, False],
    "TIMESTAMP(0)": [datetime.datetime(2024, 1, 1), datetime.datetime(1970, 1, 1, 0, 0, 1)],
}
PAIRS = [
    ("INT", "VARCHAR(6)"),
    ("VARCHAR(6)", "VARCHAR(6)"),
    ("DATE", "INT"),
    ("DECIMAL(10,2)", "DECIMAL(10,2)"),
    ("DOUBLE", "DOUBLE"),
    ("BIGINT", "SMALLINT"),
    ("TINYINT", "TINYINT"),
    ("BOOLEAN", "INT"),
    ("TIMESTAMP(0)", "DATE"),
]


@pytest.mark.parametrize("types", PAIRS, ids=lambda p: "-".join(p))
def test_mixed_type_composite_keys_match_the_model_after_every_run(
    embedded_url: str, raw: RawConnection, unique_name: Callable[[str], str], types: tuple[str, str]
) -> None:
    ta, tb = types
    name = unique_name("ckmix")
    conn = tique.connect(embedded_url)
    cur = conn.cursor()
    ckpt = Checkpointer(Database.get(embedded_url).connect_raw())
    rng = random.Random(sum(map(ord, ta + tb)))
    model: dict[tuple[Any, Any, int], Any] = {}
    try:
        # key (b, c, a) in another order than the columns; NULL-able payloads
        cur.execute(
            f"CREATE TABLE {name} (v INT, a {ta} NOT NULL, note VARCHAR(10), b {tb} NOT NULL, c INT NOT NULL, "
            f"PRIMARY KEY (b, c, a))"
        )
        conn.commit()
        same = ta == tb
        for step in range(sized(15, 30)):
            for _ in range(rng.randint(1, 5)):
                key = (rng.choice(DOMAINS[ta]), rng.choice(DOMAINS[tb]), rng.choice((1, 2)))
                where = "a = %s AND b = %s AND c = %s"
                roll = rng.random()
                if key not in model:
                    model[key] = (rng.choice([None, rng.randint(0, 99)]), rng.choice([None, "n", ""]))
                    cur.execute(
                        f"INSERT INTO {name} (a, b, c, v, note) VALUES (%s, %s, %s, %s, %s)", (*key, *model[key])
                    )
                elif roll < 0.35:
                    del model[key]
                    cur.execute(f"DELETE FROM {name} WHERE {where}", key)
                elif roll < 0.6 and same:
                    moved = (key[1], key[0], key[2])
                    if moved not in model:
                        model[moved] = model.pop(key)
                        cur.execute(f"UPDATE {name} SET a = %s, b = %s WHERE {where}", (moved[0], moved[1], *key))
                else:
                    model[key] = (rng.randint(0, 99), model[key][1])
                    cur.execute(f"UPDATE {name} SET v = %s WHERE {where}", (model[key][0], *key))
            conn.commit()
            clean_run(ckpt, raw, name, f"step {step}")
            got = {(a, b, c): (v, note) for a, b, c, v, note in stored_rows(raw, name, "a, b, c, v, note")}
            assert len(got) == len(stored_rows(raw, name, "a")), f"step {step}: a key twice in Storage"
            assert got == model, f"step {step}: Storage differs from the committed rows"
        cur.execute(f"SELECT a, b, c, v, note FROM {name}")
        assert {(a, b, c): (v, n) for a, b, c, v, n in cur.fetchall()} == model
        conn.rollback()
    finally:
        ckpt.conn.close()
        conn.close()


def test_more_than_a_thousand_composite_keys_in_one_run(
    embedded_url: str, raw: RawConnection, unique_name: Callable[[str], str]
) -> None:
    """2,600 keys whose values repeat across the key's columns, all in Storage: three batches through the
    temporary table, each deleting exactly its keys; then 1,300 deletes and 700 key swaps in one run."""
    name = unique_name("ckbig")
    conn = tique.connect(embedded_url)
    cur = conn.cursor()
    ckpt = Checkpointer(Database.get(embedded_url).connect_raw())
    try:
        cur.execute(f"CREATE TABLE {name} (a VARCHAR(8), b VARCHAR(8), v INT, PRIMARY KEY (a, b))")
        conn.commit()
        keys = [(str(i), str(j)) for i in range(51) for j in range(51)][:2600]
        model = {k: 0 for k in keys}
        conn.bulk_load(name, [(a, b, 0) for a, b in keys])
        cur.execute(f"UPDATE {name} SET v = v + 1")
        conn.commit()
        model = {k: 1 for k in keys}
        clean_run(ckpt, raw, name, "update of all")
        assert {(a, b): v for a, b, v in stored_rows(raw, name, "a, b, v")} == model
        rng = random.Random(5)
        gone = rng.sample(keys, 1300)
        for k in gone:
            del model[k]
        for start in range(0, len(gone), 100):
            chunk = gone[start : start + 100]
            cur.execute(
                f"DELETE FROM {name} WHERE " + " OR ".join("(a = %s AND b = %s)" for _ in chunk),
                [x for k in chunk for x in k],
            )
        swapped = 0
        for k in list(model):
            if swapped == 700:
                break
            if k[0] != k[1] and (k[1], k[0]) in model and k[0] < k[1]:
                cur.execute(f"UPDATE {name} SET v = v + 10 WHERE a = %s AND b = %s", k)
                cur.execute(f"UPDATE {name} SET v = v + 20 WHERE a = %s AND b = %s", (k[1], k[0]))
                model[k] += 10
                model[(k[1], k[0])] += 20
                swapped += 1
        conn.commit()
        clean_run(ckpt, raw, name, "deletes and updates of mirrored keys")
        rows = stored_rows(raw, name, "a, b, v")
        assert len(rows) == len(model)
        assert {(a, b): v for a, b, v in rows} == model
    finally:
        ckpt.conn.close()
        conn.close()


# ---- values whose text is hard: no false mismatch ------------------------------------------------------------

TRICKY = [
    # (k, s, r REAL, f DOUBLE, de, ts, tm, dt, b BLOB, bo, c CLOB, ti)
    (
        1,
        "a\\b'c\n\t",
        3.4028234663852886e38,
        5e-324,
        Decimal("9999999999999999999999999999.9999999999"),
        datetime.datetime(1, 1, 1),
        datetime.time(23, 59, 59, 999999),
        datetime.date(1, 1, 1),
        bytes(range(256)),
        True,
        "x" * 100_000 + "\u2603",
        -127,
    ),
    (
        1,
        "",
        1.401298464324817e-45,
        2.2250738585072014e-308,
        Decimal("-0.0000000001"),
        datetime.datetime(9999, 12, 31, 23, 59, 59, 999999),
        datetime.time(0, 0, 0, 1),
        datetime.date(9999, 12, 31),
        b"",
        False,
        "",
        127,
    ),
    (
        2,
        "a",
        -0.0,
        -0.0,
        Decimal("0"),
        datetime.datetime(1970, 1, 1),
        datetime.time(0, 0),
        datetime.date(1970, 1, 1),
        b"\x00",
        None,
        None,
        None,
    ),
    (
        3,
        "a",
        1.1754943508222875e-38,
        1.7976931348623157e308,
        Decimal("0.1"),
        None,
        None,
        None,
        None,
        None,
        "\U0001f600 e\u0301",
        0,
    ),
    (
        4,
        "b",
        16777216.0,
        0.1,
        Decimal("-1"),
        datetime.datetime(2024, 2, 29, 12, 0, 0, 5),
        datetime.time(12, 0, 0, 500000),
        datetime.date(2000, 2, 29),
        b"\xff" * 1000,
        True,
        "\\\\",
        1,
    ),
    (5, "c", 0.1, 1 / 3, Decimal("12345678901234567890123456.7890123456"), None, None, None, None, None, None, None),
    (6, "d", 1e-40, 4.9406564584124654e-324, Decimal("1e-10"), None, None, None, None, None, "'", None),
]


def test_values_hard_to_print_and_read_back_are_never_a_mismatch(
    embedded_url: str, raw: RawConnection, unique_name: Callable[[str], str]
) -> None:
    """Extreme, subnormal, negative-zero, long and escaped values: a run copies them, reads Storage back as equal
    and cleans the Cache; a second version of each row (its payloads set to NULL) as well, then back again."""
    name = unique_name("cktxt")
    conn = tique.connect(embedded_url)
    cur = conn.cursor()
    ckpt = Checkpointer(Database.get(embedded_url).connect_raw())
    cols = "k, s, r, f, de, ts, tm, dt, b, bo, c, ti"
    texts = ", ".join(f"CAST({c} AS CLOB)" for c in cols.split(", "))
    try:
        cur.execute(
            f"CREATE TABLE {name} (k INT, s VARCHAR(20), r REAL, f DOUBLE, de DECIMAL(38,10), ts TIMESTAMP(6), "
            "tm TIME(6), dt DATE, b BLOB, bo BOOLEAN, c CLOB, ti TINYINT, PRIMARY KEY (s, k))"
        )
        conn.commit()
        kept = []
        for row in TRICKY:  # a value tique refuses for its column is no matter of the checkpointer's
            try:
                cur.execute(f"INSERT INTO {name} ({cols}) VALUES (" + ", ".join(["%s"] * 12) + ")", row)
                kept.append(row)
            except tique.DataError:
                pass
        assert len(kept) >= 5, kept
        conn.commit()
        in_cache = sorted(tuple(r) for r in raw.execute(f"SELECT {texts} FROM {cache(raw, name)}").rows)
        clean_run(ckpt, raw, name, "first copy")
        assert sorted(tuple(r) for r in raw.execute(f"SELECT {texts} FROM {storage(raw, name)}").rows) == in_cache
        cur.execute(
            f"UPDATE {name} SET r = NULL, f = NULL, de = NULL, ts = NULL, tm = NULL, dt = NULL, b = NULL, "
            "bo = NULL, c = NULL, ti = NULL"
        )
        conn.commit()
        clean_run(ckpt, raw, name, "payloads NULL")
        for row in kept:  # back again, one statement per row (a second version of each key in Storage)
            cur.execute(
                f"UPDATE {name} SET r = %s, f = %s, de = %s, ts = %s, tm = %s, dt = %s, b = %s, bo = %s, c = %s, "
                "ti = %s WHERE k = %s AND s = %s",
                (*row[2:], row[0], row[1]),
            )
        conn.commit()
        clean_run(ckpt, raw, name, "payloads back")
        assert sorted(tuple(r) for r in raw.execute(f"SELECT {texts} FROM {storage(raw, name)}").rows) == in_cache
    finally:
        ckpt.conn.close()
        conn.close()


def test_engine_computed_values_are_never_a_mismatch(
    embedded_url: str, raw: RawConnection, unique_name: Callable[[str], str]
) -> None:
    """Values the engine computes in an UPDATE (a -0 product, a REAL from a division, a string built by
    functions), not sent by the client: the copy and the read-back agree."""
    name = unique_name("ckcmp")
    conn = tique.connect(embedded_url)
    cur = conn.cursor()
    ckpt = Checkpointer(Database.get(embedded_url).connect_raw())
    try:
        cur.execute(f"CREATE TABLE {name} (k INT, j INT, r REAL, f DOUBLE, s VARCHAR(30), PRIMARY KEY (j, k))")
        conn.commit()
        conn.bulk_load(name, [(k, k % 3, 1.0, float(k), f"s{k}") for k in range(40)])
        cur.execute(
            f"UPDATE {name} SET f = f * -0.0, r = r / (k + 7), s = s || '\u00e9' || CAST(k * 1.5 AS VARCHAR(10))"
            " WHERE k > %s",
            (-1,),
        )
        conn.commit()
        clean_run(ckpt, raw, name, "engine-computed values")
    finally:
        ckpt.conn.close()
        conn.close()


def test_a_double_key_computed_as_minus_zero_by_the_engine(
    embedded_url: str, raw: RawConnection, unique_name: Callable[[str], str]
) -> None:
    """A composite key with a DOUBLE column whose new value the engine computes as -0 (0 * -1): the run must
    find the key it wrote (zero_keys writes 0) when it reads Storage back, not report it as missing forever."""
    name = unique_name("ckmz")
    conn = tique.connect(embedded_url)
    cur = conn.cursor()
    ckpt = Checkpointer(Database.get(embedded_url).connect_raw())
    try:
        cur.execute(f"CREATE TABLE {name} (d DOUBLE, i INT, v INT, PRIMARY KEY (d, i))")
        conn.commit()
        conn.bulk_load(name, [(5.0, 1, 1), (0.5, 2, 2)])
        clean_run(ckpt, raw, name, "loaded")
        cur.execute(f"UPDATE {name} SET d = (d - 5.0) * -1.0 WHERE v = %s", (1,))
        cur.execute(f"UPDATE {name} SET d = d * 0.0 * -1.0 WHERE v = %s", (2,))
        conn.commit()
        cur.execute(f"SELECT CAST(d AS VARCHAR(20)), i, v FROM {name} ORDER BY i")
        seen = cur.fetchall()
        conn.rollback()
        for run in range(2):
            report = ckpt.run_once()
            table = report.tables.get(f"sys.{name}")
            assert not report.errors and (table is None or not table.mismatched), (
                f"run {run}: a -0 key computed by the engine is a mismatch for good: {report.errors}"
            )
        assert cache_count(raw, name) == 0
        cur.execute(f"SELECT CAST(d AS VARCHAR(20)), i, v FROM {name} ORDER BY i")
        assert [(i, v) for _, i, v in cur.fetchall()] == [(i, v) for _, i, v in seen]
        conn.rollback()
    finally:
        ckpt.conn.close()
        conn.close()


# ---- hidden row ids, DDL between runs, kills -----------------------------------------------------------------


def test_a_table_with_a_hidden_row_id(embedded_url: str, raw: RawConnection, unique_name: Callable[[str], str]) -> None:
    name = unique_name("ckrid")
    conn = tique.connect(embedded_url)
    cur = conn.cursor()
    ckpt = Checkpointer(Database.get(embedded_url).connect_raw())
    try:
        cur.execute(f"CREATE TABLE {name} (a INT, b VARCHAR(4))")
        conn.commit()
        cur.execute(f"INSERT INTO {name} VALUES (1, 'x'), (1, 'x'), (2, NULL), (2, 'y')")
        conn.commit()
        clean_run(ckpt, raw, name, "inserted")
        cur.execute(f"UPDATE {name} SET b = 'z' WHERE a = 1")
        cur.execute(f"DELETE FROM {name} WHERE b IS NULL")
        cur.execute(f"INSERT INTO {name} VALUES (3, 'x')")
        conn.commit()
        clean_run(ckpt, raw, name, "changed")
        assert sorted(stored_rows(raw, name, "a, b"), key=repr) == sorted(
            [(1, "z"), (1, "z"), (2, "y"), (3, "x")], key=repr
        )
    finally:
        ckpt.conn.close()
        conn.close()


def test_tables_dropped_and_created_with_other_key_types_under_one_checkpointer(
    embedded_url: str, raw: RawConnection, unique_name: Callable[[str], str]
) -> None:
    """The checkpointer caches its temporary table per tuple of key types; the table under one name changes its
    key's types and order between runs."""
    name = unique_name("ckddl")
    conn = tique.connect(embedded_url)
    cur = conn.cursor()
    ckpt = Checkpointer(Database.get(embedded_url).connect_raw())
    shapes = [
        ("a INT, b VARCHAR(5), v INT, PRIMARY KEY (a, b)", [(1, "2", 0), (2, "1", 0)]),
        ("a VARCHAR(5), b INT, v INT, PRIMARY KEY (a, b)", [("1", 2, 0), ("2", 1, 0)]),
        ("a INT, b VARCHAR(9), v INT, PRIMARY KEY (b, a)", [(1, "2", 0), (2, "1", 0)]),
        ("a INT, b VARCHAR(5), v INT, PRIMARY KEY (a, b)", [(1, "2", 0), (2, "1", 0)]),
        ("a BIGINT, b BIGINT, v INT, PRIMARY KEY (a, b)", [(1, 2, 0), (2, 1, 0)]),
        (
            "a DATE, b DATE, v INT, PRIMARY KEY (a, b)",
            [
                (datetime.date(2020, 1, 2), datetime.date(2020, 2, 1), 0),
                (datetime.date(2020, 2, 1), datetime.date(2020, 1, 2), 0),
            ],
        ),
    ]
    try:
        for i, (columns, rows) in enumerate(shapes):
            cur.execute(f"CREATE TABLE {name} ({columns})")
            conn.commit()
            conn.bulk_load(name, rows)
            cur.execute(f"UPDATE {name} SET v = v + 1")
            conn.commit()
            clean_run(ckpt, raw, name, f"shape {i}")
            assert sorted(stored_rows(raw, name, "a, b, v"), key=repr) == sorted(
                [(a, b, 1) for a, b, _ in rows], key=repr
            ), f"shape {i}"
            cur.execute(f"ALTER TABLE {name} ADD COLUMN extra INT DEFAULT 7")
            conn.commit()
            cur.execute(f"DELETE FROM {name} WHERE v = 1 AND a = %s", (rows[0][0],))
            conn.commit()
            clean_run(ckpt, raw, name, f"shape {i} after ALTER")
            assert stored_rows(raw, name, "a, b, v, extra") == [(rows[1][0], rows[1][1], 1, 7)], f"shape {i}"
            cur.execute(f"DROP TABLE {name}")
            conn.commit()
    finally:
        ckpt.conn.close()
        conn.close()


@pytest.mark.parametrize("step", ["wrote", "checked"])
def test_killed_at_a_step_then_run_again(
    embedded_url: str, raw: RawConnection, unique_name: Callable[[str], str], step: str
) -> None:
    """A checkpointer killed after its first batch was written, or after its check; a new one (another
    session) finishes: Storage is the model, no key twice, nothing left in the Cache."""
    name = unique_name("ckkill")
    conn = tique.connect(embedded_url)
    cur = conn.cursor()
    try:
        cur.execute(f"CREATE TABLE {name} (a INT, b VARCHAR(6), v INT, PRIMARY KEY (b, a))")
        conn.commit()
        keys = [(i, str(j)) for i in range(40) for j in range(40)]  # 1600: two batches
        conn.bulk_load(name, [(a, b, 0) for a, b in keys])
        cur.execute(f"UPDATE {name} SET v = a + 1")
        cur.execute(f"DELETE FROM {name} WHERE a = 3")
        cur.execute(f"INSERT INTO {name} VALUES (3, 'new', 5)")
        conn.commit()
        model = {(a, b): a + 1 for a, b in keys if a != 3}
        model[(3, "new")] = 5

        class Killed(Exception):
            pass

        def hook(at: str) -> None:
            if at == step:
                raise Killed(at)

        killed_raw = Database.get(embedded_url).connect_raw()
        try:
            with pytest.raises(Killed):
                Checkpointer(killed_raw, step_hook=hook).run_once()
        finally:
            killed_raw.close()
        cur.execute(f"SELECT COUNT(*), SUM(v) FROM {name}")
        assert cur.fetchone() == (len(model), sum(model.values()))  # readers never notice
        conn.rollback()
        other = Database.get(embedded_url).connect_raw()
        try:
            clean_run(Checkpointer(other), raw, name, f"after a kill at {step}")
        finally:
            other.close()
        rows = stored_rows(raw, name, "a, b, v")
        assert len(rows) == len(model) and {(a, b): v for a, b, v in rows} == model
    finally:
        conn.close()


def test_a_composite_key_named_like_the_scratch_columns_in_a_quoted_table(
    embedded_url: str, raw: RawConnection
) -> None:
    """Key columns named k0 and v (the scratch table's column and alias), of a table whose name needs quotes."""
    name = 'ck "we.ird" k0'
    quoted = '"ck ""we.ird"" k0"'
    conn = tique.connect(embedded_url)
    cur = conn.cursor()
    ckpt = Checkpointer(Database.get(embedded_url).connect_raw())
    try:
        cur.execute(f'CREATE TABLE {quoted} (k0 INT, v VARCHAR(3), "K0" INT, PRIMARY KEY (v, k0))')
        conn.commit()
        cur.execute(f"INSERT INTO {quoted} VALUES (1, %s, 0), (2, %s, 0), (1, %s, 0), (2, %s, 0)", ("2", "1", "1", "2"))
        conn.commit()
        report = ckpt.run_once()
        assert not report.errors, report.errors
        cur.execute(f'UPDATE {quoted} SET "K0" = 1 WHERE k0 = 1 AND v = %s', ("2",))
        cur.execute(f"DELETE FROM {quoted} WHERE k0 = 2 AND v = %s", ("1",))
        conn.commit()
        report = ckpt.run_once()
        assert not report.errors, report.errors
        got = sorted(tuple(r) for r in raw.execute(f'SELECT k0, v, "K0" FROM {storage(raw, name)}').rows)
        assert got == [(1, "1", 0), (1, "2", 1), (2, "2", 0)]
        cur.execute(f"DROP TABLE {quoted}")
        conn.commit()
    finally:
        ckpt.conn.close()
        conn.close()
