"""cursor.execute returns what pymonetdb's does: the rowcount, None when it is unknown; executemany the total. A
cursor returned instead is always true, so pymonetdb code testing ``if cur.execute("SELECT ... WHERE k = %s")``
for a row took every key as present (found by a drop-in review). ``Connection.execute`` returns the cursor."""

from __future__ import annotations

from collections.abc import Callable

import tique


def test_execute_returns_the_rowcount_as_pymonetdb(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    conn = connect()
    cur = conn.cursor()
    t = unique_name("ret")
    assert cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT)") is None
    assert cur.execute(f"INSERT INTO {t} VALUES (1, 1), (2, 2)") == 2
    assert cur.executemany(f"INSERT INTO {t} VALUES (%s, %s)", [(3, 3), (4, 4), (5, 5)]) == 3
    assert cur.execute(f"SELECT v FROM {t} WHERE k = %s", (9,)) == 0
    assert not cur.execute(f"SELECT v FROM {t} WHERE k = %s", (9,))
    assert cur.execute(f"SELECT v FROM {t} WHERE k = %s", (2,)) == 1
    assert cur.fetchall() == [(2,)]
    assert cur.execute(f"UPDATE {t} SET v = v + 1 WHERE k > 2") == 3
    assert cur.execute(f"DELETE FROM {t} WHERE k = 5") == 1
    conn.commit()
    assert conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone() == (4,)


def test_statements_that_write_no_rows_return_none(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    """The embedded C API leaves the last write's count for a statement that writes none (SET, DDL): execute
    returned it (found by a review); pymonetdb returns None."""
    conn = connect()
    cur = conn.cursor()
    t, s = unique_name("pl"), unique_name("sch")
    cur.execute(f"CREATE TABLE {t} (a INT) -- tique: plain")
    assert cur.execute(f"INSERT INTO {t} VALUES (1), (2), (3)") in (3, None)  # None over MAPI (README)
    assert cur.execute(f"CREATE SCHEMA {s}") is None
    assert cur.execute(f"SET SCHEMA {s}") is None
    assert cur.execute("SET SCHEMA sys") is None
    assert cur.execute(f"COMMENT ON TABLE {t} IS 'x'") is None
    assert cur.execute(f"CREATE INDEX {t}_i ON {t} (a)") is None
