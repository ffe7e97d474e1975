"""A string written into a numeric column is read as MonetDB reads it: an integer's text may carry an exponent
('1e2' is 100, '1e-1' and '1.5e1' are refused), a DECIMAL's may not ('1e2' is refused). tique's client had them
the other way round (found by a differential review). Each string goes into a tique table, where the client
converts it, and into a plain twin, where MonetDB does; both must store the same value or both refuse."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique

TEXTS = ["1e2", "1E2", "1e02", "10e1", "0e5", "-1e2", "+3", " 7 ", "1e+2", "1e-1", "100e-2", "1.5e1", "1e20", "1e",
         "2.5", ".5", "5.", "1.235", "-1.235", "1.2e1", "3e9", "12abc", "1_0", "1_000.5"]  # fmt: skip
COLUMNS = ["INT", "BIGINT", "SMALLINT", "DECIMAL(6,2)", "DECIMAL(18,3)", "DOUBLE", "REAL"]


@pytest.mark.parametrize("column", COLUMNS)
def test_numeric_text_as_the_engine_reads_it(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str], column: str
) -> None:
    conn = connect(autocommit=True)
    cur = conn.cursor()
    tx, plain = unique_name("nt"), unique_name("ntp")
    cur.execute(f"CREATE TABLE {tx} (k INT PRIMARY KEY, v {column})")
    cur.execute(f"CREATE TABLE {plain} (k INT PRIMARY KEY, v {column}) -- tique: plain")
    differ = []
    for k, text in enumerate(TEXTS):
        outcomes = []
        for t in (tx, plain):
            try:
                cur.execute(f"INSERT INTO {t} VALUES ({k}, '{text}')")
                outcomes.append(conn.execute(f"SELECT v FROM {t} WHERE k = {k}").fetchall())
            except tique.DatabaseError:
                outcomes.append("refused")
        if outcomes[0] != outcomes[1]:
            differ.append((text, *outcomes))
    assert differ == []
