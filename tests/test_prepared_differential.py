"""A statement tique sends as text the first time and as EXEC of a prepared statement from then on
(tique/prepared.py) must answer every time as the engine answers its text. The oracle is a plain MonetDB twin
given the statement with its parameters inlined. Attacked: each column type, compared and computed with
parameters of many Python types and string forms the engine converts (a BOOLEAN compared with 'true' answered
otherwise once prepared). An answer is the rows, or the error class where the engine refuses the text."""

from __future__ import annotations

import datetime
import decimal
import random
from collections.abc import Callable
from typing import Any

import pytest

import tique
from tests.conftest import sized
from tests.test_key_reads_differential import answer, rows_of, twin_tables
from tique.params import inline

COLUMNS = {
    "i": "INT",
    "s": "SMALLINT",
    "g": "BIGINT",
    "m": "DECIMAL(12,2)",
    "d": "DOUBLE",
    "r": "REAL",
    "v": "VARCHAR(5)",
    "c": "CLOB",
    "b": "BOOLEAN",
    "dt": "DATE",
    "tm": "TIME",
    "ts": "TIMESTAMP",
    "t3": "TIMESTAMP(3)",
    "m3": "DECIMAL(5,3)",
    "h": "HUGEINT",
    "x": "BLOB",
}
ROWS = [
    (1, 1, 7, 1, decimal.Decimal("2.25"), 0.5, 1.5, "ab", "x y", True, datetime.date(2024, 1, 5),
     datetime.time(10, 0), datetime.datetime(2024, 1, 5, 10, 0), datetime.datetime(2024, 1, 5, 10, 0, 0, 123000),
     decimal.Decimal("1.500"), 5, b"\x00\xff"),
    (2, 0, -3, 2**40, decimal.Decimal("-1.00"), -0.0, 0.0, "true", "1", False, datetime.date(1999, 12, 31),
     datetime.time(0, 0, 0, 500000), datetime.datetime(1970, 1, 1), datetime.datetime(1970, 1, 1),
     decimal.Decimal("-0.100"), 2**100, b""),
    (3, 100, 0, 0, decimal.Decimal("0.10"), 1e300, -2.5, "1", "", None, None, None, None, None, None, None, None),
]  # fmt: skip
VALUES: list[Any] = [
    1, 0, -3, 2**40, 2**70, 2.25, 0.5, -0.0, decimal.Decimal("2.25"), decimal.Decimal("2.250"), decimal.Decimal("0.1"),
    "1", " 1", "01", "1.5", "2.25", "true", "True", " false ", "t", "ab", "ab ", "x y", "", "2024-01-05",
    "2024-1-5", "10:00", "10:00:00", "2024-01-05 10:00:00", None, True, False, datetime.date(2024, 1, 5),
    datetime.datetime(2024, 1, 5, 10, 0), datetime.time(10, 0), datetime.time(0, 0, 0, 500000),
    "2024-01-05 10:00:00.1234", "2024-01-05 10:00:00.123", "10:00:00.5001", "0.1", "00ff", "5",
]  # fmt: skip
SHAPES = [
    "SELECT k FROM {t} WHERE {c} = %s",
    "SELECT k FROM {t} WHERE {c} <> %s",
    "SELECT k FROM {t} WHERE {c} < %s",
    "SELECT k FROM {t} WHERE {c} IN (%s, NULL)",
    "SELECT k, {c} + %s FROM {t}",
    "SELECT k FROM {t} WHERE {c} LIKE %s",
    "SELECT k, CASE WHEN {c} = %s THEN 1 ELSE 0 END FROM {t}",
    "SELECT k, COALESCE({c}, %s) FROM {t}",
]


@pytest.mark.parametrize("seed", range(sized(2, 12)))
def test_prepared_statements_answer_as_their_text(
    connect: Callable[..., tique.Connection], url: str, unique_name: Callable[[str], str], seed: int
) -> None:
    rng = random.Random(seed)
    ddl = "(k INT PRIMARY KEY, " + ", ".join(f"{name} {sql_type}" for name, sql_type in COLUMNS.items()) + ")"
    with twin_tables(connect, url, unique_name, ddl, shared_rows=False) as (conn, cur, raw, t, p):
        rows = ", ".join(f"({', '.join(inline('%s', (v,)) for v in row)})" for row in ROWS)
        cur.execute(f"INSERT INTO {t} VALUES {rows}")
        raw.execute(f"INSERT INTO {p} VALUES {rows}")
        conn.commit()
        # (-0.0 keeps its sign in tique's statements, tique/zero_signs.py; the twin's pipeline folds it to 0.0, which
        # a LIKE on a number's text tells apart: no prepared statement is involved)
        cases = [
            (shape, column, value)
            for shape in SHAPES
            for column in COLUMNS
            for value in VALUES
            if not ("LIKE" in shape and repr(value) == "-0.0")
        ]
        wrong: list[tuple[Any, ...]] = []
        for shape, column, value in rng.sample(cases, sized(60, len(cases) // 4)):
            sql = shape.format(t="{t}", c=column)
            want = answer(lambda text: raw.execute(text).rows, inline(sql.format(t=p), (value,)))
            got = []
            for _ in range(3):  # as text, then prepared (PREPARE_AFTER), then as EXEC of it
                got.append(answer(rows_of, cur, sql.format(t=t), (value,)))
                conn.rollback()
            if got != [want] * 3:
                wrong.append((sql, repr(value), got, want))
        assert not wrong, wrong[:5]
