"""IN lists of parameters are padded to a power of two (tique.params.pad_lists), repeating the last value, so that
statements differing only in a list's length share a plan; what they answer and write must not change."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique
from tique.params import pad_lists


@pytest.mark.parametrize(
    "sql, params, padded",
    [
        ("SELECT a FROM t WHERE y IN (%s, %s, %s)", (1, 2, 3),
         ("SELECT a FROM t WHERE y IN (%s, %s, %s, %s)", (1, 2, 3, 3))),
        ("SELECT a FROM t WHERE x = %s AND y IN (%s,%s,%s,%s,%s) AND z = %s", (0, 1, 2, 3, 4, 5, 6),
         ("SELECT a FROM t WHERE x = %s AND y IN (%s,%s,%s,%s,%s, %s, %s, %s) AND z = %s",
          (0, 1, 2, 3, 4, 5, 5, 5, 5, 6))),
        ("SELECT a FROM t WHERE y IN (%s, %s) AND z NOT IN (%s, %s, %s)", (1, 2, 3, 4, 5),
         ("SELECT a FROM t WHERE y IN (%s, %s) AND z NOT IN (%s, %s, %s, %s)", (1, 2, 3, 4, 5, 5))),
        ("SELECT a FROM t WHERE y IN (%s)", (1,), ("SELECT a FROM t WHERE y IN (%s)", (1,))),
        ("SELECT '%%s', a FROM t WHERE y IN (%s, %s, %s, %s)", (1, 2, 3, 4), None),  # already a power of two
        ("SELECT a FROM t WHERE y IN (%s, %s, 3)", (1, 2), None),  # not only placeholders
        ("SELECT a FROM t WHERE y IN (SELECT b FROM u WHERE c IN (%s, %s, %s))", (1, 2, 3),
         ("SELECT a FROM t WHERE y IN (SELECT b FROM u WHERE c IN (%s, %s, %s, %s))", (1, 2, 3, 3))),
    ],
)  # fmt: skip
def test_pad_lists(sql: str, params: tuple[object, ...], padded: tuple[str, tuple[object, ...]] | None) -> None:
    assert pad_lists(sql, params) == (padded or (sql, params))


def test_answers_and_writes_are_the_same(embedded_url: str, unique_name: Callable[[str], str]) -> None:
    name = unique_name("pad")
    conn = tique.connect(embedded_url)
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT)")
    conn.bulk_load(name, [(k, 0) for k in range(1, 21)])
    plans = len(conn.db.plans._plans)
    values = dict.fromkeys(range(1, 21), 0)
    for n in (5, 6, 7, 8):
        keys = list(range(1, n + 1))
        marks = ", ".join(["%s"] * n)
        cur.execute(f"SELECT k FROM {name} WHERE k IN ({marks}) ORDER BY k", keys)
        assert [r[0] for r in cur.fetchall()] == keys
        cur.execute(f"SELECT COUNT(*), SUM(v) FROM {name} WHERE k IN ({marks})", keys)
        assert tuple(cur.fetchone()) == (n, sum(values[k] for k in keys))  # type: ignore[arg-type]
        cur.execute(f"UPDATE {name} SET v = v + 1 WHERE k IN ({marks})", keys)
        assert cur.rowcount == n
        values.update((k, values[k] + 1) for k in keys)
        conn.commit()
    assert len(conn.db.plans._plans) - plans <= 3 * 2  # one plan per statement shape (and per own-writes set)
    cur.execute(f"DELETE FROM {name} WHERE k IN (%s, %s, %s)", (18, 19, 30))
    assert cur.rowcount == 2
    conn.commit()
    cur.execute(f"SELECT k, v FROM {name} WHERE k IN (%s, %s, %s, %s, %s) ORDER BY k", (1, 5, 8, 18, 20))
    assert [tuple(r) for r in cur.fetchall()] == [(1, 4), (5, 4), (8, 1), (20, 0)]
    conn.close()
