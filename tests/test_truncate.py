"""TRUNCATE on a transactional table is a transaction that deletes every visible row: snapshots keep reading
what they saw, and a concurrent writer of a truncated row cannot also commit."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique


def test_truncate_is_snapshot_isolated(connect: Callable[..., tique.Connection], unique_name) -> None:
    t = unique_name("trunc")
    a, b, c = connect(), connect(), connect()
    ca = a.cursor()
    ca.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, v INT)")
    ca.execute(f"INSERT INTO {t} VALUES (1, 1), (2, 2), (3, 3)")
    a.commit()
    cb, cc = b.cursor(), c.cursor()
    cb.execute(f"SELECT COUNT(*) FROM {t}")  # b's snapshot: 3 rows
    assert cb.fetchone()[0] == 3
    cc.execute(f"UPDATE {t} SET v = 20 WHERE id = 2")  # c writes a row TRUNCATE will delete
    ca.execute(f"TRUNCATE TABLE {t}")
    ca.execute(f"SELECT COUNT(*) FROM {t}")
    assert ca.fetchone()[0] == 0  # its own write
    a.commit()
    cb.execute(f"SELECT SUM(v) FROM {t}")
    assert cb.fetchone()[0] == 6  # b still reads its snapshot
    with pytest.raises(tique.SerializationFailure):
        c.commit()  # the truncation won: c's update must not silently survive
    b.rollback()
    cb.execute(f"SELECT COUNT(*) FROM {t}")
    assert cb.fetchone()[0] == 0
    cb.execute(f"INSERT INTO {t} VALUES (1, 9)")  # the table is still there and usable
    b.commit()


def test_truncate_rolled_back(connect: Callable[..., tique.Connection], unique_name) -> None:
    t = unique_name("trunc_rb")
    a = connect()
    ca = a.cursor()
    ca.execute(f"CREATE TABLE {t} (x INT)")  # no primary key: hidden row ids
    ca.execute(f"INSERT INTO {t} VALUES (1), (1), (2)")
    a.commit()
    ca.execute(f"TRUNCATE {t}")
    a.rollback()
    ca.execute(f"SELECT COUNT(*) FROM {t}")
    assert ca.fetchone()[0] == 3
    auto = connect(autocommit=True)
    auto.cursor().execute(f"TRUNCATE {t}")
    ca.execute(f"SELECT COUNT(*) FROM {t}")
    assert ca.fetchone()[0] == 3  # a's snapshot, taken before
    a.rollback()
    ca.execute(f"SELECT COUNT(*) FROM {t}")
    assert ca.fetchone()[0] == 0
