"""A statement of a running transaction that meets another session's DDL of a table it uses fails with a
SerializationFailure (README, "DDL of another session under a running transaction"), whatever the DDL did to the
table: a table dropped and created again (its rows are not the snapshot's; the statement used to read the new,
empty table and commit), a column dropped or renamed (the statement used to fail planning with a
ProgrammingError naming the column), a column added (a SELECT * used to show it, with values no snapshot of the
transaction held), a table renamed (a ProgrammingError). The transaction's own DDL, and DDL of tables it does not
use, change nothing. Found by a review of this round's cache-first reads."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique

Connect = Callable[..., tique.Connection]

DDL = {
    "drop and create": [
        "DROP TABLE {t}",
        "CREATE TABLE {t} (k INT PRIMARY KEY, v INT)",
        "INSERT INTO {t} VALUES (1, 500)",
    ],
    "drop column": ["ALTER TABLE {t} DROP COLUMN v"],
    "rename column": ["ALTER TABLE {t} RENAME COLUMN v TO w"],
    "add column": ["ALTER TABLE {t} ADD COLUMN w INT DEFAULT 7"],
    "rename table": ["ALTER TABLE {t} RENAME TO {t}_moved"],
    "drop table": ["DROP TABLE {t}"],
}
STATEMENTS = [
    "SELECT SUM(v) FROM {t}",
    "SELECT v FROM {t} WHERE k = 1",
    "SELECT * FROM {t}",
    "UPDATE {t} SET v = v + 1 WHERE k = 1",
    "INSERT INTO {t} (k, v) VALUES (9, 9)",
]


def _table(conn: tique.Connection, name: str) -> None:
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT)")
    cur.execute(f"INSERT INTO {name} VALUES (1, 10), (2, 20)")
    conn.commit()


@pytest.mark.parametrize("ddl", list(DDL))
@pytest.mark.parametrize("statement", STATEMENTS)
def test_a_statement_after_another_sessions_ddl_fails_retryably(
    connect: Connect, unique_name: Callable[[str], str], ddl: str, statement: str
) -> None:
    name = unique_name("dut")
    other, reader = connect(), connect()
    _table(other, name)
    cur = reader.cursor()
    cur.execute(f"SELECT SUM(v) FROM {name}")  # the transaction begins and reads the table
    assert cur.fetchall() == [(30,)]
    for sql in DDL[ddl]:
        other.cursor().execute(sql.format(t=name))
    other.commit()
    with pytest.raises(tique.SerializationFailure, match="DDL in another session"):
        cur.execute(statement.format(t=name))
    reader.rollback()
    if ddl in ("rename table", "drop table"):
        return
    cur.execute(f"SELECT COUNT(*) FROM {name}")  # run again, the transaction uses the table as it is now
    assert cur.fetchone() == ((1,) if ddl == "drop and create" else (2,))
    reader.commit()


def test_own_ddl_and_ddl_of_other_tables_fail_nothing(connect: Connect, unique_name: Callable[[str], str]) -> None:
    mine, others = unique_name("own"), unique_name("others")
    other, conn = connect(), connect()
    _table(other, mine)
    _table(other, others)
    cur = conn.cursor()
    cur.execute(f"SELECT SUM(v) FROM {mine}")
    cur.execute(f"ALTER TABLE {mine} ADD COLUMN w INT DEFAULT 7")  # this session's own DDL
    other.cursor().execute(f"ALTER TABLE {others} ADD COLUMN w INT DEFAULT 7")  # another table's
    other.commit()
    cur.execute(f"SELECT k, v, w FROM {mine} ORDER BY k")
    assert cur.fetchall() == [(1, 10, 7), (2, 20, 7)]
    cur.execute(f"UPDATE {mine} SET w = 8 WHERE k = 1")
    conn.commit()
    cur.execute(f"SELECT w FROM {mine} WHERE k = 1")
    assert cur.fetchall() == [(8,)]
    conn.commit()


def test_another_sessions_ddl_after_own_ddl_still_fails(connect: Connect, unique_name: Callable[[str], str]) -> None:
    """Own DDL of a table covers that DDL only: another session's DROP and CREATE of the table after it fails the
    next statement; and own DDL of another table covers nothing of this one (found by a review: both were taken
    for the transaction's own)."""
    name, unrelated = unique_name("after_own"), unique_name("unrelated")
    other, conn = connect(), connect()
    _table(other, name)
    cur = conn.cursor()
    cur.execute(f"SELECT SUM(v) FROM {name}")
    cur.execute(f"ALTER TABLE {name} ADD COLUMN w INT DEFAULT 7")  # own
    ocur = other.cursor()
    ocur.execute(f"DROP TABLE {name}")
    ocur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT)")
    ocur.execute(f"INSERT INTO {name} VALUES (1, 500)")
    other.commit()
    with pytest.raises(tique.SerializationFailure):
        cur.execute(f"SELECT SUM(v) FROM {name}")
    conn.rollback()
    cur.execute(f"SELECT SUM(v) FROM {name}")
    assert cur.fetchall() == [(500,)]
    ocur.execute(f"ALTER TABLE {name} ADD COLUMN w INT DEFAULT 7")
    other.commit()
    cur.execute(f"CREATE TABLE {unrelated} (k INT PRIMARY KEY)")  # own DDL of another table
    with pytest.raises(tique.SerializationFailure):
        cur.execute(f"SELECT * FROM {name}")
    conn.rollback()


def test_a_table_created_since_the_begin_can_be_used(connect: Connect, unique_name: Callable[[str], str]) -> None:
    """A table another session created after the transaction began is no table its snapshot saw otherwise: it is
    read as the snapshot has it (empty) and written, as before (a review found it failed the statement)."""
    old, new = unique_name("old"), unique_name("new")
    other, conn = connect(), connect()
    _table(other, old)
    cur = conn.cursor()
    cur.execute(f"SELECT SUM(v) FROM {old}")
    _table(other, new)
    cur.execute(f"SELECT COUNT(*) FROM {new}")
    assert cur.fetchone() == (0,)  # its rows came after the snapshot
    cur.execute(f"INSERT INTO {new} VALUES (3, 30)")
    conn.commit()
    cur.execute(f"SELECT k FROM {new} ORDER BY k")
    assert cur.fetchall() == [(1,), (2,), (3,)]
    conn.commit()
