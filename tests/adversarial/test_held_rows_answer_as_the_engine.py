"""Rows a transaction holds answer exactly as the engine would (held_rows, tique/known_rows.py).

A transaction answers a read of rows by their whole key, and computes an UPDATE of one row by its key, from the
rows it already read whole or wrote. Differential: the same random program runs on two tique tables, one with
held rows and one without (every statement in the engine), with another session committing between the
statements: every result (rows, Python types, description, rowcount) or error, every COMMIT's outcome and the
tables after each commit must be the same, for every value type tique keeps, and parameters of the wrong type
or of more precision than their column (which the engine converts by its own rules) as well.
"""

from __future__ import annotations

import datetime
import decimal
import os
import random
from collections.abc import Callable
from typing import Any

import pytest

import tique
from tests.adversarial._values import TYPES, ValueType, same
from tests.conftest import sized

KEYS = [("DECIMAL(9,2)", [decimal.Decimal("1.50"), decimal.Decimal("2"), decimal.Decimal("7.25")]), ("INT", [1, 2, 3])]
NUMBERS = ("TINYINT", "SMALLINT", "INT", "BIGINT", "HUGEINT", "DECIMAL", "DOUBLE", "REAL")


def random_value(rng: random.Random, vt: ValueType, odd: float = 0.1) -> Any:
    """An edge value, NULL, or a small value of the column's type; with probability ``odd`` one of another Python
    type or of more precision than the column keeps."""
    roll = rng.random()
    if roll < 0.1:
        return None
    if roll < 0.1 + odd:  # the engine converts these
        return rng.choice([7, "12", decimal.Decimal("3.14159"), 2.5, datetime.date(2020, 5, 17)])
    if roll < 0.4 + odd:
        return rng.choice(vt.edges)
    base = vt.sql_type.split("(")[0]
    if base in ("TINYINT", "SMALLINT", "INT", "BIGINT", "HUGEINT"):
        return rng.randint(-100, 100)
    if base == "DECIMAL":
        return decimal.Decimal(rng.randint(-99999, 99999)).scaleb(-rng.randint(0, 4))
    if base in ("DOUBLE", "REAL"):
        return rng.choice([0.5, -1.25, 1e10, -0.0])
    if base == "BOOLEAN":
        return rng.random() < 0.5
    if base == "BLOB":
        return bytes([rng.randint(1, 255) for _ in range(3)])
    if base == "DATE":
        return datetime.date(2000 + rng.randint(0, 30), rng.randint(1, 12), rng.randint(1, 28))
    if base == "TIME":
        return datetime.time(rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59), rng.choice([0, 500, 999999]))
    if base == "TIMESTAMP":
        return datetime.datetime(2020, rng.randint(1, 12), 3, 4, 5, 6, rng.choice([0, 500000, 123456]))
    return "".join(rng.choice("ab'é") for _ in range(rng.randint(0, 4)))


class Program:
    """Random statements over keys (k1, k2), in the SQL both tables run; the table name is filled in per twin."""

    def __init__(self, rng: random.Random, key_type: str, key_values: list[Any]) -> None:
        self.rng = rng
        self.key_values = key_values
        self.types = TYPES

    def key(self) -> tuple[Any, Any]:
        k2 = self.rng.choice(self.key_values)
        if self.rng.random() < 0.15 and isinstance(k2, decimal.Decimal):
            # more precision than the key column (rounding to a key that exists): the engine's comparison decides
            k2 = self.rng.choice([decimal.Decimal("1.504"), decimal.Decimal("1.495"), decimal.Decimal("2.001")])
        elif self.rng.random() < 0.05:
            k2 = str(k2)  # a string: the engine converts it
        return self.rng.randint(1, 3), k2

    def columns(self, plain: bool = False) -> list[ValueType]:
        """Some columns; ``plain``: of types tique computes new values of itself (not REAL, not BLOB)."""
        kinds = [t for t in self.types if not plain or t.sql_type not in ("REAL", "BLOB")]
        return self.rng.sample(kinds, self.rng.randint(1, 4))

    def read(self) -> tuple[str, tuple[Any, ...]]:
        out = "*" if self.rng.random() < 0.2 else ", ".join(c.column for c in self.columns())
        k1, k2 = self.key()
        if self.rng.random() < 0.3:
            other = self.rng.randint(1, 3)
            return f"SELECT {out} FROM {{t}} WHERE k1 IN (%s, %s) AND k2 = %s", (k1, other, k2)
        return f"SELECT {out} FROM {{t}} WHERE k2 = %s AND k1 = %s", (k2, k1)

    def update(self, key: tuple[Any, Any] | None = None) -> tuple[str, tuple[Any, ...]]:
        sets: list[str] = []
        params: list[Any] = []
        plain = self.rng.random() < 0.7
        for vt in self.columns(plain):
            roll = self.rng.random()
            base = vt.sql_type.split("(")[0]
            if roll < 0.35 and base in NUMBERS:
                sets.append(f"{vt.column} = {vt.column} {self.rng.choice('+-')} %s")
                operands: list[Any] = [1, 3, -7] + ([decimal.Decimal("0.25"), decimal.Decimal("1.005")] * 2)
                if not plain or base not in ("DECIMAL", "DOUBLE", "REAL"):
                    operands = [1, 3, -7] if plain else [*operands, 2.5, None, decimal.Decimal("0.5")]
                params.append(self.rng.choice(operands))
            elif roll < 0.45:
                same_type = [t for t in self.types if t.sql_type == vt.sql_type and t is not vt]
                source = same_type[0].column if same_type else vt.column
                sets.append(f"{vt.column} = {source}")
            elif roll < 0.5 and base in NUMBERS:
                sets.append(f"{vt.column} = ({vt.column} + 1)")
            else:
                sets.append(f"{vt.column} = %s")
                params.append(random_value(self.rng, vt, odd=0.02 if plain else 0.2))
        k1, k2 = key or self.key()
        return f"UPDATE {{t}} SET {', '.join(sets)} WHERE k1 = %s AND k2 = %s", (*params, k1, k2)

    def insert(self) -> tuple[str, tuple[Any, ...]]:
        values = [random_value(self.rng, vt) for vt in self.types]
        names = ", ".join(vt.column for vt in self.types)
        marks = ", ".join(["%s"] * (2 + len(values)))
        return f"INSERT INTO {{t}} (k1, k2, {names}) VALUES ({marks})", (*self.key(), *values)

    def delete(self) -> tuple[str, tuple[Any, ...]]:
        return "DELETE FROM {t} WHERE k1 = %s AND k2 = %s", self.key()

    def read_then_update(self) -> list[tuple[str, tuple[Any, ...]]]:
        """A row read, then updated, in a few fixed shapes (as TPC-C's NewOrder does): each read learns to read
        the whole row."""
        k1, k2 = self.key()
        shape = self.rng.randrange(3)
        out = ", ".join(t.column for t in self.types[shape::5])
        read = (f"SELECT {out} FROM {{t}} WHERE k1 = %s AND k2 = %s", (k1, k2))
        again = self.key() if self.rng.random() < 0.2 else (k1, k2)  # maybe a key that only rounds to it
        return [read, self.update(again), (read[0], again)]

    def statements(self) -> list[tuple[str, tuple[Any, ...]]]:
        if self.rng.random() < 0.45:
            return self.read_then_update()
        pick: Callable[[], tuple[str, tuple[Any, ...]]] = self.rng.choices(
            [self.read, self.update, self.insert, self.delete], weights=[45, 35, 12, 8]
        )[0]
        return [pick()]


def outcome(cur: Any, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...]:
    try:
        cur.execute(sql, params)
    except tique.Error as exc:
        return ("error", type(exc).__name__)
    if cur.description is None:
        return ("done", cur.rowcount)
    rows = sorted(cur.fetchall(), key=repr)
    return ("rows", [tuple(d[:2]) + tuple(d[4:6]) for d in cur.description], rows, cur.rowcount)


def assert_same(held: tuple[Any, ...], engine: tuple[Any, ...], what: str) -> None:
    assert held[0] == engine[0] and held[1] == engine[1], (what, held, engine)
    if held[0] == "rows":
        assert held[3] == engine[3] and len(held[2]) == len(engine[2]), (what, held, engine)
        for h, e in zip(held[2], engine[2]):
            assert all(same(x, y) for x, y in zip(e, h)), (what, h, e)


def contents(conn: tique.Connection, table: str) -> list[tuple[Any, ...]]:
    cur = conn.cursor()
    cur.execute(f"SELECT * FROM {table} ORDER BY k1, k2")
    rows = cur.fetchall()
    conn.commit()
    return rows


# (key type, seed, when inserted keys are checked): a table keyed by an INT and a DECIMAL, or by two INTs.
# TIQUE_HELD_ROWS_SEEDS=N runs N seeds of each instead (a long run). Each program is STEPS steps long.
LONG = int(os.environ.get("TIQUE_HELD_ROWS_SEEDS", "0"))
STEPS = sized(45, 160)
RUNS = [(0, 0, "immediate"), (0, 1, "flush"), (1, 2, "immediate"), (1, 3, "flush")]
if LONG:
    RUNS = [(k, 100 + n, check) for n in range(LONG) for k in (0, 1) for check in ("immediate", "flush")]


@pytest.mark.parametrize(("key", "seed", "insert_check"), RUNS)
def test_held_rows_answer_as_the_engine(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str], key: int, seed: int,
    insert_check: str,
) -> None:  # fmt: skip
    key_type, key_values = KEYS[key]
    names = {"held": unique_name("held"), "engine": unique_name("engine")}
    columns = ", ".join(f"{vt.column} {vt.sql_type}" for vt in TYPES)
    setup = connect()
    for table in names.values():
        setup.cursor().execute(f"CREATE TABLE {table} (k1 INT, k2 {key_type}, {columns}, PRIMARY KEY (k1, k2))")
    setup.commit()
    mine = {side: connect(held_rows=side == "held", insert_check=insert_check) for side in ("held", "engine")}
    other = {side: connect(held_rows=side == "held", insert_check=insert_check) for side in ("held", "engine")}
    calls = {"held": 0, "engine": 0}
    for side, conn in mine.items():

        def count(sql: str, seconds: float, error: Exception | None, side: str = side) -> None:
            calls[side] += 1

        conn.statement_hooks.append(count)
    rng = random.Random(seed)
    program = Program(rng, key_type, key_values)
    for step in range(STEPS):
        if rng.random() < 0.12:  # another session commits a change between this transaction's statements
            sql, params = program.statements()[-1]
            if not sql.startswith("SELECT"):
                results = {}
                for side, conn in other.items():
                    results[side] = outcome(conn.cursor(), sql.format(t=names[side]), params)
                    if results[side][0] != "error":
                        results[side] = (*results[side], outcome(conn.cursor(), "COMMIT", ()))
                    conn.rollback()
                assert_same(results["held"], results["engine"], f"step {step}, other: {sql} {params}")
            continue
        if rng.random() < 0.1:
            action = rng.choice(["COMMIT", "ROLLBACK"])
            results = {side: outcome(conn.cursor(), action, ()) for side, conn in mine.items()}
            assert results["held"] == results["engine"], (step, action, results)
            held, engine = contents(setup, names["held"]), contents(setup, names["engine"])
            assert len(held) == len(engine) and all(
                all(same(e, h) for e, h in zip(er, hr)) for er, hr in zip(engine, held)
            ), (step, "tables differ")
            continue
        for sql, params in program.statements():
            results = {side: outcome(conn.cursor(), sql.format(t=names[side]), params) for side, conn in mine.items()}
            assert_same(results["held"], results["engine"], f"step {step}: {sql} {params}")
            for side, conn in mine.items():
                if results[side][0] == "error" and conn.in_transaction and conn.transaction().failed:
                    conn.rollback()
    assert calls["held"] < calls["engine"], calls  # rows were held: fewer engine calls
