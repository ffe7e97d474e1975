"""CREATE FUNCTION / PROCEDURE / TRIGGER with a BEGIN ... END body holding semicolons is one statement to MonetDB;
tique split it at the semicolons and refused it ("execute() takes one statement, got 2"). It now goes to the
engine as written, and behaves as the same DDL sent to MonetDB directly; DDL whose text names a tique table is
refused, since its body would bypass the transaction's snapshot."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

import tique
from tique.database import Database
from tique.engine.base import RawConnection

Twins = tuple[tique.Connection, RawConnection, Callable[[str], str]]

FUNCTION = """CREATE {replace}FUNCTION {f}(a INT) RETURNS INT
BEGIN
  DECLARE r INT; -- a comment; with a semicolon
  SET r = CASE WHEN a > 10 THEN a * 2 ELSE a + 1 END;
  IF r > 100 THEN SET r = 100; ELSE SET r = r + 0; END IF;
  WHILE r < 5 DO SET r = r + 1; END WHILE;
  RETURN r + LENGTH('x;y END');
END"""


@pytest.fixture
def twins(embedded_url: str, unique_name: Callable[[str], str]) -> Iterator[Twins]:
    conn = tique.connect(embedded_url)
    raw = Database.get(embedded_url).connect_raw()
    yield conn, raw, unique_name
    conn.rollback()
    conn.close()
    raw.close()


def test_function_with_a_compound_body_as_in_monetdb(twins: Twins) -> None:
    conn, raw, unique_name = twins
    f, g = unique_name("cf_t"), unique_name("cf_p")
    cur = conn.cursor()
    cur.execute(FUNCTION.format(f=f, replace=""))
    raw.execute(FUNCTION.format(f=g, replace=""))
    cur.execute(FUNCTION.format(f=f, replace="OR REPLACE ") + ";  -- done\n")
    for a in (0, 3, 11, 70, -9):
        cur.execute(f"SELECT {f}({a})")
        assert cur.fetchall() == [tuple(r) for r in raw.execute(f"SELECT {g}({a})").rows]
    cur.execute(f"SELECT {f}(70)")
    assert cur.fetchall() == [(107,)]
    cur.execute(f"DROP FUNCTION {f}")
    raw.execute(f"DROP FUNCTION {g}")


def test_procedure_and_trigger_on_plain_tables(twins: Twins) -> None:
    conn, raw, unique_name = twins
    p, log, proc, trig = unique_name("cp"), unique_name("cp_log"), unique_name("cp_proc"), unique_name("cp_trig")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {p} (k INT PRIMARY KEY, v INT) -- tique: plain")
    cur.execute(f"CREATE TABLE {log} (k INT) -- tique: plain")
    cur.execute(
        f"CREATE PROCEDURE {proc}(n INT) BEGIN INSERT INTO {p} VALUES (n, n * 10); "
        f"INSERT INTO {p} VALUES (n + 1, 0); END"
    )
    cur.execute(
        f"CREATE TRIGGER {trig} AFTER INSERT ON {p} REFERENCING NEW ROW AS nr FOR EACH ROW "
        f"BEGIN ATOMIC INSERT INTO {log} VALUES (nr.k); INSERT INTO {log} VALUES (-nr.k); END"
    )
    cur.execute(f"CALL {proc}(1)")
    conn.commit()
    assert sorted(tuple(r) for r in raw.execute(f"SELECT * FROM {p}").rows) == [(1, 10), (2, 0)]
    assert sorted(r[0] for r in raw.execute(f"SELECT k FROM {log}").rows) == [-2, -1, 1, 2]


def test_compound_ddl_over_a_tique_table_is_refused(twins: Twins) -> None:
    conn, raw, unique_name = twins
    t, f = unique_name("cr_t"), unique_name("cr_f")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT)")
    conn.commit()
    refused = [
        f"CREATE FUNCTION {f}() RETURNS INT BEGIN DECLARE n INT; SET n = (SELECT count(*) FROM {t}); RETURN n; END",
        f'CREATE FUNCTION {f}() RETURNS INT BEGIN RETURN (SELECT max(v) FROM "sys"."{t}"); END',
        f"CREATE PROCEDURE {f}() BEGIN UPDATE sys.{t} SET v = 1; DELETE FROM {t}; END",
        f"CREATE TRIGGER {f} AFTER INSERT ON {t} FOR EACH ROW BEGIN ATOMIC DELETE FROM {t}; END",
    ]
    for statement in refused:
        with pytest.raises(tique.NotSupportedError, match=f"tique's table '{t}'.*bypassing the transaction's snap"):
            cur.execute(statement)
    assert not raw.execute(f"SELECT name FROM sys.functions WHERE name = '{f}'").rows
    # a string holding the table's name is no use of it
    cur.execute(f"CREATE FUNCTION {f}() RETURNS VARCHAR(20) BEGIN DECLARE s VARCHAR(20); SET s = '{t}'; RETURN s; END")
    cur.execute(f"SELECT {f}()")
    assert cur.fetchall() == [(t,)]
    cur.execute(f"DROP FUNCTION {f}")


def test_a_compound_statement_and_another_are_two_statements(twins: Twins) -> None:
    """Run one by one, as pymonetdb sends such a text (tests/test_scripts_in_one_execute.py)."""
    conn, raw, unique_name = twins
    f = unique_name("c2")
    cur = conn.cursor()
    cur.execute(f"CREATE FUNCTION {f}() RETURNS INT BEGIN RETURN 1; END; SELECT {f}() + 1")
    assert cur.fetchall() == [(2,)]
    assert raw.execute(f"SELECT name FROM sys.functions WHERE name = '{f}'").rows == [(f,)]
