"""Any SELECT sees transactional tables as their snapshots: the same queries over tique tables (stable rows
in Storage plus committed versions in Cache) and over plain MonetDB tables holding the same data must agree."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import closing

import pytest

import tique

Connect = Callable[..., tique.Connection]

QUERIES = [
    "SELECT o.id, c.name, o.amount FROM {o} o JOIN {c} c ON c.id = o.customer ORDER BY o.id",
    "SELECT c.name, SUM(o.amount), COUNT(*) FROM {o} o JOIN {c} c ON c.id = o.customer GROUP BY c.name ORDER BY c.name",
    "WITH big AS (SELECT * FROM {o} WHERE amount > 50) "
    "SELECT customer, MAX(amount) FROM big GROUP BY customer ORDER BY customer",
    "SELECT id, amount, RANK() OVER (PARTITION BY customer ORDER BY amount DESC, id) FROM {o} ORDER BY id",
    "SELECT id FROM {o} WHERE customer IN (SELECT id FROM {c} WHERE name LIKE 'c%') ORDER BY id",
    "SELECT id, amount FROM {o} ORDER BY amount DESC, id LIMIT 5",
    "SELECT id FROM {o} WHERE amount < 20 UNION SELECT id FROM {c} ORDER BY 1",
    "SELECT c.id, (SELECT COUNT(*) FROM {o} o WHERE o.customer = c.id) FROM {c} c ORDER BY c.id",
    "SELECT * FROM (SELECT customer, AVG(amount) AS a FROM {o} GROUP BY customer) t WHERE a > 30 ORDER BY customer",
    "SELECT c.id, o.id FROM {c} c LEFT JOIN {o} o ON o.customer = c.id AND o.amount > 90 ORDER BY c.id, o.id",
    # the snapshots carry only the columns a statement names: every way of naming them
    "SELECT o.*, c.name FROM {o} o, {c} c WHERE c.id = o.customer ORDER BY o.id",
    "SELECT {o}.amount, COUNT(*) FROM {o} GROUP BY {o}.amount ORDER BY 1",
    "SELECT * FROM {o} JOIN (SELECT id AS customer, name FROM {c}) x USING (customer) ORDER BY id",
    "SELECT * FROM {o} NATURAL JOIN (SELECT id AS customer, name FROM {c}) x ORDER BY id",
    "SELECT O.ID, AMOUNT FROM {o} AS O WHERE EXISTS (SELECT * FROM {c} WHERE ID = O.CUSTOMER) ORDER BY 1",
    "SELECT name FROM {c} WHERE id = 4",
    # filters on one table reach its Storage scan before the anti-join: where they may, and where they may not
    "SELECT o.id, c.name FROM {o} o JOIN {c} c ON c.id = o.customer AND c.name LIKE 'c%' "
    "WHERE amount BETWEEN 30 AND 80 AND customer + 0 <> 3 ORDER BY o.id",
    "SELECT c.id, o.id FROM {c} c LEFT JOIN {o} o ON o.customer = c.id AND o.amount > 97 "
    "WHERE o.amount IS NULL ORDER BY c.id",
    "SELECT c.id, o.id FROM {o} o RIGHT JOIN {c} c ON o.customer = c.id WHERE o.amount < 30 OR o.id IS NULL "
    "ORDER BY c.id, o.id",
    "SELECT id FROM {o} WHERE amount > (SELECT AVG(amount) FROM {o}) AND CASE WHEN id < 30 THEN 1 ELSE 0 END = 1 "
    "ORDER BY id",
]


def build_twins(conn: tique.Connection, prefix: str) -> dict[str, str]:
    """Tables o and c as tique tables (stable rows in Storage, committed versions in the Cache) and as plain twins
    holding the same rows; their names (o, c, o_plain, c_plain)."""
    cur = conn.cursor()
    names = {"o": f"{prefix}_orders", "c": f"{prefix}_customers"}
    plain = {k: v + "_plain" for k, v in names.items()}
    for table, suffix in ((names, ""), (plain, " -- tique: plain")):
        cur.execute(f"CREATE TABLE {table['c']} (id INT PRIMARY KEY, name VARCHAR(20)){suffix}")
        cur.execute(f"CREATE TABLE {table['o']} (id INT PRIMARY KEY, customer INT, amount INT){suffix}")
    customers = [(i, f"{'c' if i % 2 else 'd'}ust{i}") for i in range(1, 8)]
    orders = [(i, 1 + i % 7, (i * 37) % 101) for i in range(1, 60)]
    conn.bulk_load(names["c"], customers)  # stable rows in Storage
    conn.bulk_load(names["o"], orders)
    for table in plain.values():
        rows = customers if table == plain["c"] else orders
        cur.executemany(f"INSERT INTO {table} VALUES ({', '.join(['%s'] * len(rows[0]))})", rows)
    # then versions in the Cache: updates, deletes and inserts, committed, the same on the plain twins
    for table in (names, plain):
        cur.execute(f"UPDATE {table['o']} SET amount = amount + 5 WHERE id % 3 = 0")
        cur.execute(f"DELETE FROM {table['o']} WHERE id % 11 = 0")
        cur.execute(f"INSERT INTO {table['o']} VALUES (100, 2, 99), (101, 3, 1)")
        cur.execute(f"UPDATE {table['c']} SET name = 'cust-renamed' WHERE id = 4")
    conn.commit()
    return {**names, **{f"{k}_plain": v for k, v in plain.items()}}


@pytest.fixture
def twins(connect: Connect, unique_name: Callable[[str], str]) -> tuple[tique.Connection, dict[str, str]]:
    conn = connect()
    return conn, build_twins(conn, unique_name("q"))


@pytest.fixture(scope="module", params=["embedded", "server"])
def shared_twins(request: pytest.FixtureRequest) -> Iterator[tuple[str, dict[str, str]]]:
    """The twins once per adapter (its URL and their names) for the query tests: they only read the committed
    rows, each on a connection of its own, and building the tables for each of 120 queries took most of this
    file's time."""
    adapter = request.param
    url = request.getfixturevalue("embedded_url") if adapter == "embedded" else request.getfixturevalue("server").url
    conn = tique.connect(url)
    try:
        yield url, build_twins(conn, f"qs_{os.getpid()}_{adapter}")
    finally:
        conn.close()


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("formulation", ["auto", "point", "analytical"])
def test_query_over_snapshots_equals_the_same_query_over_plain_tables(
    shared_twins: tuple[str, dict[str, str]], query: str, formulation: str
) -> None:
    url, names = shared_twins
    with closing(tique.connect(url, snapshot=formulation)) as conn:
        cur = conn.cursor()
        cur.execute(query.format(o=names["o"], c=names["c"]))
        got = cur.fetchall()
        cur.execute(query.format(o=names["o_plain"], c=names["c_plain"]))
        assert got == cur.fetchall()
        assert got  # every query returns rows


def test_each_statement_text_is_rewritten_once(
    connect: Connect, twins: tuple[tique.Connection, dict[str, str]]
) -> None:
    conn, names = twins
    cur = conn.cursor()
    sql = f"SELECT amount FROM {names['o']} WHERE id = %s"
    cur.execute(sql, (1,))
    misses, hits = conn.db.plans.misses, conn.db.plans.hits
    for i in range(2, 12):
        cur.execute(sql, (i,))
    assert conn.db.plans.misses == misses and conn.db.plans.hits == hits + 10
