"""Rows a transaction holds answer exactly as the engine would, in the cases the random differential
(test_held_rows_answer_as_the_engine.py) does not reach: the same statements run on a table with held_rows and
on its twin without (every statement in the engine); results, errors (and whether the transaction stays usable),
and the committed tables must be the same.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import tique
from tests.adversarial._values import same

Statement = tuple[str, tuple[Any, ...]]


def outcome(conn: tique.Connection, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...]:
    cur = conn.cursor()
    try:
        cur.execute(sql, params)
    except tique.Error as exc:
        usable = not (conn.in_transaction and conn.transaction().failed)
        return ("error", type(exc).__name__, usable)
    if cur.description is None:
        return ("done", cur.rowcount)
    return ("rows", [tuple(d) for d in cur.description], sorted(cur.fetchall(), key=repr), cur.rowcount)


def identical(engine: Any, held: Any) -> bool:
    """Equal in value and Python type, a DECIMAL in its text too (its sign: -0.00 is not what the engine reads)."""
    return same(engine, held) and (not isinstance(engine, decimal.Decimal) or str(engine) == str(held))


def alike(held: tuple[Any, ...], engine: tuple[Any, ...]) -> bool:
    if held[0] != "rows" or engine[0] != "rows":
        return held == engine
    return (
        held[1] == engine[1]
        and held[3] == engine[3]
        and len(held[2]) == len(engine[2])
        and all(len(h) == len(e) and all(identical(x, y) for x, y in zip(e, h)) for h, e in zip(held[2], engine[2]))
    )


class Twins:
    """One table definition twice: ``held`` answers from held rows, ``engine`` never does."""

    def __init__(
        self,
        connect: Callable[..., tique.Connection],
        unique_name: Callable[[str], str],
        ddl: str,
        rows: Sequence[Statement] = (),
        **settings: Any,
    ) -> None:
        self.setup = connect(on_statement_error="continue")
        self.names = {side: unique_name(side) for side in ("held", "engine")}
        for table in self.names.values():
            self.setup.cursor().execute(ddl.format(t=table))
            self.setup.commit()
            for sql, params in rows:
                self.setup.cursor().execute(sql.format(t=table), params)
            self.setup.commit()
        self.conns = {
            side: connect(held_rows=side == "held", **settings, on_statement_error="continue") for side in self.names
        }
        self.calls = {side: 0 for side in self.names}  # engine calls: held rows answer with fewer
        for side, conn in self.conns.items():

            def count(sql: str, seconds: float, error: Exception | None, side: str = side) -> None:
                self.calls[side] += 1

            conn.statement_hooks.append(count)

    def run(self, statements: Sequence[Statement]) -> None:
        for sql, params in statements:
            held, engine = (outcome(self.conns[s], sql.format(t=self.names[s]), params) for s in ("held", "engine"))
            assert alike(held, engine), (sql, params, held, engine)

    def commit(self) -> None:
        self.run([("COMMIT", ())])
        held, engine = (self.contents(self.names[s]) for s in ("held", "engine"))
        assert alike(("rows", [], held, 0), ("rows", [], engine, 0)), (held, engine)

    def contents(self, table: str) -> list[tuple[Any, ...]]:
        cur = self.setup.cursor()
        cur.execute(f"SELECT * FROM {table}")
        rows = sorted(cur.fetchall(), key=repr)
        self.setup.commit()
        return rows


_COLUMNS = (
    "k INT PRIMARY KEY, i INT, bi BIGINT, v VARCHAR(5), c CLOB, f DOUBLE, r REAL, b BOOLEAN, d DECIMAL(9,2), "
    "dt DATE, ts TIMESTAMP, tm TIME, tm3 TIME(3), bl BLOB"
)
_ROW = (
    "INSERT INTO {t} VALUES (%s, 7, 5, 'ab', '1.5', 1e10, 0.1, true, 3.55, '2020-01-02', '2020-01-02 03:04:05.5', "
    "'12:34:56', '12:34:56.789', 'ff01')"
)
_ONE = ("INSERT INTO {t} VALUES (1, 1)", ())
_CROSS = [
    ("v", "f"), ("v", "r"), ("v", "b"), ("v", "bl"), ("c", "f"), ("c", "b"), ("c", "tm3"), ("c", "bl"),
    ("i", "c"), ("i", "v"), ("i", "dt"), ("i", "bl"), ("f", "b"), ("r", "b"), ("b", "f"), ("b", "d"),
    ("d", "v"), ("d", "b"), ("dt", "i"), ("dt", "tm"), ("ts", "i"), ("tm", "dt"), ("bl", "c"), ("bl", "i"),
]  # fmt: skip


def test_set_from_a_column_of_another_type(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    """UPDATE t SET a = b with b of another type: the engine converts (DOUBLE to text as 1e+10, BOOLEAN as
    true, a string to a number or not at all); a copy of the held value would store Python's conversion."""
    twins = Twins(connect, unique_name, f"CREATE TABLE {{t}} ({_COLUMNS})", [(_ROW, (k,)) for k in range(len(_CROSS))])
    for k, (target, source) in enumerate(_CROSS):
        read = ("SELECT * FROM {t} WHERE k = %s", (k,))
        twins.run([read, (f"UPDATE {{t}} SET {target} = {source} WHERE k = %s", (k,)), read])
    twins.commit()


def test_decimal_negative_zero(connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]) -> None:
    """A DECIMAL -0 (or a value rounding to it) is stored, and read, as 0: a held row must not keep its sign."""
    twins = Twins(connect, unique_name, "CREATE TABLE {t} (k INT PRIMARY KEY, d DECIMAL(5,2))", [_ONE])
    read = ("SELECT * FROM {t} WHERE k = %s", (1,))
    twins.run(
        [
            read,
            ("UPDATE {t} SET d = %s WHERE k = %s", (decimal.Decimal("-0.001"), 1)),
            read,
            ("UPDATE {t} SET d = d + %s WHERE k = %s", (decimal.Decimal("-0.004"), 1)),
            read,
            ("INSERT INTO {t} VALUES (%s, %s)", (2, decimal.Decimal("-0"))),
            ("SELECT * FROM {t} WHERE k = %s", (2,)),
        ]
    )
    twins.commit()


_HUGE = 2**127


def test_values_the_engine_refuses(connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]) -> None:
    """Values the engine refuses in the statement itself (an integer beyond HUGEINT, a constant beyond DECIMAL(38),
    a NUL character, NaN or infinity): the same error class, on a held row and on a key the transaction holds to
    have no row (the engine refuses the statement whether or not a row matches)."""
    twins = Twins(
        connect,
        unique_name,
        "CREATE TABLE {t} (k INT PRIMARY KEY, i INT, d DECIMAL(38,2), v VARCHAR(5), f DOUBLE)",
        [("INSERT INTO {t} VALUES (%s, 1, 1, 'a', 1.5)", (k,)) for k in (1, 2)],
    )
    updates: list[Statement] = [
        ("UPDATE {t} SET i = %s WHERE k = %s", (_HUGE,)),
        ("UPDATE {t} SET i = i + %s WHERE k = %s", (-_HUGE,)),
        ("UPDATE {t} SET i = 1111111111111111111111111111111111111111 WHERE k = %s", ()),
        ("UPDATE {t} SET d = 170141183460469231731687303715884105727 WHERE k = %s", ()),
        ("UPDATE {t} SET d = d - 170141183460469231731687303715884105727 WHERE k = %s", ()),
        ("UPDATE {t} SET v = %s WHERE k = %s", ("a\x00",)),
        ("UPDATE {t} SET f = %s WHERE k = %s", (float("nan"),)),
        ("UPDATE {t} SET f = %s WHERE k = %s", (float("-inf"),)),
        ("UPDATE {t} SET f = 1e400 WHERE k = %s", ()),
    ]
    twins.run([("SELECT * FROM {t} WHERE k IN (%s, %s)", (1, 2)), ("DELETE FROM {t} WHERE k = %s", (2,))])
    for k in (1, 2):
        twins.run([(sql, (*params, k)) for sql, params in updates])
        twins.run([("SELECT * FROM {t} WHERE k = %s", (k,))])
    twins.commit()


def test_decimal_sum_beyond_the_column_scale(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    """DECIMAL(18,6) + 0.0000001 is computed by the engine at scale 7 in the column's 64 bits: at the column's
    largest values it overflows there (an error), though the exact sum rounds back into the column."""
    twins = Twins(
        connect,
        unique_name,
        "CREATE TABLE {t} (k INT PRIMARY KEY, d18 DECIMAL(18,6), d9 DECIMAL(9,2))",
        [("INSERT INTO {t} VALUES (%s, 999999999999.999999, 9999999.99)", (k,)) for k in (1, 2, 3, 4)],
    )
    read = ("SELECT * FROM {t} WHERE k IN (%s, %s, %s, %s)", (1, 2, 3, 4))
    twins.run(
        [
            read,
            ("UPDATE {t} SET d18 = d18 + %s WHERE k = %s", (decimal.Decimal("-0.0000001"), 1)),
            ("UPDATE {t} SET d18 = d18 - %s WHERE k = %s", (decimal.Decimal("1E-11"), 2)),
            ("UPDATE {t} SET d9 = d9 + 0.0000001 WHERE k = %s", (3,)),
            ("UPDATE {t} SET d9 = d18 - %s WHERE k = %s", (decimal.Decimal("0.0000001"), 4)),
            read,
        ]
    )
    twins.commit()


def test_deferred_key_check_fails_where_the_engine_read_fails(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    """insert_check='flush': the read that first sends an INSERT's rows checks its keys, and a duplicate fails the
    transaction there. A read answered from held rows sends nothing, so it must not answer while such a check is
    due: the duplicate would surface only at COMMIT, after the transaction went on (and as another error)."""
    twins = Twins(
        connect,
        unique_name,
        "CREATE TABLE {t} (k DECIMAL(5,2) PRIMARY KEY, a INT)",
        [("INSERT INTO {t} VALUES (%s, 1)", (k,)) for k in (decimal.Decimal("1.5"), decimal.Decimal("2"))],
        insert_check="flush",
    )
    read = ("SELECT * FROM {t} WHERE k = %s", (decimal.Decimal("1.5"),))
    update = ("UPDATE {t} SET a = a + 1 WHERE k = %s", (decimal.Decimal("1.5"),))
    for inserted in (decimal.Decimal("3"), decimal.Decimal("2")):  # the first round plans (and learns) the reads
        twins.run([read, ("INSERT INTO {t} VALUES (%s, 5)", (inserted,)), read, update, read])
        twins.commit()


def test_ddl_that_keeps_the_definition(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    """Another connection of the process drops a column and adds it again (or swaps two by renames): the table's
    definition is as before, its data is not (DDL takes effect at once), so rows held before are not its rows."""
    twins = Twins(
        connect,
        unique_name,
        "CREATE TABLE {t} (k INT PRIMARY KEY, a INT, x INT, y INT)",
        [("INSERT INTO {t} VALUES (%s, 1, 10, 100)", (k,)) for k in (1, 2)],
    )
    other = connect(on_statement_error="continue")
    for ddl in (
        ["ALTER TABLE {t} DROP COLUMN y", "ALTER TABLE {t} ADD COLUMN y INT"],
        [f"ALTER TABLE {{t}} RENAME COLUMN {a} TO {b}" for a, b in (("a", "tmp"), ("x", "a"), ("tmp", "x"))],
    ):
        twins.run([("SELECT * FROM {t} WHERE k IN (%s, %s)", (1, 2))])
        for table in twins.names.values():
            for sql in ddl:
                other.cursor().execute(sql.format(t=table))
        twins.run([("UPDATE {t} SET a = a + 1 WHERE k = %s", (1,)), ("SELECT * FROM {t} WHERE k = %s", (1,))])
        twins.run([("UPDATE {t} SET x = x + 1 WHERE k = %s", (2,)), ("SELECT * FROM {t} WHERE k = %s", (2,))])
        twins.commit()


def test_rows_written_by_every_kind_of_statement(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str], tmp_path: Path
) -> None:
    """Rows deleted by a predicate on other columns, inserted by INSERT ... SELECT and COPY INTO, removed by
    TRUNCATE, or updated by a predicate: what the transaction holds after each is what the engine reads."""
    data = tmp_path / "rows.csv"
    data.write_text("10|100|x\n11|110|y\n")
    for insert_check in ("immediate", "flush"):
        twins = Twins(
            connect,
            unique_name,
            "CREATE TABLE {t} (k INT PRIMARY KEY, x INT NOT NULL, u VARCHAR(3) UNIQUE, dflt INT DEFAULT 42)",
            [("INSERT INTO {t} (k, x, u) VALUES (%s, %s, %s)", (k, k, str(k))) for k in range(1, 6)],
            insert_check=insert_check,
        )

        def key(k: int) -> list[Statement]:
            read = ("SELECT * FROM {t} WHERE k = %s", (k,))
            return [read, ("UPDATE {t} SET x = x + 1 WHERE k = %s", (k,)), read]

        twins.run(
            [("SELECT * FROM {t} WHERE k IN (%s, %s, %s)", (1, 2, 3)), ("UPDATE {t} SET u = %s WHERE k = %s", ("2", 1))]
        )
        twins.run([("DELETE FROM {t} WHERE x > %s", (2,)), *key(3), *key(4)])
        twins.run([("INSERT INTO {t} (k, x, u) VALUES (%s, %s, %s)", (3, 33, "33")), *key(3)])
        twins.run([("INSERT INTO {t} (k, x, u) SELECT k + 100, x, u || 'z' FROM {t} WHERE k < %s", (3,)), *key(101)])
        twins.run([("INSERT INTO {t} (k, x) VALUES (%s, %s)", (7, 7)), *key(7)])
        twins.run([("UPDATE {t} SET x = x * 10 WHERE k < %s", (3,)), *key(1), *key(2)])
        twins.run([(f"COPY INTO {{t}} (k, x, u) FROM '{data}' USING DELIMITERS '|'", ()), *key(10)])
        twins.run([("TRUNCATE TABLE {t}", ()), *key(1), *key(10)])
        twins.run([("INSERT INTO {t} (k, x, u) VALUES (%s, %s, %s)", (1, 1, "1")), *key(1)])
        twins.commit()
        assert twins.calls["held"] < twins.calls["engine"], twins.calls


def test_times_rounding_to_midnight(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    """23:59:59.5 at TIMESTAMP(0) or TIME(0): MonetDB prints the hour 24 (its own rounding), which tique refuses
    as a DataError naming the column - held or not; the engine's text once escaped as Python's ValueError."""
    twins = Twins(
        connect,
        unique_name,
        "CREATE TABLE {t} (k INT PRIMARY KEY, tm0 TIME(0), ts0 TIMESTAMP(0), tm6 TIME(6), ts6 TIMESTAMP(6))",
        [("INSERT INTO {t} VALUES (1, '01:00:00', '2020-01-01 00:00:00', '23:59:59.5', '2020-01-01 23:59:59.5')", ())],
    )
    read = ("SELECT * FROM {t} WHERE k = %s", (1,))
    twins.run(
        [
            read,
            ("UPDATE {t} SET tm0 = %s WHERE k = %s", (datetime.time(23, 59, 59, 500000), 1)),
            ("UPDATE {t} SET ts0 = %s WHERE k = %s", (datetime.datetime(2020, 1, 1, 23, 59, 59, 500000), 1)),
            ("UPDATE {t} SET tm0 = tm6 WHERE k = %s", (1,)),
            ("UPDATE {t} SET ts0 = ts6 WHERE k = %s", (1,)),
            read,
        ]
    )
    twins.commit()


# the engine path stored 0.00 here (test_huge_decimal_never_stored_as_zero.py): now both refuse the value
def test_decimal_parameter_beyond_38_digits(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    twins = Twins(connect, unique_name, "CREATE TABLE {t} (k INT PRIMARY KEY, d DECIMAL(38,2))", [_ONE])
    read = ("SELECT * FROM {t} WHERE k = %s", (1,))
    huge = decimal.Decimal("12345678901234567890123456789012345678.5")
    twins.run([read, ("UPDATE {t} SET d = %s WHERE k = %s", (huge, 1)), read])
    twins.commit()
