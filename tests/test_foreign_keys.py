"""FOREIGN KEY constraints on transactional tables, enforced under Snapshot Isolation: a child row needs its parent
in the snapshot (or the transaction's own writes), a parent row with children cannot be deleted or re-keyed
(NO ACTION / RESTRICT), and a child insert racing a parent delete cannot both commit, while children of one
parent written concurrently do not conflict with each other."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique
from tests.adversarial.clients import Client
from tests.conftest import ServeProcess


def _schema(conn: tique.Connection, parent: str, child: str) -> tique.Cursor:
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {parent} (id INT PRIMARY KEY, name VARCHAR(10))")
    cur.execute(
        f"CREATE TABLE {child} (id INT PRIMARY KEY, pid INT, v INT, FOREIGN KEY (pid) REFERENCES {parent} (id))"
    )
    cur.execute(f"INSERT INTO {parent} VALUES (1, 'one'), (2, 'two')")
    cur.execute(f"INSERT INTO {child} VALUES (10, 1, 0)")
    conn.commit()
    return cur


def test_child_needs_its_parent(connect: Callable[..., tique.Connection], unique_name) -> None:
    p, c = unique_name("fk_p"), unique_name("fk_c")
    a = connect(on_statement_error="continue")
    cur = _schema(a, p, c)
    with pytest.raises(tique.IntegrityError, match=p):
        cur.execute(f"INSERT INTO {c} VALUES (11, 3, 0)")
    cur.execute(f"INSERT INTO {c} VALUES (11, NULL, 0)")  # a NULL reference references nothing
    cur.execute(f"INSERT INTO {p} VALUES (3, 'three')")
    cur.execute(f"INSERT INTO {c} VALUES (12, 3, 0)")  # its own uncommitted parent
    with pytest.raises(tique.IntegrityError):
        cur.execute(f"UPDATE {c} SET pid = 4 WHERE id = 10")
    cur.execute(f"UPDATE {c} SET pid = 2 WHERE id = 10")
    a.commit()
    cur.execute(f"SELECT id, pid FROM {c} ORDER BY id")
    assert cur.fetchall() == [(10, 2), (11, None), (12, 3)]


def test_parent_with_children_stays(connect: Callable[..., tique.Connection], unique_name) -> None:
    p, c = unique_name("fk_p"), unique_name("fk_c")
    a = connect(on_statement_error="continue")
    cur = _schema(a, p, c)
    with pytest.raises(tique.IntegrityError, match=c):
        cur.execute(f"DELETE FROM {p} WHERE id = 1")
    with pytest.raises(tique.IntegrityError):
        cur.execute(f"UPDATE {p} SET id = 5 WHERE id = 1")  # re-keying it orphans the child too
    cur.execute(f"UPDATE {p} SET name = 'uno' WHERE id = 1")  # other columns are free
    cur.execute(f"DELETE FROM {p} WHERE id = 2")  # no children
    cur.execute(f"DELETE FROM {c} WHERE id = 10")
    cur.execute(f"DELETE FROM {p} WHERE id = 1")  # its child is gone in this transaction
    a.commit()
    cur.execute(f"SELECT COUNT(*) FROM {p}")
    assert cur.fetchone()[0] == 0


@pytest.mark.parametrize("first", ["parent", "child"])
def test_child_insert_races_parent_delete(connect: Callable[..., tique.Connection], unique_name, first: str) -> None:
    p, c = unique_name("fk_p"), unique_name("fk_c")
    a, b = connect(on_statement_error="continue"), connect(on_statement_error="continue")
    cur = _schema(a, p, c)
    deleter, inserter = a, b
    deleter.cursor().execute(f"DELETE FROM {p} WHERE id = 2")  # no child in its snapshot
    inserter.cursor().execute(f"INSERT INTO {c} VALUES (20, 2, 0)")  # its snapshot still has parent 2
    winner, loser = (deleter, inserter) if first == "parent" else (inserter, deleter)
    winner.commit()
    with pytest.raises(tique.SerializationFailure):
        loser.commit()
    cur.execute(f"SELECT COUNT(*) FROM {c} WHERE pid NOT IN (SELECT id FROM {p})")
    assert cur.fetchone()[0] == 0  # no orphan


def test_children_of_one_parent_do_not_conflict(connect: Callable[..., tique.Connection], unique_name) -> None:
    p, c = unique_name("fk_p"), unique_name("fk_c")
    a, b, d = (
        connect(on_statement_error="continue"),
        connect(on_statement_error="continue"),
        connect(on_statement_error="continue"),
    )
    cur = _schema(a, p, c)
    a.cursor().execute(f"INSERT INTO {c} VALUES (21, 1, 0)")
    b.cursor().execute(f"INSERT INTO {c} VALUES (22, 1, 0)")
    d.cursor().execute(f"UPDATE {p} SET name = 'uno' WHERE id = 1")  # not a key change: no conflict either
    a.commit()
    b.commit()
    d.commit()
    cur.execute(f"SELECT COUNT(*) FROM {c} WHERE pid = 1")
    assert cur.fetchone()[0] == 3


def test_actions_other_than_no_action_refused(connect: Callable[..., tique.Connection], unique_name) -> None:
    p, c = unique_name("fk_p"), unique_name("fk_c")
    cur = connect(on_statement_error="continue").cursor()
    cur.execute(f"CREATE TABLE {p} (id INT PRIMARY KEY, u INT)")
    with pytest.raises(tique.NotSupportedError, match="ON DELETE CASCADE"):
        cur.execute(f"CREATE TABLE {c} (id INT PRIMARY KEY, pid INT REFERENCES {p} (id) ON DELETE CASCADE)")
    with pytest.raises(tique.NotSupportedError, match="primary key"):
        cur.execute(f"CREATE TABLE {c} (id INT PRIMARY KEY, pu INT REFERENCES {p} (u))")
    cur.execute(f"CREATE TABLE {c} (id INT PRIMARY KEY, pid INT REFERENCES {p} ON DELETE RESTRICT)")
    with pytest.raises(tique.ProgrammingError, match=c):
        cur.execute(f"DROP TABLE {p}")  # a table other tables reference stays until they go
    cur.execute(f"DROP TABLE {c}")
    cur.execute(f"DROP TABLE {p}")


def test_new_child_table_fails_a_concurrent_parent_writer(server: ServeProcess, unique_name) -> None:
    """A transaction in another process that deleted a parent row before a child table referencing it existed
    (its catalog knew no FOREIGN KEY) cannot commit over a child row inserted meanwhile: creating the child table
    counts as DDL of the parent."""
    p, c = unique_name("fk_p"), unique_name("fk_c")
    a, b = tique.connect(server.url), Client(server.url)
    try:
        cur = a.cursor()
        cur.execute(f"CREATE TABLE {p} (id INT PRIMARY KEY)")
        cur.execute(f"INSERT INTO {p} VALUES (1)")
        a.commit()
        b.ok(f"DELETE FROM {p} WHERE id = 1")
        cur.execute(f"CREATE TABLE {c} (id INT PRIMARY KEY, pid INT REFERENCES {p})")
        cur.execute(f"INSERT INTO {c} VALUES (1, 1)")
        a.commit()
        assert b.commit().get("error") == "SerializationFailure"
        cur.execute(f"SELECT COUNT(*) FROM {p}")
        assert cur.fetchone()[0] == 1
    finally:
        b.close()
        a.close()


def test_self_reference_and_composite_keys(connect: Callable[..., tique.Connection], unique_name) -> None:
    emp, line, order = unique_name("fk_emp"), unique_name("fk_line"), unique_name("fk_order")
    a = connect(on_statement_error="continue")
    cur = a.cursor()
    cur.execute(f"CREATE TABLE {emp} (id INT PRIMARY KEY, boss INT REFERENCES {emp} (id))")
    cur.execute(f"INSERT INTO {emp} VALUES (1, NULL), (2, 1), (3, 2)")  # rows of one statement reference each other
    with pytest.raises(tique.IntegrityError):
        cur.execute(f"DELETE FROM {emp} WHERE id = 2")  # 3 reports to 2
    cur.execute(f"DELETE FROM {emp} WHERE id IN (2, 3)")  # the whole chain below 1 at once
    cur.execute(f"CREATE TABLE {order} (w INT, o INT, PRIMARY KEY (w, o))")
    cur.execute(
        f"CREATE TABLE {line} (id INT PRIMARY KEY, o INT, w INT, CONSTRAINT fk FOREIGN KEY (o, w) "
        f"REFERENCES {order} (o, w))"
    )
    cur.execute(f"INSERT INTO {order} VALUES (1, 7)")
    cur.execute(f"INSERT INTO {line} VALUES (1, 7, 1), (2, NULL, 5)")  # columns matched by name, not position
    with pytest.raises(tique.IntegrityError):
        cur.execute(f"INSERT INTO {line} VALUES (3, 1, 7)")
    with pytest.raises(tique.IntegrityError):
        cur.execute(f"UPDATE {order} SET o = 8")
    cur.execute(f"UPDATE {line} SET id = 10 WHERE id = 1")  # its reference unchanged: no parent query needed
    a.commit()
    cur.execute(f"SELECT id FROM {line} ORDER BY id")
    assert cur.fetchall() == [(2,), (10,)]
