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
