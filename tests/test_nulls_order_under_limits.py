"""ORDER BY ... NULLS FIRST / NULLS LAST with a LIMIT or OFFSET: MonetDB 11.41's top-N picked wrong rows for the
non-default placement, over a snapshot's UNION ALL (``d DESC NULLS FIRST, id LIMIT 5`` lost its NULL rows once
some rows were in Storage and others in the Cache; found by a differential review) and on a plain table too
(``d ASC NULLS LAST, id LIMIT 3 OFFSET 8``). tique spells such an item as a leading ``IS NULL`` key
(tique/rewrite/ordering.py). Each limited answer must be its query's full order, which MonetDB sorts right, sliced
as the LIMIT and OFFSET say."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
import sqlglot

import tique
from tique.checkpoint import Checkpointer
from tique.engine import open_engine
from tique.rewrite.dialect import MonetDB
from tique.rewrite.ordering import nulls_order_under_limits

Connect = Callable[..., tique.Connection]
ORDERS = [
    "d DESC NULLS FIRST, id",
    "d ASC NULLS LAST, id",
    "d NULLS LAST, id DESC",
    "v DESC NULLS FIRST, id",
    "x DESC NULLS FIRST, id",
    "x NULLS LAST, d DESC NULLS FIRST, id",
    "d DESC, id",  # the default placement, left as written
]
SLICES = [(5, 0), (3, 8), (2, 3), (40, 0), (4, 17)]


def _fill(conn: tique.Connection, name: str, url: str) -> None:
    rng = random.Random(7)
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, g INT, v VARCHAR(10), x DOUBLE, d DATE)")

    def row(k: int) -> tuple[object, ...]:
        return (
            k,
            rng.choice([None, 1, 2, 3]),
            rng.choice([None, "", "a", "b", "B"]),
            rng.choice([None, -2.25, 0.5, 1.0]),
            rng.choice([None, "2024-01-31", "2024-02-29"]),
        )

    cur.executemany(f"INSERT INTO {name} VALUES (%s, %s, %s, %s, %s)", [row(k) for k in range(1, 31)])
    conn.commit()
    checkpointer = Checkpointer(open_engine(url).connect())
    checkpointer.run_once()  # these rows to Storage; what follows stays in the Cache
    cur.execute(f"DELETE FROM {name} WHERE id IN (1, 2, 6, 8, 14, 21)")
    cur.execute(f"UPDATE {name} SET g = 4, d = NULL WHERE id IN (3, 11, 15)")
    cur.execute(f"UPDATE {name} SET v = NULL, x = 1.0 WHERE id IN (7, 22, 27)")
    cur.executemany(f"INSERT INTO {name} VALUES (%s, %s, %s, %s, %s)", [row(k) for k in range(31, 41)])
    conn.commit()


@pytest.mark.parametrize("order", ORDERS)
def test_a_limited_order_is_the_full_order_sliced(
    connect: Connect, unique_name: Callable[[str], str], url: str, order: str
) -> None:
    conn = connect()
    name = unique_name("nul")
    _fill(conn, name, url)
    cur = conn.cursor()
    for own in (False, True):  # committed rows only, then with the reader's own writes waiting in the client
        if own:
            cur.execute(f"UPDATE {name} SET d = NULL, v = NULL, x = NULL WHERE id IN (4, 5, 33)")
            cur.execute(f"DELETE FROM {name} WHERE id = 9")
        cur.execute(f"SELECT id FROM {name} ORDER BY {order}")
        full = [r[0] for r in cur.fetchall()]
        assert len(full) == 34 - own
        for limit, offset in SLICES:
            cur.execute(f"SELECT id FROM {name} ORDER BY {order} LIMIT {limit} OFFSET {offset}")
            assert [r[0] for r in cur.fetchall()] == full[offset : offset + limit], (order, limit, offset, own)
    conn.rollback()


def test_aliases_positions_aggregates_unions_and_subqueries(
    connect: Connect, unique_name: Callable[[str], str], url: str
) -> None:
    conn = connect()
    name = unique_name("nul")
    _fill(conn, name, url)
    cur = conn.cursor()
    queries = [
        f"SELECT id, d AS due FROM {name} ORDER BY due DESC NULLS FIRST, id",
        f"SELECT id, d FROM {name} ORDER BY 2 DESC NULLS FIRST, 1",
        f"SELECT g, COUNT(d) AS n FROM {name} GROUP BY g ORDER BY g DESC NULLS FIRST, n",
        f"SELECT id, d FROM {name} WHERE id < 20 UNION ALL SELECT id, d FROM {name} WHERE id >= 20 "
        "ORDER BY d NULLS LAST, id",
        f"SELECT id, x FROM (SELECT id, x FROM {name} ORDER BY x DESC NULLS FIRST, id LIMIT 12) AS s "
        "ORDER BY x DESC NULLS FIRST, id",
    ]
    for sql in queries:
        cur.execute(sql)
        full = cur.fetchall()
        for limit, offset in SLICES:
            cur.execute(f"{sql} LIMIT {limit} OFFSET {offset}")
            assert cur.fetchall() == full[offset : offset + limit], (sql, limit, offset)
    conn.rollback()


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT a FROM t ORDER BY a DESC NULLS FIRST LIMIT 3", "ORDER BY (a IS NULL) DESC, a DESC LIMIT 3"),
        ("SELECT a FROM t ORDER BY a NULLS LAST OFFSET 3", "ORDER BY (a IS NULL) ASC, a ASC OFFSET 3"),
        ("SELECT a AS b FROM t ORDER BY b NULLS LAST LIMIT 1", "ORDER BY (a IS NULL) ASC, b ASC LIMIT 1"),
        ("SELECT a FROM t ORDER BY a NULLS LAST", "ORDER BY a NULLS LAST"),  # no LIMIT: a full sort is right
        ("SELECT a FROM t ORDER BY a DESC LIMIT 3", "ORDER BY a DESC LIMIT 3"),  # MonetDB's own placement
        ("SELECT * FROM t ORDER BY 1 NULLS LAST LIMIT 1", "ORDER BY 1 NULLS LAST LIMIT 1"),  # a position of *
    ],
)
def test_the_rewritten_order(sql: str, expected: str) -> None:
    tree = nulls_order_under_limits(sqlglot.parse_one(sql, read=MonetDB))
    assert tree.sql(dialect=MonetDB).endswith(expected)
    assert nulls_order_under_limits(tree.copy()) == tree  # applied again, nothing changes
