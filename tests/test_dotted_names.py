"""Tables whose schema and name hold dots: "a"."b.c" and "a.b"."c" are two tables, and a transaction keys its
reads, writes and own versions per table. Keyed by schema + "." + name, the two were one: rows inserted into the
second committed into the first."""

from __future__ import annotations

from collections.abc import Callable

import tique


def test_two_tables_whose_names_join_alike_keep_their_own_rows(
    embedded_url: str, unique_name: Callable[[str], str]
) -> None:
    base = unique_name("dn")
    first, second = (f'"{base}"', f'"x.{base}"'), (f'"{base}.x"', f'"{base}"')
    conn = tique.connect(embedded_url)
    cur = conn.cursor()
    try:
        for schema, _ in (first, second):
            cur.execute(f"CREATE SCHEMA {schema}")
        a, b = ".".join(first), ".".join(second)
        for t in (a, b):
            cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT)")
        cur.execute(f"INSERT INTO {a} VALUES (1, 10)")
        cur.execute(f"INSERT INTO {b} VALUES (2, 20)")
        cur.execute(f"SELECT k, v FROM {a}")
        assert cur.fetchall() == [(1, 10)]  # the transaction's own writes, per table
        cur.execute(f"UPDATE {b} SET v = v + 1")
        cur.execute(f"SELECT k, v FROM {b}")
        assert cur.fetchall() == [(2, 21)]
        conn.commit()
        for t, rows in ((a, [(1, 10)]), (b, [(2, 21)])):
            cur.execute(f"SELECT k, v FROM {t}")
            assert cur.fetchall() == rows, t
            conn.rollback()
        cur.execute(f"INSERT INTO {b} VALUES (3, 30)")
        cur.execute(f"DROP TABLE {a}")  # the dropped table takes its own writes along, not the other's
        conn.commit()
        cur.execute(f"SELECT k, v FROM {b} ORDER BY k")
        assert cur.fetchall() == [(2, 21), (3, 30)]
        conn.rollback()
    finally:
        conn.close()
