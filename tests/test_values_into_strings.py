"""A value that is not a string, written into a string column, is stored as MonetDB converts it: tique converted
it with Python's str() in the client (TRUE became 'True', 1e2 '100.0'), so committed data differed from plain
MonetDB's.

A float *parameter* is compared with what MonetDB stores for pymonetdb's literal of it (its repr: a DECIMAL
unless it has an exponent, so 100.0 is '100.0'), as an application on plain MonetDB would get (review14); tique's
own literal of it is a DOUBLE (100.0e0, stored '100'), so it is not the twin's ground truth."""

from __future__ import annotations

import decimal
from collections.abc import Callable

from pymonetdb.sql.monetize import convert

import tique
from tique.database import Database
from tique.params import literal

LITERALS = ["TRUE", "FALSE", "1e2", "0.1e0", "1.50", "456775180e0", "1e4", "1e3", "-0.0e0", "1.2345678901234568e17"]
PARAMS = [True, 100.0, 0.1, decimal.Decimal("1E-10"), 12345.678, 2.5e-5]


def test_non_string_values_are_stored_in_string_columns_as_monetdb_stores_them(
    url: str, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    t, twin = unique_name("vs"), unique_name("vs_twin")
    conn, raw = connect(), Database.get(url).connect_raw()
    try:
        ddl = "CREATE TABLE {t} (k INT PRIMARY KEY, s VARCHAR(40))"
        cur = conn.cursor()
        cur.execute(ddl.format(t=t))
        raw.execute(ddl.format(t=twin) + " -- tique: plain")
        for i, text in enumerate(LITERALS):
            cur.execute(f"INSERT INTO {t} VALUES ({i}, {text})")
            raw.execute(f"INSERT INTO {twin} VALUES ({i}, {text})")
        for i, value in enumerate(PARAMS, start=100):
            cur.execute(f"INSERT INTO {t} VALUES (%s, %s)", (i, value))
            sent = convert(value) if isinstance(value, float) else literal(value)  # pymonetdb's float literal
            raw.execute(f"INSERT INTO {twin} VALUES ({i}, {sent})")
        conn.commit()
        cur.execute(f"SELECT k, s FROM {t} ORDER BY k")
        got = [tuple(r) for r in cur.fetchall()]
        assert got == [tuple(r) for r in raw.execute(f"SELECT k, s FROM {twin} ORDER BY k").rows]
        conn.commit()
    finally:
        raw.close()
