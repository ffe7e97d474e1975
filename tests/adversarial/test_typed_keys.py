"""Guarantee: keys are compared as the engine compares them. A key written as another Python type, with more
digits than its column keeps, or as -0.0 is the key the engine would store, so duplicates are refused and
concurrent writers of one key conflict - tique compares keys in Python, so its normalisation must equal the
engine's own CAST, which a property test checks for generated values."""

from __future__ import annotations

import datetime
import decimal
import random
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import tique
from tests.conftest import sized, start_serve
from tique.engine import open_engine
from tique.errors import DataError, IntegrityError, SerializationFailure
from tique.params import literal
from tique.rewrite.values import coerce, key_value

Connect = Callable[..., tique.Connection]


def _table(connect: Connect, unique_name: Callable[[str], str], key_type: str) -> str:
    name = unique_name("keys")
    connect().cursor().execute(f"CREATE TABLE {name} (k {key_type} PRIMARY KEY, v INT)")
    return name


def _insert(conn: tique.Connection, table: str, key: Any, v: int = 0) -> None:
    conn.cursor().execute(f"INSERT INTO {table} VALUES (%s, %s)", (key, v))


def _rows(conn: tique.Connection, table: str) -> list[tuple[Any, ...]]:
    cur = conn.cursor()
    cur.execute(f"SELECT k, v FROM {table} ORDER BY v")
    rows = cur.fetchall()
    conn.commit()
    return rows


@pytest.mark.parametrize(
    ("key_type", "first", "same_key"),
    [
        ("DATE", datetime.date(2020, 1, 1), datetime.datetime(2020, 1, 1, 12, 30)),
        ("TIMESTAMP(6)", datetime.datetime(2020, 1, 1, 12, 0, 0, 123456), "2020-01-01 12:00:00.123456"),
        ("TIMESTAMP(0)", datetime.datetime(2020, 1, 1, 12, 0, 1), "2020-01-01 12:00:00.6"),
        ("TIME(6)", datetime.time(12, 0, 0, 123456), "12:00:00.123456"),
        ("DOUBLE", 0.0, -0.0),
        ("DECIMAL(10,2)", decimal.Decimal("1.01"), decimal.Decimal("1.005")),
        ("DECIMAL(30,2)", decimal.Decimal("1.50"), "1.5"),
    ],
)
def test_a_key_written_differently_is_a_duplicate(
    connect: Connect, unique_name: Callable[[str], str], key_type: str, first: Any, same_key: Any
) -> None:
    table = _table(connect, unique_name, key_type)
    conn = connect()
    _insert(conn, table, first, 1)
    conn.commit()
    with pytest.raises(IntegrityError):
        _insert(conn, table, same_key, 2)
        conn.commit()
    conn.rollback()
    assert [r[1] for r in _rows(conn, table)] == [1]  # the committed row is still there, unchanged


@pytest.mark.parametrize(
    ("key_type", "key"),
    [
        ("TIMESTAMP(6)", datetime.datetime(2020, 1, 1, 12, 0, 0, 123456)),
        ("TIME(6)", datetime.time(23, 59, 59, 999999)),
        ("DECIMAL(30,2)", decimal.Decimal("1.50")),
    ],
)
def test_update_and_delete_find_an_exact_key(
    connect: Connect, unique_name: Callable[[str], str], key_type: str, key: Any
) -> None:
    table = _table(connect, unique_name, key_type)
    conn = connect()
    _insert(conn, table, key, 1)
    conn.commit()
    conn.cursor().execute(f"UPDATE {table} SET v = v + 1")
    conn.commit()
    assert _rows(conn, table) == [(key, 2)]  # updated in place: no second copy
    conn.cursor().execute(f"DELETE FROM {table} WHERE v = 2")
    conn.commit()
    assert _rows(conn, table) == []


def test_concurrent_zero_and_negative_zero_keys_conflict(connect: Connect, unique_name: Callable[[str], str]) -> None:
    table = _table(connect, unique_name, "DOUBLE")
    a, b = connect(), connect()
    _insert(a, table, 0.0, 1)
    _insert(b, table, -0.0, 2)
    a.commit()
    with pytest.raises((SerializationFailure, IntegrityError)):
        b.commit()
    b.rollback()
    assert _rows(a, table) == [(0.0, 1)]


def test_timestamp_literal_with_a_short_fraction(connect: Connect, unique_name: Callable[[str], str]) -> None:
    table = _table(connect, unique_name, "TIMESTAMP")
    conn = connect()
    conn.cursor().execute(f"INSERT INTO {table} VALUES ('2020-01-01 00:00:00.5', 1)")
    conn.commit()
    assert _rows(conn, table) == [(datetime.datetime(2020, 1, 1, 0, 0, 0, 500000), 1)]


# ---- tique's normalisation against the engine's CAST ------------------------------------------------------

_WIDE = decimal.Context(prec=100)
_DT = st.datetimes(datetime.datetime(1, 1, 2), datetime.datetime(9999, 12, 30))
INPUTS: dict[str, st.SearchStrategy[Any]] = {
    "DATE": st.one_of(st.dates(datetime.date(1, 1, 1), datetime.date(9999, 12, 31)), _DT),
    "TIMESTAMP": st.one_of(
        _DT, _DT.map(lambda d: d.isoformat(" ")), _DT.map(lambda d: d.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3])
    ),
    "TIMESTAMP(0)": st.one_of(_DT, _DT.map(lambda d: d.isoformat(" "))),
    "TIMESTAMP(3)": _DT,
    "TIME(6)": st.one_of(st.times(), st.times().map(lambda t: t.isoformat())),
    "TIME(2)": st.times(),
    "TIME": st.times().map(lambda t: t.isoformat()),
    "DOUBLE": st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-(2**60), 2**60)),
    "REAL": st.floats(-1e30, 1e30, allow_nan=False),
    "DECIMAL(10,2)": st.one_of(
        st.decimals(-99999999, 99999999, places=4),
        st.floats(-99999999, 99999999, allow_nan=False),
        st.integers(-99999999, 99999999),
    ),
    "DECIMAL(38,6)": st.integers(-(10**32) + 1, 10**32 - 1).map(lambda n: decimal.Decimal(n).scaleb(-7, _WIDE)),
    "INT": st.one_of(st.integers(-(2**31) + 1, 2**31 - 1), st.decimals(-1000, 1000, places=1)),
    "VARCHAR(10)": st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=10),
}


def _engine_text(raw: Any, value: Any, sql_type: str) -> str | None:
    return raw.execute(f"SELECT CAST(CAST({literal(value)} AS {sql_type}) AS VARCHAR(200))").scalar()  # type: ignore[no-any-return]


@pytest.fixture(params=["embedded", "server"])
def engine_url(request: pytest.FixtureRequest) -> str:
    return (
        request.getfixturevalue("embedded_url")
        if request.param == "embedded"
        else request.getfixturevalue("server").url
    )


@settings(
    max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate]
)
@given(data=st.data())
def test_normalisation_equals_the_engine_cast(engine_url: str, data: st.DataObject) -> None:
    sql_type = data.draw(st.sampled_from(sorted(INPUTS)))
    a, b = data.draw(INPUTS[sql_type]), data.draw(INPUTS[sql_type])
    engine = open_engine(engine_url)  # closed too: an embedded engine keeps a session of its own while open
    with closing(engine), closing(engine.connect()) as raw:
        try:
            mine_a, mine_b = coerce(a, sql_type, "k"), coerce(b, sql_type, "k")
        except DataError:
            return  # tique may refuse a value (24:00:00 after rounding...): refusing never corrupts
        # the normalised value is stored exactly as the engine stores the value as given
        assert _engine_text(raw, mine_a, sql_type) == _engine_text(raw, a, sql_type), (a, mine_a)
        # and two keys are equal in Python exactly when the engine finds them equal
        same = raw.execute(f"SELECT CAST({literal(a)} AS {sql_type}) = CAST({literal(b)} AS {sql_type})").scalar()
        assert (key_value(mine_a) == key_value(mine_b)) == bool(same), (a, b)


def test_tiny_wide_decimal_is_not_sent_as_a_double(connect: Connect, unique_name: Callable[[str], str]) -> None:
    value = decimal.Decimal("0.000000000000000000123456789012345678")  # 18 digits, scale 36
    table = _table(connect, unique_name, "DECIMAL(38,36)")
    conn = connect()
    _insert(conn, table, value, 1)
    conn.commit()
    assert _rows(conn, table) == [(value, 1)]


@pytest.mark.parametrize("key", [2**62 + 1, -(2**62) - 1])
def test_a_pending_big_integer_key_is_read_back(connect: Connect, unique_name: Callable[[str], str], key: int) -> None:
    table = _table(connect, unique_name, "BIGINT")
    conn = connect()
    _insert(conn, table, key, 1)  # buffered: a read of this key must send it first
    cur = conn.cursor()
    cur.execute(f"SELECT v FROM {table} WHERE k = %s", (key,))
    assert cur.fetchall() == [(1,)]
    conn.commit()


@pytest.mark.parametrize("insert_check", ["flush", "immediate"])
def test_a_microsecond_duplicate_is_found_by_either_check(
    connect: Connect, unique_name: Callable[[str], str], insert_check: str
) -> None:
    table, other = _table(connect, unique_name, "TIMESTAMP(6)"), _table(connect, unique_name, "TIME(6)")
    key, t = datetime.datetime(2020, 1, 1, 12, 0, 0, 123456), datetime.time(1, 2, 3, 999999)
    conn = connect(insert_check=insert_check)
    _insert(conn, table, key, 1)
    _insert(conn, other, t, 1)
    conn.commit()
    with pytest.raises(IntegrityError):
        _insert(conn, table, key, 2)
        _insert(conn, other, t, 2)  # two tables: the checks run in one query
        conn.commit()
    conn.rollback()
    assert _rows(conn, table) == [(key, 1)] and _rows(conn, other) == [(t, 1)]


@pytest.mark.parametrize("first, second", [(-0.0, 0.0), (0.0, -0.0)])
@pytest.mark.parametrize("checkpoint_first", [False, True])
def test_negative_zero_key_is_one_row_after_an_upsert(
    url: str, connect: Connect, unique_name: Callable[[str], str], checkpoint_first: bool, first: float, second: float
) -> None:
    """Found by the soak: a row with key -0.0, replaced by DELETE + INSERT of -0.0 in one transaction (after a
    checkpoint moved it to Storage, or still in the Cache), must stay one row: Storage and Cache must never hold
    the key two ways, or the snapshot's anti-join tells them apart."""
    from tique.checkpoint import Checkpointer

    table = _table(connect, unique_name, "DOUBLE")
    a = connect()
    _insert(a, table, first, 1)
    a.commit()
    engine = open_engine(url)
    raw = engine.connect()
    try:
        if checkpoint_first:
            Checkpointer(raw).run_once()
        a.cursor().execute(f"DELETE FROM {table} WHERE k = %s", (second,))  # a blind upsert, as the soak does
        _insert(a, table, second, 2)
        a.commit()
        assert [v for _, v in _rows(a, table)] == [2]
        cur = a.cursor()
        cur.execute(f"SELECT COUNT(*), SUM(v) FROM {table}")  # a full scan: the analytical snapshot
        assert tuple(cur.fetchone()) == (1, 2)
        Checkpointer(raw).run_once()
        assert [v for _, v in _rows(a, table)] == [2]
    finally:
        engine.close()  # closes raw and the session the embedded engine keeps for itself


def _zero_round(cur: Any, rng: random.Random, model: dict[float, int], i: int) -> dict[float, int]:
    """One transaction of the soak's kind on keys 0.0 .. 0.5 (key 0.0 written as -0.0 half the time); returns the
    model after it. A write through key -0.0 is checked in its own snapshot, through key 0.0."""
    keys = [j / 10 for j in range(6)]
    op = rng.choice(["put", "put", "upd", "del", "range", "many"])
    k = rng.choice(keys)
    written = -0.0 if k == 0 and rng.random() < 0.5 else k
    new = dict(model)
    if op == "put" or (op == "upd" and k not in model):
        cur.execute("DELETE FROM kzero WHERE k = %s", (written,))
        cur.execute("INSERT INTO kzero VALUES (%s, %s)", (written, i))
        new[k] = i
    elif op == "upd":
        cur.execute("UPDATE kzero SET v = %s WHERE k = %s", (i, written))
        new[k] = i
    elif op == "del":
        cur.execute("DELETE FROM kzero WHERE k = %s", (written,))
        new.pop(k, None)
    elif op == "range":
        lo, hi = sorted(rng.sample(keys, 2))
        cur.execute("DELETE FROM kzero WHERE k >= %s AND k <= %s", (lo, hi))
        new = {key: v for key, v in model.items() if not lo <= key <= hi}
    else:
        free = [key for key in keys if key not in model]
        if len(free) < 2:
            return model
        two = rng.sample(free, 2)
        cur.execute("INSERT INTO kzero VALUES (%s, %s), (%s, %s)", (two[0], i, two[1], i))
        new.update({key: i for key in two})
    if written == 0.0 and op in ("put", "upd", "del"):
        cur.execute("SELECT v FROM kzero WHERE k = %s", (0.0,))
        assert cur.fetchall() == ([(new[0.0],)] if 0.0 in new else []), f"round {i}: {op} of key {written} missed"
    return new


def test_negative_zero_parameter_finds_a_stored_zero_key(tmp_path: Path) -> None:
    """Found by the soak: MonetDB 11.41 hashes a DOUBLE by its bits, and once the Cache's key column has a hash
    ``WHERE k = -0.0`` misses the stored 0.0: a blind upsert of key -0.0 deleted nothing and its INSERT found a
    duplicate (or an UPDATE of key -0.0 was lost). When the engine builds that hash depends on the checkpointer's
    timing, so this replays the soak's transactions (seeded, paced as the soak's client) for a while."""
    server = start_serve(tmp_path / "db", args=("--checkpoint-interval", "0.05"))
    try:
        conn = tique.connect(server.url)
        cur = conn.cursor()
        cur.execute("CREATE TABLE kzero (k DOUBLE PRIMARY KEY, v INT)")
        conn.commit()
        rng, model = random.Random(3), {}
        deadline = time.monotonic() + 30
        for i in range(sized(200, 400)):
            if time.monotonic() > deadline:
                break
            model = _zero_round(cur, rng, model, i)
            conn.commit()
            time.sleep(rng.random() * 0.03)
            cur.execute("SELECT k, v FROM kzero")  # a full scan, as the soak's checker reads
            rows = cur.fetchall()
            conn.commit()
            assert sorted((k + 0.0, v) for k, v in rows) == sorted(model.items()), f"after round {i}"
        conn.close()
    finally:
        server.stop()


def test_update_set_keeps_negative_zero(connect: Connect, unique_name: Callable[[str], str]) -> None:
    """-0.0 is sent as 0.0 only where it is compared (WHERE), never where it is stored (an UPDATE's SET)."""
    import math

    table = _table(connect, unique_name, "INT")
    conn = connect()
    cur = conn.cursor()
    _insert(conn, table, 1, 0)
    conn.commit()
    cur.execute(f"ALTER TABLE {table} ADD COLUMN d DOUBLE")
    cur.execute(f"UPDATE {table} SET d = %s WHERE k = %s", (-0.0, 1))
    conn.commit()
    cur.execute(f"SELECT d FROM {table}")
    (value,) = cur.fetchone()
    assert value == 0.0 and math.copysign(1.0, value) == -1.0
