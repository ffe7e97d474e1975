"""Attacks on three fast paths (commits 2075694, 5fba79c): a SELECT that names none of the columns the pending
in-place UPDATEs set skips sending them (WriteBuffer.to_flush with names_read); an UPDATE by whole key of a row
not held reads it whole cheaply and computes it in the client (Transaction._read_updated_row); a DELETE by whole
keys decides from held rows or the same cheap read (Transaction._held_deletes). Every result, rowcount, error and
committed row must be what plain MonetDB under snapshot isolation gives, i.e. what tique gave before (and gives
with ``held_rows=False``)."""

from __future__ import annotations

import decimal
from collections.abc import Callable, Iterator
from contextlib import closing
from typing import Any

import pytest

import tique
from tests.conftest import closing_connections
from tique.checkpoint import Checkpointer
from tique.engine import open_engine

Outcome = tuple[Any, ...]


@pytest.fixture
def opened(embedded_url: str) -> Iterator[Callable[..., tique.Connection]]:
    yield from closing_connections(embedded_url)


def table(url: str, name: str, ddl: str, rows: list[tuple[Any, ...]]) -> str:
    with closing(
        tique.connect(url, on_statement_error="continue")
    ) as conn:  # closed: an open session pins its last snapshot
        conn.cursor().execute(ddl.format(t=name))
        if rows:
            conn.bulk_load(name, rows)
        conn.commit()
    return name


def q(cur: Any, sql: str, params: tuple[Any, ...] | None = None) -> Outcome:
    """A statement's outcome: its rows (or rowcount), or its error class."""
    try:
        cur.execute(sql, params)
    except tique.Error as exc:
        return ("error", type(exc).__name__)
    return ("rows", [tuple(r) for r in cur.fetchall()]) if cur.description else ("count", cur.rowcount)


def contents(url: str, name: str, order: str = "1") -> list[tuple[Any, ...]]:
    with closing(
        tique.connect(url, on_statement_error="continue")
    ) as conn:  # closed: an open session pins its last snapshot
        cur = conn.cursor()
        cur.execute(f"SELECT * FROM {name} ORDER BY {order}")
        rows = [tuple(r) for r in cur.fetchall()]
        conn.rollback()
    return rows


# ---- 1. reads that skip pending updates of columns they do not name ------------------------------------------


def test_a_whole_row_key_read_after_skipping_keeps_the_own_update(
    embedded_url: str, unique_name: Callable[[str], str], opened: Callable[..., tique.Connection]
) -> None:
    """Found by this file: a key read was planned without the transaction's own versions (it names no updated
    column) but, fetching whole rows, sent the pending UPDATE first and then read the snapshot without it: the
    stale row was held, and a later UPDATE computed on it lost the transaction's own earlier UPDATE."""
    t = table(embedded_url, unique_name("fa"), "CREATE TABLE {t} (k INT PRIMARY KEY, v INT, w INT)",
              [(1, 10, 100), (2, 20, 200)])  # fmt: skip
    conn, other = opened(), opened()
    cur = conn.cursor()
    read_w = f"SELECT w FROM {t} WHERE k = %s"
    cur.execute(f"UPDATE {t} SET v = %s WHERE k = %s", (11, 1))  # pending: the row of key 1 held
    other.cursor().execute(f"CREATE TABLE {unique_name('fz')} (a INT)")  # DDL in the process: held rows forgotten
    cur.execute(read_w, (2,))  # (this plan: new with the catalog)
    cur.execute(f"UPDATE {t} SET v = v + 0 WHERE k = %s", (2,))  # the read learns to fetch whole rows
    cur.execute(read_w, (1,))
    assert cur.fetchall() == [(100,)]
    cur.execute(f"UPDATE {t} SET v = v + 1 WHERE k = %s", (1,))
    cur.execute(f"SELECT v FROM {t} WHERE k = %s", (1,))
    got = cur.fetchall()
    conn.commit()
    assert got == [(12,)] and contents(embedded_url, t) == [(1, 12, 100), (2, 20, 200)]


def test_the_same_with_held_rows_off_is_right(
    embedded_url: str, unique_name: Callable[[str], str], opened: Callable[..., tique.Connection]
) -> None:
    """The control of the test above: the old paths keep the own UPDATE."""
    t = table(embedded_url, unique_name("fb"), "CREATE TABLE {t} (k INT PRIMARY KEY, v INT, w INT)",
              [(1, 10, 100), (2, 20, 200)])  # fmt: skip
    conn, other = opened(held_rows=False), opened()
    cur = conn.cursor()
    cur.execute(f"UPDATE {t} SET v = %s WHERE k = %s", (11, 1))
    other.cursor().execute(f"CREATE TABLE {unique_name('fz')} (a INT)")
    cur.execute(f"SELECT w FROM {t} WHERE k = %s", (2,))
    cur.execute(f"UPDATE {t} SET v = v + 0 WHERE k = %s", (2,))
    cur.execute(f"SELECT w FROM {t} WHERE k = %s", (1,))
    cur.execute(f"UPDATE {t} SET v = v + 1 WHERE k = %s", (1,))
    conn.commit()
    assert contents(embedded_url, t) == [(1, 12, 100), (2, 20, 200)]


@pytest.mark.parametrize(
    "read, expected",
    [
        ('SELECT SUM("Amt") FROM {t}', [(111 + 2,)]),  # a quoted mixed-case name is the column set
        ("SELECT SUM(amt) FROM {t}", [(12 + 20,)]),  # the lower-case column of that spelling: untouched
        ("SELECT k FROM {t} ORDER BY 1", [(1,), (2,)]),
        ('SELECT SUM(x.amt) FROM {t} AS x WHERE x.k IN (SELECT y.k FROM {t} AS y WHERE y."Amt" > 100)', [(12,)]),
        ('SELECT (SELECT MAX("Amt") FROM {t} AS y WHERE y.k = x.k) FROM {t} AS x ORDER BY x.k', [(111,), (2,)]),
        ('SELECT k FROM {t} WHERE "Amt" > 100 UNION SELECT k FROM {t} WHERE amt > 100', [(1,)]),
        ('SELECT COUNT(*) FROM {t} GROUP BY "Amt" > 100 ORDER BY 1', [(1,), (1,)]),
        ('SELECT SUM(amt + 0 * "Amt") FROM {t}', [(12 + 20,)]),
    ],
)
def test_names_that_differ_only_by_case(
    embedded_url: str,
    unique_name: Callable[[str], str],
    opened: Callable[..., tique.Connection],
    read: str,
    expected: list[tuple[Any, ...]],
) -> None:
    t = table(embedded_url, unique_name("fc"), 'CREATE TABLE {t} (k INT PRIMARY KEY, "Amt" INT, amt INT, two INT)',
              [(1, 1, 12, 20), (2, 2, 20, 20)])  # fmt: skip
    conn = opened()
    cur = conn.cursor()
    cur.execute(f'UPDATE {t} SET "Amt" = %s WHERE k = %s', (111, 1))
    cur.execute(f"UPDATE {t} SET two = 40 WHERE k = 2")
    got = q(cur, read.format(t=t))
    conn.rollback()
    assert got == ("rows", expected)


def test_two_tables_with_a_same_named_column(
    embedded_url: str, unique_name: Callable[[str], str], opened: Callable[..., tique.Connection]
) -> None:
    """The column set belongs to one table, a same-named column of the other is what a join reads: sent (its name
    is spelled), and every alias or column named like the other table still sees the update."""
    a = table(embedded_url, unique_name("fd"), "CREATE TABLE {t} (k INT PRIMARY KEY, d INT, e INT)",
              [(1, 0, 5), (2, 0, 6)])  # fmt: skip
    b = table(embedded_url, unique_name("fe"), "CREATE TABLE {t} (k INT PRIMARY KEY, d INT)", [(1, 0), (2, 0)])
    conn = opened()
    cur = conn.cursor()
    cur.execute(f"UPDATE {a} SET d = %s WHERE k = %s", (7, 1))
    reads = [
        f"SELECT SUM(x.e) FROM {a} AS x JOIN {b} AS y ON x.k = y.k WHERE y.d = 0",
        f"SELECT SUM(x.e) FROM {a} AS x JOIN {b} AS y ON x.k = y.k AND x.d = y.d",
        f"SELECT COUNT(*) FROM {a} AS d WHERE d.e > 5",
        f"SELECT SUM(e) FROM {a} WHERE k IN (SELECT k FROM {b} WHERE {b}.d = {a}.d)",
    ]
    got = [q(cur, sql) for sql in reads]
    conn.rollback()
    assert got == [("rows", [(11,)]), ("rows", [(6,)]), ("rows", [(1,)]), ("rows", [(6,)])]


def test_a_view_and_a_cte_hiding_the_column(
    embedded_url: str, unique_name: Callable[[str], str], opened: Callable[..., tique.Connection]
) -> None:
    t = table(embedded_url, unique_name("ff"), "CREATE TABLE {t} (k INT PRIMARY KEY, d INT, e INT)",
              [(1, 0, 5), (2, 0, 6)])  # fmt: skip
    view = unique_name("fv")
    with closing(
        tique.connect(embedded_url, on_statement_error="continue")
    ) as conn:  # closed: an open session pins its last snapshot
        conn.cursor().execute(f"CREATE VIEW {view} AS SELECT k AS a, d + e AS b FROM {t}")
        conn.commit()
    conn = opened()
    cur = conn.cursor()
    cur.execute(f"UPDATE {t} SET d = %s WHERE k = %s", (7, 1))
    got = [
        q(cur, f"SELECT SUM(b) FROM {view}"),
        q(cur, f"WITH c (x, y) AS (SELECT k, d FROM {t}) SELECT SUM(y) FROM c"),
        q(cur, f"SELECT COUNT(*) FROM {view} WHERE b > 10"),
    ]
    conn.rollback()
    assert got == [("rows", [(18,)]), ("rows", [(7,)]), ("rows", [(1,)])]


def test_a_failed_statement_keeps_what_a_read_must_send(
    embedded_url: str, unique_name: Callable[[str], str], opened: Callable[..., tique.Connection]
) -> None:
    """An UPDATE of a column that fails (a duplicate UNIQUE value) leaves the earlier pending UPDATE of another
    column to be sent to a read of that column, and reads of neither see the failed one."""
    t = table(embedded_url, unique_name("fg"), "CREATE TABLE {t} (k INT PRIMARY KEY, u INT UNIQUE, d INT)",
              [(1, 1, 0), (2, 2, 0)])  # fmt: skip
    conn = opened(on_statement_error="continue")
    cur = conn.cursor()
    cur.execute(f"UPDATE {t} SET d = %s WHERE k = %s", (7, 1))
    assert q(cur, f"UPDATE {t} SET u = %s WHERE k = %s", (2, 1)) == ("error", "UniqueViolation")
    assert q(cur, f"UPDATE {t} SET u = 2 WHERE d = 7") == ("error", "UniqueViolation")
    got = [q(cur, f"SELECT SUM(u) FROM {t}"), q(cur, f"SELECT SUM(d) FROM {t}")]
    conn.commit()
    assert got == [("rows", [(3,)]), ("rows", [(7,)])]
    assert contents(embedded_url, t) == [(1, 1, 7), (2, 2, 0)]


# ---- 2. UPDATE by whole key of a row not held ----------------------------------------------------------------


@pytest.mark.parametrize("held", [True, False])
def test_updates_computed_in_the_client_match_the_engine(
    embedded_url: str, unique_name: Callable[[str], str], opened: Callable[..., tique.Connection], held: bool
) -> None:
    """Overflow, NULL arithmetic, DECIMAL rounding and range, VARCHAR length: the same errors and rows as the
    engine's read of the UPDATE (held_rows=False); each failed statement leaves the transaction as it was."""
    t = table(
        embedded_url, unique_name("fh"),
        "CREATE TABLE {t} (k INT PRIMARY KEY, v INT, s SMALLINT, d DECIMAL(5,2), c VARCHAR(3))",
        [(1, 2147483647, 32767, decimal.Decimal("999.99"), "a"), (2, None, None, None, None)],
    )  # fmt: skip
    conn = opened(held_rows=held, on_statement_error="continue")
    cur = conn.cursor()
    got = [
        q(cur, f"UPDATE {t} SET v = v + %s WHERE k = %s", (1, 1)),
        q(cur, f"UPDATE {t} SET s = s - %s WHERE k = %s", (-1, 1)),
        q(cur, f"UPDATE {t} SET d = d + %s WHERE k = %s", (decimal.Decimal("0.01"), 1)),
        q(cur, f"UPDATE {t} SET d = d - %s WHERE k = %s", (decimal.Decimal("0.005"), 1)),
        q(cur, f"UPDATE {t} SET c = %s WHERE k = %s", ("abcd", 1)),
        q(cur, f"UPDATE {t} SET v = v + 1, s = s + %s, d = d + 1, c = %s WHERE k = %s", (1, "xy", 2)),
        q(cur, f"UPDATE {t} SET v = %s WHERE k = %s", (5, 3)),
        q(cur, f"SELECT * FROM {t} ORDER BY k"),
    ]
    conn.commit()
    assert got == [
        ("error", "DataError"),
        ("error", "DataError"),
        ("error", "DataError"),
        ("count", 1),
        ("error", "DataError"),
        ("count", 1),
        ("count", 0),
        ("rows", [(1, 2147483647, 32767, decimal.Decimal("999.99"), "a"),  # 999.985 rounds up
                  (2, None, None, None, "xy")]),
    ]  # fmt: skip


def test_first_committer_wins_through_the_checkpointer(
    embedded_url: str, unique_name: Callable[[str], str], opened: Callable[..., tique.Connection]
) -> None:
    """Another connection commits updates and a delete after this snapshot; the checkpointer runs before and
    after: the UPDATE and DELETE still read this snapshot, and COMMIT fails."""
    t = table(embedded_url, unique_name("fi"), "CREATE TABLE {t} (k INT PRIMARY KEY, v INT)", [(1, 1), (2, 2), (3, 3)])
    a, b = opened(), opened()
    acur, bcur = a.cursor(), b.cursor()
    checkpointer = Checkpointer(open_engine(embedded_url).connect())
    try:
        bcur.execute(f"UPDATE {t} SET v = 10 WHERE k = %s", (1,))
        b.commit()
        checkpointer.run_once()
        acur.execute("SELECT 1")  # a's snapshot: after b's first commit
        bcur.execute(f"UPDATE {t} SET v = 20 WHERE k = %s", (2,))
        bcur.execute(f"DELETE FROM {t} WHERE k = %s", (3,))
        b.commit()
        checkpointer.run_once()
        got = [
            q(acur, f"UPDATE {t} SET v = v + 1 WHERE k = %s", (1,)),
            q(acur, f"DELETE FROM {t} WHERE k IN (%s, %s)", (3, 4)),
            q(acur, f"UPDATE {t} SET v = v + 1 WHERE k = %s", (2,)),
            q(acur, f"SELECT * FROM {t} ORDER BY k"),
        ]
        assert got == [("count", 1), ("count", 1), ("count", 1), ("rows", [(1, 11), (2, 3)])]
        with pytest.raises(tique.errors.SerializationFailure):
            a.commit()
        checkpointer.run_once()
        assert contents(embedded_url, t) == [(1, 10), (2, 20)]
    finally:
        checkpointer.conn.close()


def test_a_prepared_update_across_transactions_reads_each_snapshot(
    embedded_url: str, unique_name: Callable[[str], str], opened: Callable[..., tique.Connection]
) -> None:
    t = table(embedded_url, unique_name("fj"), "CREATE TABLE {t} (k INT PRIMARY KEY, v INT)", [(1, 0), (2, 0)])
    a, b = opened(), opened()
    acur, bcur = a.cursor(), b.cursor()
    update = f"UPDATE {t} SET v = v + %s WHERE k = %s"
    delete = f"DELETE FROM {t} WHERE k = %s"
    for _i in range(4):  # planned, then prepared, then sent as EXEC
        acur.execute(update, (1, 1))
        a.commit()
        bcur.execute(update, (10, 1))
        b.commit()
    acur.execute(update, (1, 2))
    acur.execute(delete, (2,))
    a.commit()
    bcur.execute(delete, (2,))
    assert bcur.rowcount == 0
    b.commit()
    assert contents(embedded_url, t) == [(1, 44)]


def test_ddl_in_another_connection_between_statements(
    embedded_url: str, unique_name: Callable[[str], str], opened: Callable[..., tique.Connection]
) -> None:
    """ALTER TABLE ADD COLUMN by another connection after this transaction read the table: its UPDATE by key
    fails (the table changed under it: README, "DDL of another session under a running transaction"), and nothing
    of it is written; run again, the UPDATE and DELETE by key see the new column's default."""
    t = table(embedded_url, unique_name("fk"), "CREATE TABLE {t} (k INT PRIMARY KEY, v INT)", [(1, 1), (2, 2)])
    a, b = opened(), opened()
    acur = a.cursor()
    acur.execute(f"SELECT v FROM {t} WHERE k = %s", (1,))
    b.cursor().execute(f"ALTER TABLE {t} ADD COLUMN x INT DEFAULT 5")
    b.commit()
    assert q(acur, f"UPDATE {t} SET v = v + 1 WHERE k = %s", (1,)) == ("error", "SerializationFailure")
    a.rollback()
    assert contents(embedded_url, t) == [(1, 1, 5), (2, 2, 5)]
    got = [
        q(acur, f"UPDATE {t} SET v = v + 1 WHERE k = %s", (1,)),
        q(acur, f"DELETE FROM {t} WHERE k = %s", (2,)),
    ]
    assert got == [("count", 1), ("count", 1)]
    a.commit()
    assert contents(embedded_url, t) == [(1, 2, 5)]


# ---- 3. DELETE by whole keys -------------------------------------------------------------------------------


def test_a_referenced_parent_is_still_refused_or_conflicts(
    embedded_url: str, unique_name: Callable[[str], str], opened: Callable[..., tique.Connection]
) -> None:
    p = table(embedded_url, unique_name("fp"), "CREATE TABLE {t} (id INT PRIMARY KEY, v INT)", [(1, 1), (2, 2), (3, 3)])
    c = table(embedded_url, unique_name("fq"), f"CREATE TABLE {{t}} (id INT PRIMARY KEY, pid INT REFERENCES {p} (id))",
              [(10, 1)])  # fmt: skip
    a, b = opened(on_statement_error="continue"), opened(on_statement_error="continue")
    acur, bcur = a.cursor(), b.cursor()
    acur.execute("SELECT 1")
    bcur.execute(f"INSERT INTO {c} VALUES (%s, %s)", (20, 2))  # after a's snapshot
    b.commit()
    acur.execute(f"INSERT INTO {c} VALUES (%s, %s)", (30, 3))  # a's own pending child
    got = [
        q(acur, f"DELETE FROM {p} WHERE id = %s", (1,)),
        q(acur, f"DELETE FROM {p} WHERE id IN (%s, %s)", (3, 2)),  # 3 is referenced by a's own child
        q(acur, f"DELETE FROM {c} WHERE id = %s", (30,)),
        q(acur, f"DELETE FROM {p} WHERE id IN (%s, %s, %s)", (3, 2, 2)),  # 2: referenced only after the snapshot
        q(acur, f"SELECT id FROM {p} ORDER BY id"),
    ]
    assert got == [
        ("error", "ForeignKeyViolation"), ("error", "ForeignKeyViolation"), ("count", 1), ("count", 2),
        ("rows", [(1,)]),
    ]  # fmt: skip
    with pytest.raises(tique.errors.SerializationFailure):
        a.commit()
    assert contents(embedded_url, p) == [(1, 1), (2, 2), (3, 3)]


def test_deletes_of_own_writes_and_of_rows_others_changed(
    embedded_url: str, unique_name: Callable[[str], str], opened: Callable[..., tique.Connection]
) -> None:
    """Rowcounts from the snapshot and the transaction's own writes: a key inserted after the snapshot by another
    connection is not there, one it deleted still is, the transaction's own insert and re-insert are."""
    t = table(embedded_url, unique_name("fr"), "CREATE TABLE {t} (k INT PRIMARY KEY, v INT)", [(1, 1), (2, 2)])
    a, b = opened(insert_check="immediate"), opened()
    acur, bcur = a.cursor(), b.cursor()
    acur.execute("SELECT 1")
    bcur.execute(f"INSERT INTO {t} VALUES (3, 3)")
    b.commit()
    got = [
        q(acur, f"DELETE FROM {t} WHERE k IN (%s, %s)", (3, 4)),
        q(acur, f"INSERT INTO {t} VALUES (%s, %s)", (5, 5)),
        q(acur, f"DELETE FROM {t} WHERE k = %s", (2,)),
        q(acur, f"INSERT INTO {t} VALUES (%s, %s)", (2, 22)),
        q(acur, f"UPDATE {t} SET v = v + 1 WHERE k = %s", (5,)),
        q(acur, f"DELETE FROM {t} WHERE k IN (%s, %s, %s)", (5, 2, 1)),
        q(acur, f"DELETE FROM {t} WHERE k IN (%s, %s, %s)", (5, 2, 1)),
        q(acur, f"SELECT COUNT(*) FROM {t}"),
    ]
    assert got == [("count", 0), ("count", 1), ("count", 1), ("count", 1), ("count", 1), ("count", 3),
                   ("count", 0), ("rows", [(0,)])]  # fmt: skip
    a.commit()
    assert contents(embedded_url, t) == [(3, 3)]


def test_keys_of_other_types_and_parameters_the_engine_converts(
    embedded_url: str, unique_name: Callable[[str], str], opened: Callable[..., tique.Connection]
) -> None:
    t = table(embedded_url, unique_name("fs"), "CREATE TABLE {t} (k VARCHAR(5) PRIMARY KEY, v INT)",
              [("a", 1), ("b", 2)])  # fmt: skip
    n = table(embedded_url, unique_name("ft"), "CREATE TABLE {t} (k SMALLINT PRIMARY KEY, v INT)", [(1, 1), (2, 2)])
    conn = opened()
    cur = conn.cursor()
    got = [
        q(cur, f"UPDATE {t} SET v = v + 1 WHERE k = %s", ("a",)),
        q(cur, f"DELETE FROM {t} WHERE k IN (%s, %s)", ("b", "b ")),
        q(cur, f"UPDATE {n} SET v = v + 1 WHERE k = %s", (70000,)),
        q(cur, f"DELETE FROM {n} WHERE k = %s", (1.0,)),
        q(cur, f"DELETE FROM {n} WHERE k = %s", ("2",)),
    ]
    conn.commit()
    assert got == [("count", 1), ("count", 1), ("count", 0), ("count", 1), ("count", 1)]
    assert contents(embedded_url, t) == [("a", 2)] and contents(embedded_url, n) == []
