"""UNIQUE constraints on transactional tables are enforced like primary keys: checked when a row is written
(against the snapshot and the transaction's own writes) and certified at COMMIT, so two concurrent transactions
cannot both commit the same value. NULLs never conflict (MonetDB's rule)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique


def _table(conn: tique.Connection, name: str, columns: str) -> tique.Cursor:
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} ({columns})")
    return cur


def test_duplicate_value_refused(connect: Callable[..., tique.Connection], unique_name) -> None:
    t = unique_name("uq")
    a = connect(on_statement_error="continue")
    cur = _table(a, t, "id INT PRIMARY KEY, email VARCHAR(20) UNIQUE, v INT")
    cur.execute(f"INSERT INTO {t} VALUES (1, 'a@x', 1), (2, 'b@x', 2)")
    with pytest.raises(tique.IntegrityError, match="email"):
        cur.execute(f"INSERT INTO {t} VALUES (3, 'a@x', 3)")  # its own uncommitted row holds 'a@x'
    a.commit()
    with pytest.raises(tique.IntegrityError):
        cur.execute(f"INSERT INTO {t} VALUES (4, 'b@x', 4)")  # a committed row holds it
    with pytest.raises(tique.IntegrityError):
        cur.execute(f"INSERT INTO {t} VALUES (5, 'c@x', 5), (6, 'c@x', 6)")  # within one statement
    with pytest.raises(tique.IntegrityError):
        cur.execute(f"UPDATE {t} SET email = 'a@x' WHERE id = 2")
    cur.execute(f"SELECT id, email FROM {t} ORDER BY id")
    assert cur.fetchall() == [(1, "a@x"), (2, "b@x")]  # refused statements left nothing behind
    a.commit()


def test_nulls_never_conflict(connect: Callable[..., tique.Connection], unique_name) -> None:
    t = unique_name("uq_null")
    a = connect(on_statement_error="continue")
    cur = _table(a, t, "id INT PRIMARY KEY, a INT, b INT, UNIQUE (a, b)")
    cur.execute(f"INSERT INTO {t} VALUES (1, NULL, NULL), (2, NULL, NULL), (3, 1, NULL), (4, 1, NULL), (5, 1, 2)")
    a.commit()
    cur.execute(f"INSERT INTO {t} VALUES (6, 1, 3), (7, 2, 2)")  # multi-column: only the whole tuple counts
    with pytest.raises(tique.IntegrityError):
        cur.execute(f"INSERT INTO {t} VALUES (8, 1, 2)")
    a.commit()
    cur.execute(f"SELECT COUNT(*) FROM {t}")
    assert cur.fetchone()[0] == 7


def test_update_frees_the_old_value(connect: Callable[..., tique.Connection], unique_name) -> None:
    t = unique_name("uq_move")
    a = connect(on_statement_error="continue")
    cur = _table(a, t, "id INT PRIMARY KEY, code INT, CONSTRAINT uq_code UNIQUE (code)")
    cur.execute(f"INSERT INTO {t} VALUES (1, 10), (2, 20)")
    a.commit()
    cur.execute(f"UPDATE {t} SET code = 11 WHERE id = 1")
    cur.execute(f"INSERT INTO {t} VALUES (3, 10)")  # 10 was freed by this transaction's update
    cur.execute(f"UPDATE {t} SET code = 30 - code WHERE id IN (2, 3)")  # a swap within one statement: 10 <-> 20
    cur.execute(f"DELETE FROM {t} WHERE id = 1")
    cur.execute(f"INSERT INTO {t} VALUES (4, 11)")  # freed by the delete
    a.commit()
    cur.execute(f"SELECT id, code FROM {t} ORDER BY id")
    assert cur.fetchall() == [(2, 10), (3, 20), (4, 11)]


@pytest.mark.parametrize("keyless", [False, True])
def test_concurrent_claims_one_commits(connect: Callable[..., tique.Connection], unique_name, keyless: bool) -> None:
    t = unique_name("uq_race")
    a, b = connect(on_statement_error="continue"), connect(on_statement_error="continue")
    cur = _table(a, t, "id INT, name VARCHAR(10) UNIQUE" if keyless else "id INT PRIMARY KEY, name VARCHAR(10) UNIQUE")
    a.commit()
    ca, cb = a.cursor(), b.cursor()
    ca.execute(f"INSERT INTO {t} VALUES (1, 'x')")
    cb.execute(f"INSERT INTO {t} VALUES (2, 'x')")  # b's snapshot does not see a's row: accepted for now
    a.commit()
    with pytest.raises(tique.SerializationFailure):
        b.commit()  # both must not commit 'x'
    cur.execute(f"SELECT id FROM {t} WHERE name = 'x'")
    assert cur.fetchall() == [(1,)]


def test_concurrent_different_values_both_commit(connect: Callable[..., tique.Connection], unique_name) -> None:
    t = unique_name("uq_norace")
    a, b = connect(on_statement_error="continue"), connect(on_statement_error="continue")
    _table(a, t, "id INT PRIMARY KEY, name VARCHAR(10) UNIQUE")
    a.commit()
    a.cursor().execute(f"INSERT INTO {t} VALUES (1, 'x')")
    b.cursor().execute(f"INSERT INTO {t} VALUES (2, 'y')")
    a.commit()
    b.commit()  # distinct values: no conflict (the value's hash is namespaced: not a key's)
    cur = a.cursor()
    cur.execute(f"SELECT COUNT(*) FROM {t}")
    assert cur.fetchone()[0] == 2


def test_constrained_columns_keep_their_names(connect: Callable[..., tique.Connection], unique_name) -> None:
    t = unique_name("uq_alter")
    a = connect(on_statement_error="continue")
    cur = _table(a, t, "id INT PRIMARY KEY, email VARCHAR(20) UNIQUE, v INT")
    for action in ("DROP COLUMN email", "RENAME COLUMN email TO mail"):
        with pytest.raises(tique.NotSupportedError, match="UNIQUE"):
            cur.execute(f"ALTER TABLE {t} {action}")
    cur.execute(f"ALTER TABLE {t} RENAME COLUMN v TO w")  # other columns are free
    cur.execute(f"INSERT INTO {t} VALUES (1, 'a', 1)")
    with pytest.raises(tique.IntegrityError):
        cur.execute(f"INSERT INTO {t} VALUES (2, 'a', 2)")


def test_many_rows_checked_in_batches(connect: Callable[..., tique.Connection], unique_name) -> None:
    t = unique_name("uq_many")
    a = connect(on_statement_error="continue")
    cur = _table(a, t, "id INT PRIMARY KEY, code INT UNIQUE")
    a.commit()
    a.bulk_load(t, [(i, i) for i in range(2500)])  # stable rows
    cur.execute(f"INSERT INTO {t} SELECT id + 10000, id + 10000 FROM {t}")  # 2500 new values: several queries
    with pytest.raises(tique.IntegrityError, match="2499"):
        cur.execute(f"INSERT INTO {t} SELECT id + 20000, code FROM {t} WHERE id >= 2499 AND id < 10000")
    a.commit()
    cur.execute(f"SELECT COUNT(*), COUNT(DISTINCT code) FROM {t}")
    assert cur.fetchone() == (5000, 5000)
