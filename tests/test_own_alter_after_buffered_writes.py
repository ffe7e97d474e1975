"""A transaction's own ALTER TABLE after writes to the table still held in the client: they were sent after the
ALTER, in the table's old shape, and the transaction failed as if another session had altered the table (found by
a differential review; with a read between the write and the ALTER it committed). They are sent before it now."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique

CASES = {
    "drop column": ("ALTER TABLE {t} DROP COLUMN a", [(1, "y", 1), (3, "z", 3)]),
    "rename column": ("ALTER TABLE {t} RENAME COLUMN a TO aa", [(1, 1, "y", 1), (3, 3, "z", 3)]),
    "add column": ("ALTER TABLE {t} ADD COLUMN d INT DEFAULT 7", [(1, 1, "y", 1, 7), (3, 3, "z", 3, 7)]),
    "set default": ("ALTER TABLE {t} ALTER COLUMN c SET DEFAULT 6", [(1, 1, "y", 1), (3, 3, "z", 3)]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_own_alter_after_writes_held_in_the_client(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str], case: str
) -> None:
    conn = connect()
    cur = conn.cursor()
    t = unique_name("alt")
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, a INT, b VARCHAR(5), c INT DEFAULT 5)")
    cur.execute(f"INSERT INTO {t} VALUES (1, 1, 'x', 1), (2, 2, 'x', 2)")
    conn.commit()
    cur.execute(f"UPDATE {t} SET b = 'y' WHERE k = 1")  # no read after: held in the client
    cur.execute(f"DELETE FROM {t} WHERE k = 2")
    cur.execute(f"INSERT INTO {t} VALUES (3, 3, 'z', 3)")
    alter, expected = CASES[case]
    cur.execute(alter.format(t=t))
    cur.execute(f"SELECT * FROM {t} ORDER BY k")
    assert cur.fetchall() == expected
    conn.commit()
    other = connect()
    assert other.execute(f"SELECT * FROM {t} ORDER BY k").fetchall() == expected


AFTER = {
    "add column": ("ALTER TABLE {t} ADD COLUMN d VARCHAR(5) DEFAULT 'd'", "UPDATE {t} SET d = 'x' WHERE k = 1",
                   [(1, 9, "y", 1, "x"), (3, 3, "z", 3, "d"), (4, 4, "w", 4, "d")]),
    "drop column": ("ALTER TABLE {t} DROP COLUMN a", "INSERT INTO {t} VALUES (5, 'v', 5)",
                    [(1, "y", 1), (3, "z", 3), (4, "w", 4), (5, "v", 5)]),
    "rename column": ("ALTER TABLE {t} RENAME COLUMN a TO aa", "UPDATE {t} SET aa = 8 WHERE k = 3",
                      [(1, 9, "y", 1), (3, 8, "z", 3), (4, 4, "w", 4)]),
    "add, then delete": ("ALTER TABLE {t} ADD COLUMN d INT DEFAULT 7", "DELETE FROM {t} WHERE k = 4",
                         [(1, 9, "y", 1, 7), (3, 3, "z", 3, 7)]),
}  # fmt: skip


@pytest.mark.parametrize("case", list(AFTER))
def test_writes_after_the_own_alter_of_a_table_written_before_it(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str], case: str
) -> None:
    """Writes to the table after the transaction's own ALTER went into its buffer entry of the old shape: the
    flush failed ('number of values doesn't match') and the transaction was rolled back as if another session had
    altered the table (found by a differential review). MonetDB commits the same sequence."""
    conn = connect()
    cur = conn.cursor()
    t = unique_name("alw")
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, a INT, b VARCHAR(5), c INT DEFAULT 5)")
    cur.execute(f"INSERT INTO {t} VALUES (1, 1, 'x', 1), (2, 2, 'x', 2), (3, 3, 'z', 3)")
    conn.commit()
    cur.execute(f"UPDATE {t} SET a = 9, b = 'y' WHERE k = 1")
    cur.execute(f"DELETE FROM {t} WHERE k = 2")
    cur.execute(f"INSERT INTO {t} VALUES (4, 4, 'w', 4)")
    alter, write, expected = AFTER[case]
    cur.execute(alter.format(t=t))
    cur.execute(write.format(t=t))
    cur.execute(f"SELECT * FROM {t} ORDER BY k")
    assert cur.fetchall() == expected
    cur.execute(f"SELECT * FROM {t} WHERE k = 1")  # a key read: the row held whole has the new shape
    assert cur.fetchall() == expected[:1]
    conn.commit()
    other = connect()
    assert other.execute(f"SELECT * FROM {t} ORDER BY k").fetchall() == expected
