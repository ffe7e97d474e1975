"""A SELECT that reads none of the columns the transaction's pending UPDATEs set does not send them first
(WriteBuffer.to_flush with names_read): TPC-C's Delivery sums ol_amount of the order lines it has just given a
delivery date. Every way a read could depend on a pending write without naming its column must still send it:
a star, a NATURAL JOIN, a view, a CTE, an insert or delete (rows appear or vanish), a key changed."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing

import pytest

import tique

SENT_ROWS = '__cache" ('  # an INSERT of the transaction's versions into a Cache table


@pytest.fixture
def lines(embedded_url: str, unique_name: Callable[[str], str]) -> tuple[str, str]:
    name = unique_name("ln")
    with closing(tique.connect(embedded_url)) as conn:  # closed: an open session pins its last snapshot
        cur = conn.cursor()
        cur.execute(f"CREATE TABLE {name} (o INT, n INT, amount INT, d INT, PRIMARY KEY (o, n))")
        conn.bulk_load(name, [(o, n, 10 * o + n, 0) for o in range(1, 4) for n in range(1, 4)])
        cur.execute(f"CREATE TABLE {name}_u (o INT, n INT, d INT, PRIMARY KEY (o, n))")  # d: 0 as in the first
        conn.bulk_load(f"{name}_u", [(o, n, 0) for o in range(1, 4) for n in range(1, 4)])
    return embedded_url, name


def run(url: str, statements: list[tuple[str, tuple[object, ...]]]) -> tuple[list[list[tuple[object, ...]]], int]:
    """Each statement's rows (writes give none), and how many INSERTs of Cache rows were sent before the COMMIT."""
    conn = tique.connect(url)
    sent: list[str] = []
    conn.statement_hooks.append(lambda sql, _s, _e: sent.append(sql))
    cur = conn.cursor()
    out = []
    for sql, params in statements:
        cur.execute(sql, params)
        out.append([tuple(r) for r in cur.fetchall()] if cur.description else [])
    flushes = sum(SENT_ROWS in s for s in sent)
    conn.commit()
    conn.close()
    return out, flushes


def test_a_sum_of_another_column_sends_nothing(lines: tuple[str, str]) -> None:
    url, t = lines
    rows, flushes = run(url, [
        (f"UPDATE {t} SET d = %s WHERE o = %s", (7, 2)),
        (f"SELECT SUM(amount), COUNT(*) FROM {t} WHERE o = %s", (2,)),
        (f"UPDATE {t} SET d = %s WHERE o = %s", (7, 3)),
        (f"SELECT SUM(amount) FROM {t} WHERE o = %s", (3,)),
    ])  # fmt: skip
    assert rows[1] == [(21 + 22 + 23, 3)] and rows[3] == [(31 + 32 + 33,)]
    assert flushes == 0
    after, _ = run(url, [(f"SELECT o, SUM(d) FROM {t} GROUP BY o ORDER BY o", ())])
    assert after[0] == [(1, 0), (2, 21), (3, 21)]  # both UPDATEs committed


@pytest.mark.parametrize(
    "read",
    [
        "SELECT SUM(d) FROM {t} WHERE o = 2",  # the column it set
        "SELECT * FROM {t} WHERE o = 2 ORDER BY n",
        "SELECT x.d FROM {t} AS x WHERE x.o = 2 ORDER BY x.n",
        'SELECT SUM("d") FROM {t}',
        "SELECT COUNT(*) FROM {t} NATURAL JOIN {t}_u",  # joined on d, never spelled
        "SELECT COUNT(*) FROM {t} JOIN {t}_u USING (o, n, d)",
        "WITH c AS (SELECT o, d FROM {t}) SELECT SUM(d) FROM c",
        "SELECT SUM(d) FROM (SELECT d FROM {t}) AS s",
        "SELECT {t}.* FROM {t} WHERE o = 2 ORDER BY n",
    ],
)
def test_reads_of_the_set_column_see_it(lines: tuple[str, str], read: str) -> None:
    url, t = lines
    plain, _ = run(url, [(read.format(t=t), ())])
    rows, flushes = run(url, [(f"UPDATE {t} SET d = %s WHERE o = %s", (7, 2)), (read.format(t=t), ())])
    assert flushes == 1 and rows[1] != plain[0], (rows, plain)


def test_a_view_of_the_set_column_sees_it(lines: tuple[str, str], unique_name: Callable[[str], str]) -> None:
    url, t = lines
    view = unique_name("lv")
    with closing(tique.connect(url)) as conn:  # closed: an open session pins its last snapshot
        conn.cursor().execute(f"CREATE VIEW {view} AS SELECT o, d AS delivered FROM {t}")
        conn.commit()
    rows, flushes = run(url, [
        (f"UPDATE {t} SET d = %s WHERE o = %s", (7, 2)),
        (f"SELECT SUM(delivered) FROM {view} WHERE o = 2", ()),
    ])  # fmt: skip
    assert rows[1] == [(21,)] and flushes == 1


@pytest.mark.parametrize(
    "write, count",
    [
        ("INSERT INTO {t} VALUES (2, 9, 0, 0)", 4),
        ("DELETE FROM {t} WHERE o = 2 AND n = 1", 2),
        ("UPDATE {t} SET n = n + 10 WHERE o = 2 AND n = 1", 3),  # a key changed: same count, other keys
    ],
)
def test_rows_that_appear_or_vanish_are_sent(lines: tuple[str, str], write: str, count: int) -> None:
    url, t = lines
    rows, flushes = run(url, [
        (write.format(t=t), ()),
        (f"SELECT COUNT(*), MAX(n) FROM {t} WHERE o = 2", ()),
    ])  # fmt: skip
    assert rows[1][0][0] == count and flushes == 1


def test_an_update_of_another_column_after_an_insert_still_sends(lines: tuple[str, str]) -> None:
    url, t = lines
    rows, flushes = run(url, [
        (f"INSERT INTO {t} VALUES (2, 9, 5, 0)", ()),
        (f"SELECT COUNT(*) FROM {t} WHERE o = 2", ()),  # sends the insert
        (f"UPDATE {t} SET d = 1 WHERE o = 2", ()),
        (f"SELECT SUM(amount) FROM {t} WHERE o = 2", ()),  # needs nothing of the update
        (f"SELECT SUM(d) FROM {t} WHERE o = 2", ()),  # sends it
    ])  # fmt: skip
    assert rows[1] == [(4,)] and rows[3] == [(71,)] and rows[4] == [(4,)]
    assert flushes == 2


def test_a_column_renamed_meanwhile_never_shows_the_value_before_the_update(lines: tuple[str, str]) -> None:
    """DDL since the begin: the pending updates' column names may be others' now, so a read sends them (and fails
    as it did before reads skipped them) rather than find the snapshot's value under the new name."""
    url, t = lines
    conn = tique.connect(url)
    cur = conn.cursor()
    cur.execute(f"UPDATE {t} SET d = %s WHERE o = %s", (7, 2))
    cur.execute(f"ALTER TABLE {t} RENAME COLUMN d TO x")
    try:
        cur.execute(f"SELECT SUM(x) FROM {t} WHERE o = 2")
        assert cur.fetchall() == [(21,)]
    except tique.Error:
        pass
    conn.rollback()
    conn.close()
