"""A long IN list is planned in time linear in its length, once: it stays in the statement's own WHERE instead
of being copied into every branch of the snapshot (each copy was printed and parsed again), and the answers do
not change.

Found by the security probe (issue 16, item 7): a 200,000-value IN list spent 71 s in the client planning the
statement, then failed with "idle past its snapshot lease". Then 30 s (sqlglot parsing and printing each value);
now such a list skips parsing altogether (test_long_in_lists_skip_parsing.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import tique

ROWS = 3000
VALUES = 5000


def _in_list(values: range) -> str:
    return "(" + ", ".join(str(v) for v in values) + ")"


def test_long_in_lists_are_planned_once_and_answer_the_same(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    table = unique_name("inl")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {table} (k INT PRIMARY KEY, v INT)")
    conn.bulk_load(table, [(k, k) for k in range(ROWS)])
    conn.commit()
    cur.execute(f"UPDATE {table} SET v = v + 1 WHERE k < 10")  # own writes the reads must see
    evens = range(0, 2 * VALUES, 2)
    read = f"SELECT k, v FROM {table} WHERE k IN {_in_list(evens)}"
    planned = "".join(conn.plan(read, None).template.parts)
    assert planned.count(str(evens[-1])) == 1, "the IN list was copied into the snapshot"
    started = time.monotonic()
    cur.execute(read)
    rows = sorted(cur.fetchall())
    assert rows == [(k, k + 1 if k < 10 else k) for k in range(0, ROWS, 2)]
    cur.execute(f"UPDATE {table} SET v = -v WHERE k IN {_in_list(range(1, 2 * VALUES, 2))}")
    cur.execute(f"DELETE FROM {table} WHERE k IN {_in_list(range(100, VALUES))}")
    conn.commit()
    assert time.monotonic() - started < 60
    cur.execute(f"SELECT COUNT(*), SUM(CASE WHEN v < 0 THEN 1 ELSE 0 END) FROM {table}")
    assert cur.fetchall() == [(100, 50)]
