"""A number too large for a DECIMAL column is refused by an UPDATE, never stored as 0.

MonetDB 11.41 folds a constant DOUBLE cast to DECIMAL(38,s) whose scaled value leaves 128 bits into 0
(`CAST(1.2e37 AS DECIMAL(38,2))` is 0.00, while the same cast of a column value fails with 22003). An UPDATE's
new values are computed by the engine, cast to the column's check type: a float parameter, or a Decimal of more
than 38 digits (which MonetDB reads as a DOUBLE), stored 0.00 silently, on the first (text) and later (prepared)
runs alike. INSERT refused the same values (values.coerce). The held-rows comparison found it.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable
from typing import Any

import pytest

import tique

HUGE = [decimal.Decimal("12345678901234567890123456789012345678.5"), 1.2e37, 1e300]


@pytest.mark.parametrize("held", [False, True])
def test_update_refuses_what_the_column_cannot_hold(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str], held: bool
) -> None:
    t = unique_name("dec")
    conn = connect(held_rows=held, on_statement_error="continue")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, d DECIMAL(38,2), e DECIMAL(9,3))")
    cur.execute(f"INSERT INTO {t} VALUES (1, 5, 5), (2, 5, 5), (3, 5, 5)")
    conn.commit()
    for value in HUGE:
        for k in (1, 2, 3):  # the second and third run are prepared
            for column in ("d", "e"):
                with pytest.raises(tique.DataError, match=rf"column '{column}'"):
                    cur.execute(f"UPDATE {t} SET {column} = %s WHERE k = %s", (value, k))
                cur.execute(f"SELECT d, e FROM {t} WHERE k = %s", (k,))  # the transaction goes on
                assert cur.fetchall() == [(decimal.Decimal("5.00"), decimal.Decimal("5.000"))]
    with pytest.raises(tique.DataError, match="column 'd'"):
        cur.execute(f"UPDATE {t} SET d = 1.2e37 WHERE k = 1")
    fits: Any = decimal.Decimal("123456789012345678901234567890123456.5")
    cur.execute(f"UPDATE {t} SET d = %s WHERE k = %s", (fits, 1))
    conn.commit()
    cur.execute(f"SELECT d FROM {t} ORDER BY k")
    assert cur.fetchall() == [(decimal.Decimal("123456789012345678901234567890123456.50"),), (5,), (5,)]
    conn.commit()
