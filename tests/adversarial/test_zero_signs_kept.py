"""Guarantee: a floating-point zero keeps its sign through every statement tique writes with several values.

MonetDB 11.41's ``constants`` optimizer (in default_pipe, sequential_pipe and no_mitosis_pipe; not in
minimal_pipe or minimal_fast) merges a statement's equal constants, and it finds -0.0 equal to 0.0: a
multi-row ``INSERT ... VALUES`` holding both zeros of REAL or DOUBLE stores one sign for all of them. tique's
own multi-value writers (the flush of buffered rows, the checkpointer's Storage writes, bulk_load, CREATE TABLE
AS ... WITH DATA) join values of separate client statements or transactions, so without care a client's two
single-row INSERTs, each exact in plain MonetDB, came back with one sign.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from contextlib import closing
from typing import Any

import pytest

import tique
from tests.physical import storage
from tique.checkpoint import Checkpointer
from tique.engine import open_engine
from tique.engine.base import RawConnection

FLOATS = ("r1", "r2", "d1", "d2")  # two REAL, two DOUBLE
COLUMNS = "id INT PRIMARY KEY, r1 REAL, r2 REAL, d1 DOUBLE, d2 DOUBLE"
TEXTS = ", ".join(f"CAST({c} AS VARCHAR(30))" for c in FLOATS)


def _zeros(rng: random.Random, n: int) -> list[tuple[float, ...]]:
    """Rows of zeros of random signs (and now and then a one), both signs in every column."""
    rows = [tuple(rng.choice((0.0, -0.0, 0.0, -0.0, 1.5)) for _ in FLOATS) for _ in range(n)]
    rows[0], rows[1] = (0.0, -0.0, 0.0, -0.0), (-0.0, 0.0, -0.0, 0.0)  # a row of mixed signs too
    return rows


def _text(value: float) -> str:
    return "-0" if value == 0 and math.copysign(1, value) < 0 else ("0" if value == 0 else "1.5")


def _expected(rows: dict[int, tuple[float, ...]]) -> list[tuple[Any, ...]]:
    return [(i, *(_text(v) for v in row)) for i, row in sorted(rows.items())]


def _read(cur: Any, table: str) -> list[tuple[Any, ...]]:
    cur.execute(f"SELECT id, {TEXTS} FROM {table} ORDER BY id")
    return [tuple(r) for r in cur.fetchall()]


def _python_signs(cur: Any, table: str) -> list[tuple[Any, ...]]:
    """The values as the adapter hands them to Python, as the engine's text would print them."""
    cur.execute(f"SELECT id, {', '.join(FLOATS)} FROM {table} ORDER BY id")
    return [(r[0], *(_text(v) for v in r[1:])) for r in cur.fetchall()]


@pytest.fixture
def raw_of(url: str) -> Iterator[Callable[[], RawConnection]]:
    engine = open_engine(url)
    opened: list[RawConnection] = []

    def make() -> RawConnection:
        opened.append(engine.connect())
        return opened[-1]

    yield make
    for conn in opened:
        conn.close()


def test_the_engine_merges_zero_constants_on_its_default_pipeline(raw_of: Callable[[], RawConnection]) -> None:
    """The kernel fact the rest guards against; should MonetDB fix it, this test says so (and the guard can go)."""
    raw = raw_of()
    name = f"zfact_{random.randrange(10**9)}"
    raw.execute(f"CREATE TABLE {name} (id INT, r REAL, d DOUBLE)")
    try:
        raw.execute("SET optimizer = 'default_pipe'")
        raw.execute(f"INSERT INTO {name} VALUES (1, 0.0e0, 0.0e0), (2, -0.0e0, -0.0e0)")
        raw.execute("SET optimizer = 'minimal_fast'")
        raw.execute(f"INSERT INTO {name} VALUES (3, 0.0e0, 0.0e0), (4, -0.0e0, -0.0e0)")
        got = raw.execute(f"SELECT id, CAST(r AS VARCHAR(9)), CAST(d AS VARCHAR(9)) FROM {name} ORDER BY id").rows
        merged, kept = got[:2], got[2:]
        assert merged[0][1:] == merged[1][1:], f"default_pipe no longer merges zero signs: {merged}"
        assert kept == [(3, "0", "0"), (4, "-0", "-0")]
    finally:
        raw.execute("SET optimizer = 'default_pipe'")
        raw.execute(f"DROP TABLE {name}")


@pytest.mark.parametrize("pipeline", ["default", "short", "after_an_analytical_read"])
def test_flushes_and_checkpoints_keep_zero_signs(
    url: str, unique_name: Callable[[str], str], raw_of: Callable[[], RawConnection], pipeline: str
) -> None:
    rng = random.Random(len(pipeline))
    table = unique_name("zsign")
    settings: dict[str, Any] = {"short_pipeline": None} if pipeline == "default" else {}
    with closing(tique.connect(url, **settings)) as conn:
        cur = conn.cursor()
        cur.execute(f"CREATE TABLE {table} ({COLUMNS})")
        conn.commit()
        rows = dict(enumerate(_zeros(rng, 40)))
        holes = ", ".join(["%s"] * (1 + len(FLOATS)))
        if pipeline == "after_an_analytical_read":  # the session is on the default pipeline at the flush
            cur.execute(f"SELECT COUNT(*), SUM(d1) FROM {table} GROUP BY r1")
        cur.executemany(f"INSERT INTO {table} VALUES ({holes})", [(i, *r) for i, r in rows.items()])
        assert _read(cur, table) == _expected(rows), "own pending rows, flushed for the read"
        conn.commit()
        assert _read(cur, table) == _expected(rows)
        assert _python_signs(cur, table) == _expected(rows)

        # updates of every column of half the rows, signs flipped, in one transaction
        for i in list(rows)[::2]:
            rows[i] = tuple(-v if v == 0 else v for v in rows[i])
            cur.execute(f"UPDATE {table} SET {', '.join(f'{c} = %s' for c in FLOATS)} WHERE id = %s", (*rows[i], i))
        if pipeline == "after_an_analytical_read":
            cur.execute(f"SELECT COUNT(*), SUM(d1) FROM {table} GROUP BY r1")
        conn.commit()
        assert _read(cur, table) == _expected(rows), "after the updates"

        raw = raw_of()
        report = Checkpointer(raw).run_once()
        assert not report.errors, report.errors
        assert _read(_RawCursor(raw), storage(raw, table)) == _expected(rows), "Storage after the checkpointer"
        assert _read(cur, table) == _expected(rows), "after the checkpointer"
        conn.commit()


class _RawCursor:
    """Enough of a cursor over a raw engine connection for _read."""

    def __init__(self, raw: RawConnection) -> None:
        self.raw = raw
        self.rows: list[tuple[Any, ...]] = []

    def execute(self, sql: str) -> None:
        self.rows = self.raw.execute(sql).rows

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self.rows


def test_bulk_load_keeps_zero_signs(url: str, unique_name: Callable[[str], str]) -> None:
    table = unique_name("zbulk")
    rows = dict(enumerate(_zeros(random.Random(7), 30)))
    with closing(tique.connect(url)) as conn:
        cur = conn.cursor()
        cur.execute(f"CREATE TABLE {table} ({COLUMNS})")
        conn.commit()
        cur.execute(f"SELECT COUNT(*), SUM(d1) FROM {table} GROUP BY r1")  # the default pipeline at the load
        conn.commit()
        assert conn.bulk_load(table, [(i, *r) for i, r in rows.items()]) == len(rows)
        assert _read(cur, table) == _expected(rows)
        conn.commit()


def test_create_table_as_with_data_keeps_zero_signs(url: str, unique_name: Callable[[str], str]) -> None:
    source, copy = unique_name("zsrc"), unique_name("zcopy")
    rows = dict(enumerate(_zeros(random.Random(8), 30)))
    with closing(tique.connect(url)) as conn:
        cur = conn.cursor()
        cur.execute(f"CREATE TABLE {source} ({COLUMNS})")
        conn.commit()
        holes = ", ".join(["%s"] * (1 + len(FLOATS)))
        cur.executemany(f"INSERT INTO {source} VALUES ({holes})", [(i, *r) for i, r in rows.items()])
        conn.commit()
        cur.execute(f"SELECT COUNT(*), SUM(d1) FROM {source} GROUP BY r1")
        cur.execute(f"CREATE TABLE {copy} AS SELECT * FROM {source} WITH DATA")
        conn.commit()
        assert _read(cur, copy) == _expected(rows)
        conn.commit()
