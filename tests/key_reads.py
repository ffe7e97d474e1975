"""Reads by key of a table (k INT PRIMARY KEY, v INT, pad ...) for the tests of the sets of keys with Cache rows
(tests/test_cache_keys.py embedded, tests/test_record_keys.py over MAPI): the read that learns to read whole, and
the forms its statement takes."""

from __future__ import annotations

import tique

STORED_READ = "tq_cts, tq_seq FROM"  # a whole-row key read ranked in the client (both forms)


def read_whole_of_storage(sql: str) -> bool:
    """The whole-row key read of Storage alone (its rows need no ranking: no version columns): it names pad,
    which the tests' own reads never do."""
    return '"pad"' in sql and "__storage" in sql and "__cache" not in sql


def read_update(cur: tique.Cursor, name: str, k: int, add: int = 0) -> int:
    """A read, then an UPDATE of what it read: a later read of the key reads the row whole (the stored form)."""
    cur.execute(f"SELECT v FROM {name} WHERE k = %s", (k,))
    (value,) = cur.fetchone()  # type: ignore[misc]
    cur.execute(f"UPDATE {name} SET v = v + %s WHERE k = %s", (add, k))
    return int(value)


def twice(conn: tique.Connection, name: str, k: int) -> int:
    """The key's value, read in two transactions: the second reads it whole (a plan learns that in the first)."""
    cur = conn.cursor()
    values = []
    for _ in range(2):
        values.append(read_update(cur, name, k))
        conn.rollback()
    assert values[0] == values[1], values
    return values[0]
