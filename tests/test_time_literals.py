"""A TIME literal keeps its digits, as in MonetDB, where TIME '12:34:56.789' is a TIME(3): printed back by the
rewriter as CAST(... AS TIME) it was a TIME(0), so an INSERT ... VALUES stored 12:34:57.000 in a TIME(3) column and
the literal then found no row (found by a differential review). Each form against a plain MonetDB twin."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique

LITERALS = ["TIME '12:34:56'", "TIME '12:34:56.5'", "TIME '12:34:56.789'", "TIME '01:02:03.123456'"]


@pytest.mark.parametrize("column", ["TIME", "TIME(3)", "TIME(6)"])
def test_time_literals_as_a_plain_monetdb_table_keeps_them(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str], column: str
) -> None:
    conn = connect()
    cur = conn.cursor()
    tx, plain = unique_name("tl"), unique_name("tlp")
    cur.execute(f"CREATE TABLE {tx} (k INT PRIMARY KEY, t {column})")
    cur.execute(f"CREATE TABLE {plain} (k INT PRIMARY KEY, t {column}) -- tique: plain")
    conn.commit()

    def answers(table: str) -> list[object]:
        for k, lit in enumerate(LITERALS):
            cur.execute(f"INSERT INTO {table} VALUES ({k}, {lit})")
            cur.execute(f"INSERT INTO {table} VALUES ({k + 10}, {lit}), ({k + 20}, NULL)")
        cur.execute(f"UPDATE {table} SET t = {LITERALS[2]} WHERE k = 20")
        conn.commit()
        got: list[object] = []
        cur.execute(f"SELECT k, CAST(t AS VARCHAR(20)) FROM {table} ORDER BY k")
        got.append(cur.fetchall())
        for lit in LITERALS:
            cur.execute(f"SELECT COUNT(*) FROM {table} WHERE t = {lit}")
            got.append(cur.fetchall())
            cur.execute(f"SELECT CAST({lit} AS VARCHAR(20)), COUNT(*) FROM {table} WHERE t < {lit}")
            got.append(cur.fetchall())
        return got

    assert answers(tx) == answers(plain)
