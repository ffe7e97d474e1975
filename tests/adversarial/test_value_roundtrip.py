"""Guarantee: every value type tique accepts round-trips exactly - value and Python type - through INSERT,
COMMIT, read, an UPDATE of another column and a reopen of the database, on both engines, and what tique stores
is what MonetDB itself stores for the same value in a plain table.

Each row goes into a tique table and into its plain twin (``-- tique: plain``, left to MonetDB). Python values
are compared with the generated ones; the engine's own text of each stored value (``CAST(c AS VARCHAR)``) is
compared with the twin's, so a value the adapter reads wrongly on both sides is caught as well.
"""

from __future__ import annotations

import datetime
import decimal
import itertools
import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import tique
from tests.adversarial._values import TYPES, edge_rows, row_strategy, same
from tests.conftest import ROOT, start_serve

COLUMNS = ", ".join(f"{t.column} {t.sql_type}" for t in TYPES)
NAMES = ", ".join(t.column for t in TYPES)
TEXTS = ", ".join(f"CAST({t.column} AS VARCHAR(200))" for t in TYPES)
HOLES = ", ".join("%s" for _ in TYPES)
_ids = itertools.count(1)
_made: set[str] = set()


def _tables(conn: tique.Connection, url: str) -> None:
    """The tique table and its plain twin, once per database (tests share the session's databases)."""
    if url in _made:
        return
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE IF NOT EXISTS vals (id INT PRIMARY KEY, touch INT, {COLUMNS})")
    cur.execute(f"CREATE TABLE IF NOT EXISTS vals_twin (id INT PRIMARY KEY, touch INT, {COLUMNS}) -- tique: plain")
    _made.add(url)


def _insert(conn: tique.Connection, rows: list[tuple[Any, ...]]) -> list[int]:
    ids = [next(_ids) for _ in rows]
    cur = conn.cursor()
    for table in ("vals", "vals_twin"):
        cur.executemany(
            f"INSERT INTO {table} (id, touch, {NAMES}) VALUES (%s, 0, {HOLES})", [(i, *r) for i, r in zip(ids, rows)]
        )
    conn.commit()
    return ids


def _check(conn: tique.Connection, ids: list[int], rows: list[tuple[Any, ...]], when: str) -> None:
    cur = conn.cursor()
    id_list = ", ".join(str(i) for i in ids)
    cur.execute(f"SELECT id, {NAMES} FROM vals WHERE id IN ({id_list}) ORDER BY id")
    got = cur.fetchall()
    assert [r[0] for r in got] == ids, when
    for expected, row in zip(rows, got):
        for t, e, g in zip(TYPES, expected, row[1:]):
            assert same(e, g), f"{when}: {t.sql_type} column {t.column}: wrote {e!r}, read {g!r}"
    cur.execute(f"SELECT id, {TEXTS} FROM vals WHERE id IN ({id_list}) ORDER BY id")
    stored = cur.fetchall()
    cur.execute(f"SELECT id, {TEXTS} FROM vals_twin WHERE id IN ({id_list}) ORDER BY id")
    twin = cur.fetchall()
    for mine, theirs in zip(stored, twin):
        for t, a, b in zip(TYPES, mine[1:], theirs[1:]):
            assert a == b, f"{when}: {t.sql_type} column {t.column}: tique stored {a!r}, MonetDB stores {b!r}"
    conn.commit()


def _roundtrip(url: str, rows: list[tuple[Any, ...]]) -> None:
    with closing(tique.connect(url)) as conn:
        _tables(conn, url)
        ids = _insert(conn, rows)
        _check(conn, ids, rows, "after commit")
        id_list = ", ".join(str(i) for i in ids)
        conn.cursor().execute(f"UPDATE vals SET touch = touch + 1 WHERE id IN ({id_list})")
        conn.commit()
        _check(conn, ids, rows, "after an UPDATE of another column")
        cur = conn.cursor()
        cur.execute(f"SELECT COUNT(*), SUM(touch) FROM vals WHERE id IN ({id_list})")
        assert cur.fetchone() == (len(ids), len(ids))  # no row duplicated or lost by the UPDATE
        conn.commit()


def test_edge_values_round_trip(url: str) -> None:
    _roundtrip(url, edge_rows())


@settings(
    max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate]
)
@given(rows=st.lists(row_strategy(), min_size=1, max_size=3))
def test_generated_values_round_trip(url: str, rows: list[tuple[Any, ...]]) -> None:
    _roundtrip(url, rows)


# ---- reopen -------------------------------------------------------------------------------------------------


def _encode(value: Any) -> Any:
    if isinstance(value, bytes):
        return ["bytes", value.hex()]
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return [type(value).__name__, value.isoformat()]
    if isinstance(value, decimal.Decimal):
        return ["decimal", str(value)]
    if isinstance(value, float):
        return ["float", value.hex()]
    return value


def _decode(value: Any) -> Any:
    if not isinstance(value, list):
        return value
    kind, text = value
    return {
        "bytes": bytes.fromhex,
        "datetime": datetime.datetime.fromisoformat,
        "date": datetime.date.fromisoformat,
        "time": datetime.time.fromisoformat,
        "decimal": decimal.Decimal,
        "float": float.fromhex,
    }[kind](text)


CLIENT = """
import json, sys
sys.path.insert(0, {root!r})
import tique
from tests.adversarial.test_value_roundtrip import _decode, _encode, NAMES, COLUMNS, HOLES
url, action = sys.argv[1], sys.argv[2]
conn = tique.connect(url)
cur = conn.cursor()
if action == "write":
    cur.execute(f"CREATE TABLE vals (id INT PRIMARY KEY, touch INT, {{COLUMNS}})")
    rows = [[_decode(v) for v in row] for row in json.loads(sys.stdin.read())]
    insert = f"INSERT INTO vals (id, touch, {{NAMES}}) VALUES (%s, 0, {{HOLES}})"
    cur.executemany(insert, [(i, *r) for i, r in enumerate(rows)])
    conn.commit()
    cur.execute("UPDATE vals SET touch = touch + 1")
    conn.commit()
else:
    cur.execute(f"SELECT id, {{NAMES}} FROM vals ORDER BY id")
    print(json.dumps([[_encode(v) for v in row[1:]] for row in cur.fetchall()]))
conn.close()
"""


def _client(url: str, action: str, stdin: str = "") -> str:
    done = subprocess.run(
        [sys.executable, "-c", CLIENT.format(root=str(ROOT)), url, action],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _reopened(write_url: str, read_url: str, restart: Iterator[None]) -> None:
    rows = edge_rows()
    _client(write_url, "write", json.dumps([[_encode(v) for v in row] for row in rows]))
    next(restart)  # the database is closed and opened again
    got = [[_decode(v) for v in row] for row in json.loads(_client(read_url, "read"))]
    assert len(got) == len(rows)
    for expected, row in zip(rows, got):
        for t, e, g in zip(TYPES, expected, row):
            assert same(e, g), f"after reopen: {t.sql_type} column {t.column}: wrote {e!r}, read {g!r}"


def test_values_survive_reopen_embedded(tmp_path: Path) -> None:
    url = f"monetdbe://{tmp_path / 'db'}"

    def restart() -> Iterator[None]:
        yield  # each client is its own process: the database is opened anew for the read

    _reopened(url, url, restart())


def test_values_survive_reopen_served(tmp_path: Path) -> None:
    server = start_serve(tmp_path / "db")
    urls = [server.url]

    def restart() -> Iterator[None]:
        server.stop()
        again = start_serve(tmp_path / "db", port=server.port)
        urls.append(again.url)
        try:
            yield
        finally:
            again.stop()

    steps = restart()
    try:
        _reopened(server.url, server.url, steps)
    finally:
        steps.close()
        server.stop()


def test_hugeint_and_wide_decimal_expressions(url: str) -> None:
    with closing(tique.connect(url)) as conn:
        _tables(conn, url)
        ids = _insert(conn, [tuple(None for _ in TYPES)])
        cur = conn.cursor()
        cur.execute(
            "SELECT CAST(%s AS HUGEINT), CAST(%s AS DECIMAL(38,2)) FROM vals WHERE id = %s",
            (2**100, decimal.Decimal("1.50"), ids[0]),
        )
        assert cur.fetchall() == [(2**100, decimal.Decimal("1.50"))]
        conn.commit()


# ---- the paths that write back what they read ---------------------------------------------------------------

EXACT = (decimal.Decimal("1.50"), datetime.datetime(2020, 1, 1, 12, 0, 0, 123456), datetime.time(23, 59, 59, 999999))


def test_update_of_another_column_keeps_microseconds_and_wide_decimals(url: str, unique_name: Any) -> None:
    table = unique_name("exact")
    with closing(tique.connect(url)) as conn:
        cur = conn.cursor()
        cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, touch INT, d DECIMAL(20,2), ts TIMESTAMP, t TIME(6))")
        cur.execute(f"INSERT INTO {table} VALUES (1, 0, %s, %s, %s)", EXACT)
        conn.commit()
        cur.execute(f"UPDATE {table} SET touch = touch + 1")
        conn.commit()
        cur.execute(f"SELECT d, ts, t FROM {table}")
        assert cur.fetchall() == [EXACT]
        conn.commit()


def test_reads_and_insert_select_of_temporal_values_are_exact(url: str, unique_name: Any) -> None:
    table, copy = unique_name("reads"), unique_name("copy")
    with closing(tique.connect(url)) as conn:
        cur = conn.cursor()
        for name in (table, copy):
            cur.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, d DECIMAL(20,2), ts TIMESTAMP, t TIME(6))")
        cur.execute(f"INSERT INTO {table} VALUES (1, %s, %s, %s)", EXACT)
        conn.commit()
        cur.execute(f"INSERT INTO {copy} SELECT * FROM {table} ORDER BY id LIMIT 5")
        conn.commit()
        for query in (
            f"SELECT d, ts, t FROM {copy}",
            f"SELECT x.d, x.ts AS ts, x.t FROM {table} AS x",
            f"SELECT MAX(d), MAX(ts), MIN(t) FROM {table}",
            f"SELECT CAST(d AS DECIMAL(20,2)), CAST(ts AS TIMESTAMP), CAST(t AS TIME(6)) FROM {table}",
        ):
            cur.execute(query)
            assert cur.fetchall() == [EXACT], query
            assert [d[1] for d in cur.description] == ["decimal", "timestamp", "time"], query
        cur.execute(f"SELECT * FROM {table}")
        assert cur.fetchall() == [(1, *EXACT)]
        conn.commit()


def test_order_by_a_temporal_output_sorts_by_time(url: str, unique_name: Any) -> None:
    table = unique_name("order")
    early, late = datetime.datetime(999, 1, 1, 0, 0, 0, 1), datetime.datetime(2020, 1, 1, 0, 0, 0, 2)
    with closing(tique.connect(url)) as conn:
        cur = conn.cursor()
        cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, ts TIMESTAMP)")
        cur.executemany(f"INSERT INTO {table} VALUES (%s, %s)", [(1, late), (2, early)])
        conn.commit()
        for query in (f"SELECT ts FROM {table} ORDER BY ts", f"SELECT ts AS x FROM {table} AS q ORDER BY x"):
            cur.execute(query)
            assert cur.fetchall() == [(early,), (late,)], query
        conn.commit()


def test_star_and_quoted_aliases_read_exactly(url: str, unique_name: Any) -> None:
    table = unique_name("star")
    value = datetime.datetime(2020, 1, 1, 12, 0, 0, 654321)
    with closing(tique.connect(url)) as conn:
        cur = conn.cursor()
        cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, ts TIMESTAMP(6))")
        cur.execute(f"INSERT INTO {table} VALUES (1, %s)", (value,))
        conn.commit()
        for query in (
            f'SELECT "Q".* FROM {table} AS "Q"',
            f"SELECT Q.* FROM {table} AS Q ORDER BY ts",
            f'SELECT * FROM {table} AS "Q" JOIN {table} AS r ON "Q".id = r.id',
        ):
            cur.execute(query)
            assert cur.fetchall()[0][1] == value, query
        conn.commit()


# ---- what is refused instead of stored wrongly ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql_type", "value"),
    [
        ("DOUBLE", float("nan")),  # NaN is MonetDB's NULL for floats
        ("DOUBLE", float("inf")),
        ("REAL", 1e39),  # beyond 32 bits
        ("TIME", "23:59:59.6"),  # MonetDB would round it to 24:00:00, which it cannot read back
        ("TIMESTAMP(0)", datetime.datetime(2020, 12, 31, 23, 59, 59, 600000)),
        ("DECIMAL(5,2)", decimal.Decimal("1234.5")),
    ],
)
def test_values_the_engine_cannot_keep_are_refused(url: str, unique_name: Any, sql_type: str, value: Any) -> None:
    table = unique_name("refused")
    with closing(tique.connect(url)) as conn:
        cur = conn.cursor()
        cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, x {sql_type})")
        with pytest.raises(tique.DataError):
            cur.execute(f"INSERT INTO {table} VALUES (1, %s)", (value,))
        conn.rollback()
        cur.execute(f"SELECT COUNT(*) FROM {table}")
        assert cur.fetchone() == (0,)
        conn.commit()


@pytest.mark.parametrize("sql_type", ["UUID", "JSON", "INTERVAL SECOND", "TIMESTAMP WITH TIME ZONE", "INET"])
def test_types_tique_cannot_keep_exact_are_refused_at_create(url: str, unique_name: Any, sql_type: str) -> None:
    with closing(tique.connect(url)) as conn:
        cur = conn.cursor()
        with pytest.raises(tique.NotSupportedError, match="column 'x'"):
            cur.execute(f"CREATE TABLE {unique_name('types')} (id INT PRIMARY KEY, x {sql_type})")
        cur.execute(f"CREATE TABLE {unique_name('types')} (id INT PRIMARY KEY, x {sql_type}) -- tique: plain")
