"""A Python float written into a DECIMAL column is rounded as MonetDB casts a double: ``v * 10**scale`` in double
arithmetic, half away from zero. tique's client rounded the float's exact binary value instead, so an INSERT
stored 2.67 for 2.675 where the UPDATE's engine-side cast, and a plain MonetDB table, stored 2.68 (found by a
differential review)."""

from __future__ import annotations

import decimal
import random
from collections.abc import Callable

import tique

FLOATS = [2.675, -0.015, 1.005, 0.285, 154.35, 0.125, -0.125, 0.49999999999999994, 9999.995, -2.5, 0.0, -0.0]
_RANDOM = random.Random(7)
FLOATS += [round(_RANDOM.uniform(-9999, 9999), _RANDOM.randint(1, 5)) for _ in range(60)]


def test_a_float_into_a_decimal_column_as_the_engine_casts_it(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    conn = connect()
    cur = conn.cursor()
    t, p = unique_name("fd"), unique_name("fdp")
    for name, comment in ((t, ""), (p, " -- tique: plain")):
        cur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, lit DECIMAL(9,2), upd DECIMAL(9,2)){comment}")
    conn.commit()
    for k, v in enumerate(FLOATS):
        cur.execute(f"INSERT INTO {t} VALUES (%s, %s, NULL)", (k, v))  # rounded in the client
        cur.execute(f"INSERT INTO {p} VALUES (%s, CAST(%s AS DOUBLE), NULL)", (k, v))
    conn.commit()
    for k, v in enumerate(FLOATS):
        cur.execute(f"UPDATE {t} SET upd = %s WHERE k = %s", (v, k))  # rounded by the engine
        cur.execute(f"UPDATE {p} SET upd = CAST(%s AS DOUBLE) WHERE k = %s", (v, k))
    conn.commit()
    got = conn.execute(f"SELECT k, lit, upd FROM {t} ORDER BY k").fetchall()
    want = conn.execute(f"SELECT k, lit, upd FROM {p} ORDER BY k").fetchall()
    assert [tuple(r) for r in got] == [tuple(r) for r in want]
    assert got[0][1] == got[0][2] == decimal.Decimal("2.68")
