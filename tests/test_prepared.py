"""Prepared statements: a rewritten statement seen again on a session runs as EXEC, with the same answers,
through engine errors (which make MonetDB drop every prepared statement) and a wrong id count."""

from __future__ import annotations

import decimal
from collections.abc import Callable
from typing import Any

import pytest

import tique
from tests.test_key_reads_differential import answer, rows_of, twin_tables
from tique.engine.base import drops_prepared
from tique.params import inline
from tique.prepared import PreparingConnection

Connect = Callable[..., tique.Connection]


@pytest.fixture
def table(connect: Connect, unique_name: Callable[[str], str]) -> str:
    name = unique_name("prep")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v VARCHAR(16), n INT)")
    conn.commit()
    conn.bulk_load(name, [(i, f"v{i}", i * 10) for i in range(20)])
    return name


def read(conn: tique.Connection, table: str, k: int) -> list[tuple[object, ...]]:
    cur = conn.cursor()
    cur.execute(f"SELECT v, n FROM {table} WHERE k = %s", (k,))
    return cur.fetchall()


def test_statements_seen_again_are_prepared_and_answer_the_same(connect: Connect, table: str) -> None:
    prepared, plain = connect(), connect(prepare=False)
    session = prepared._raw
    assert isinstance(session, PreparingConnection)
    for k in range(5):
        assert read(prepared, table, k) == read(plain, table, k) == [(f"v{k}", k * 10)]
        prepared.cursor().execute(f"UPDATE {table} SET n = %s WHERE k = %s", (k * 100, k))  # CAST(? AS INT)
        prepared.commit()
        assert read(prepared, table, k) == [(f"v{k}", k * 100)]
    assert len(session._ids) >= 2 and not session._unpreparable and session.enabled
    assert not plain._raw._ids


def test_an_engine_error_drops_prepared_statements_and_they_come_back(connect: Connect, table: str) -> None:
    conn = connect()
    for k in range(3):
        read(conn, table, k)
    session = conn._raw
    assert session._ids
    with pytest.raises(tique.ProgrammingError):
        conn.cursor().execute("SELECT no_such_column FROM sys.tables")  # MonetDB drops every prepared statement
    conn.rollback()
    assert not session._ids
    for k in range(3, 8):
        assert read(conn, table, k) == [(f"v{k}", k * 10)]
    assert session._ids and session.enabled  # prepared again, ids still in step


def test_an_id_the_engine_no_longer_holds_falls_back_to_text(connect: Connect, table: str) -> None:
    conn = connect()
    session = conn._raw
    for k in range(3):
        read(conn, table, k)
    session._ids = {key: sid + 5 for key, sid in session._ids.items()}  # as if an id had been read wrong
    assert read(conn, table, 3) == [("v3", 30)]  # its EXEC finds nothing
    assert read(conn, table, 4) == [("v4", 40)]
    assert not session.enabled  # and the session runs statements as text from then on


def test_a_connection_with_a_worker_limit_runs_its_queries(connect: Connect, table: str) -> None:
    conn = connect(worker_limit=1)
    cur = conn.cursor()
    cur.execute(f"SELECT COUNT(*), SUM(n) FROM {table}")
    assert cur.fetchall() == [(20, sum(i * 10 for i in range(20)))]
    with pytest.raises(Exception, match="greater than"):
        connect(worker_limit=0)  # refused by the settings model, before reaching the engine


def test_a_sessions_own_ddl_drops_its_prepared_statements_and_they_come_back(connect: Connect, table: str) -> None:
    """MonetDB drops every prepared statement of a session after its own DDL, with no error (measured on 11.41):
    without noticing, the session's next EXEC found nothing and it stopped preparing for good."""
    conn = connect()
    session = conn._raw
    for k in range(3):
        read(conn, table, k)
    assert session._ids
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {table}_ddl (k INT PRIMARY KEY)")
    conn.commit()
    for k in range(3, 8):
        assert read(conn, table, k) == [(f"v{k}", k * 10)]
    assert session._ids and session.enabled, "the session stopped preparing after its own DDL"


_LONG = "INSERT INTO t VALUES " + ", ".join(f"({i}, 'a;b; c')" for i in range(8000))  # over 64 kB, ';' in literals


@pytest.mark.parametrize(
    ("sql", "drops"),
    [
        ("DROP TABLE x", True),
        ("  /* c */ -- d\n create view v AS SELECT 1", True),
        ("SELECT 1; -- x\n drop table y", True),
        ("SELECT 1;/*a*/ /*b*/SET optimizer = 'minimal_fast'", True),
        ("START TRANSACTION;\nINSERT INTO t VALUES (1);\n\tAlter TABLE t ADD c INT;\nCOMMIT", True),
        ("SELECT 1; DEALLOCATE ALL", True),
        ("SELECT 'a'", False),
        ("SELECT createx, drop_y FROM t", False),
        ("START TRANSACTION;\nINSERT INTO t VALUES (1);\nCOMMIT", False),
        (_LONG, False),
        (_LONG + ";\nDROP TABLE t", True),
        (_LONG.replace("a;b", "a; settle"), True),  # a false match ('; set' in a literal): it only prepares again
        (_LONG.replace("a;b", "drop") + "; SELECT 1", False),  # the word, but no statement begins with it
    ],
)
def test_statements_that_drop_prepared_ones_are_told_by_their_heads(sql: str, drops: bool) -> None:
    """MonetDB drops a session's prepared statements after its own DDL or SET (engine/base.py); a long text's heads
    are found as a short one's."""
    assert drops_prepared(sql) is drops


@pytest.mark.parametrize("text", ["true", " TRUE ", "1", "0", "false", "t", "f", "yes"])
def test_a_string_compared_with_a_boolean_answers_as_text_every_time(
    connect: Connect, url: str, unique_name: Callable[[str], str], text: str
) -> None:
    """MonetDB compares a BOOLEAN column with a string literal by casting the column to the string's type, while an
    EXEC converts the string to a BOOLEAN: ``flag = 'true'`` found no row as text and the true rows once prepared.
    Each run of the statement must answer as the engine answers its text (a plain MonetDB twin)."""
    with twin_tables(connect, url, unique_name, "(k INT PRIMARY KEY, flag BOOLEAN)") as (conn, cur, raw, t, p):
        cur.execute(f"INSERT INTO {t} VALUES (1, true), (2, false)")
        raw.execute(f"INSERT INTO {p} VALUES (1, true), (2, false)")
        conn.commit()
        # the server's MonetDB may refuse the text: then tique must too
        plain = f"SELECT k FROM {p} WHERE flag = {inline('%s', (text,))} ORDER BY k"
        want = answer(lambda: raw.execute(plain).rows, ordered=True)
        answers: list[object] = []
        for _ in range(4):  # prepared from the third use on
            answers.append(answer(rows_of, cur, f"SELECT k FROM {t} WHERE flag = %s ORDER BY k", (text,), ordered=True))
            conn.rollback()
        assert answers == [want] * 4


def _twin_rows(conn: tique.Connection, cur: tique.Cursor, raw: Any, t: str, p: str, values: str) -> None:
    """The same rows (a VALUES list) in the tique table and its twin, committed."""
    for table, run in ((t, cur.execute), (p, raw.execute)):
        run(f"INSERT INTO {table} VALUES {values}")
    conn.commit()


def _differences(
    conn: tique.Connection,
    cur: tique.Cursor,
    raw: Any,
    t: str,
    p: str,
    cases: list[tuple[str, tuple[object, ...]]],
    ordered: bool = False,
) -> list[tuple[object, ...]]:
    """Each case's runs (text, PREPARE, EXEC, EXEC) whose answer differs from the twin's answer to its text."""
    wrong = []
    for sql, args in cases:
        want = answer(lambda q: raw.execute(q).rows, inline(sql.format(t=p), args), ordered=ordered)
        for _ in range(4):
            got = answer(rows_of, cur, sql.format(t=t), args, ordered=ordered)
            conn.rollback()
            if got != want:
                wrong.append((sql, args, got, want))
    return wrong


def test_a_prepare_the_engine_refuses_does_not_shift_the_ids_of_later_statements(
    connect: Connect, url: str, unique_name: Callable[[str], str]
) -> None:
    """MonetDB 11.41 numbers some refused PREPAREs and not others ("Could not determine type" takes an id,
    "identifier unknown" does not); tique counted one for each, so a later EXEC ran ANOTHER statement: a NULL
    argument to ``v = ?`` answered with the SUM of a statement prepared after it (found by a helper's review)."""
    ddl = "(k INT PRIMARY KEY, v VARCHAR(10), n INT)"
    with twin_tables(connect, url, unique_name, ddl) as (conn, cur, raw, t, p):
        _twin_rows(conn, cur, raw, t, p, "(1, 'a', 10), (2, 'b', 20), (3, NULL, 30)")
        for _ in range(2):  # a typo tried twice: its second run is a PREPARE the engine refuses
            with pytest.raises(tique.ProgrammingError):
                cur.execute(f"SELECT nosuch FROM {t} WHERE k > %s", (1,))
            conn.rollback()
        cases = [
            ("SELECT k FROM {t} WHERE v = %s", ("a",)),
            ("SELECT SUM(n) FROM {t} WHERE n > %s", ("15",)),
            ("SELECT k FROM {t} WHERE v = %s", (None,)),
            ("SELECT k FROM {t} WHERE v = %s", (5,)),
            ("SELECT SUM(n) FROM {t} WHERE n > %s", (15,)),
        ]
        assert not (wrong := _differences(conn, cur, raw, t, p, cases)), wrong


def test_a_table_made_again_with_other_types_by_another_connection_is_not_read_with_the_old_ones(
    connect: Connect, url: str, unique_name: Callable[[str], str]
) -> None:
    """MonetDB keeps a session's prepared statements when another session drops and re-creates a table, and an
    EXEC then reads the new columns with the old plan's types: an INT made DECIMAL(9,2) read 7.50 as 750, and a
    prepared ``SET v = v + ?`` stored 151.00 for 1.50 + 1 (found by a helper's review)."""
    t = unique_name("retyped")
    conn, other = connect(), connect()
    cur, ocur = conn.cursor(), other.cursor()
    ocur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT)")
    ocur.execute(f"INSERT INTO {t} VALUES (1, 7)")
    other.commit()
    for _ in range(4):  # prepared and run as EXEC
        cur.execute(f"SELECT k, v FROM {t} WHERE k = %s", (1,))
        assert cur.fetchall() == [(1, 7)]
        cur.execute(f"UPDATE {t} SET v = v + %s WHERE k = %s", (0, 1))
        conn.commit()
    ocur.execute(f"DROP TABLE {t}")
    other.commit()
    ocur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v DECIMAL(9,2))")
    ocur.execute(f"INSERT INTO {t} VALUES (1, 7.5)")
    other.commit()
    for _ in range(3):
        cur.execute(f"SELECT k, v FROM {t} WHERE k = %s", (1,))
        assert cur.fetchall() == [(1, decimal.Decimal("7.50"))]
        conn.rollback()
    cur.execute(f"UPDATE {t} SET v = v + %s WHERE k = %s", (1, 1))
    conn.commit()
    ocur.execute(f"SELECT v FROM {t} WHERE k = 1")
    assert ocur.fetchall() == [(decimal.Decimal("8.50"),)]
    other.rollback()


def test_a_connections_own_ddl_is_seen_by_its_analytical_session(
    connect: Connect, url: str, unique_name: Callable[[str], str]
) -> None:
    """An aggregate runs on the connection's second (analytical) session, whose prepared statements MonetDB keeps
    through DDL sent on the first: ``SUM(v + ?)`` over a table made again with DECIMAL(9,2) answered 377 for 5.75."""
    t = unique_name("own_ddl")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT)")
    cur.execute(f"INSERT INTO {t} VALUES (1, 1), (2, 2)")
    conn.commit()
    for _ in range(4):
        cur.execute(f"SELECT SUM(v + %s) FROM {t}", (1,))
        assert cur.fetchall() == [(5,)]
        conn.commit()
    cur.execute(f"DROP TABLE {t}")
    conn.commit()
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v DECIMAL(9,2))")
    cur.execute(f"INSERT INTO {t} VALUES (1, 1.50), (2, 2.25)")
    conn.commit()
    for _ in range(3):
        cur.execute(f"SELECT SUM(v + %s) FROM {t}", (1,))
        assert cur.fetchall() == [(decimal.Decimal("5.75"),)]
        conn.commit()


def test_numbers_take_the_type_their_text_gives_them_on_every_run(
    connect: Connect, url: str, unique_name: Callable[[str], str]
) -> None:
    """A bare ``?`` takes its type from the context, a literal in the text its own: ``b + 3`` on a BOOLEAN gave 4 as
    text and 2 as EXEC (3 made TRUE), ``b = 3`` found a row only as EXEC, ``r * 3`` on a REAL computed in DOUBLE,
    ``300 / m6`` lost its scale, ``m < 100`` on a DECIMAL(5,3) failed; a Decimal cast to DECIMAL(18, s) divided
    with another scale than its literal's DECIMAL(2,1) (found by a helper's review)."""
    ddl = "(k INT PRIMARY KEY, r REAL, b BOOLEAN, m6 DECIMAL(18,6), m DECIMAL(5,3), ti TINYINT)"
    with twin_tables(connect, url, unique_name, ddl) as (conn, cur, raw, t, p):
        _twin_rows(conn, cur, raw, t, p, "(1, 0.1, true, 1.333333, 1.5, 100)")
        cases = [
            ("SELECT k, r * %s FROM {t}", (3,)),
            ("SELECT k, b + %s FROM {t}", (3,)),
            ("SELECT k FROM {t} WHERE b = %s", (3,)),
            ("SELECT k, %s / m6 FROM {t}", (300,)),
            ("SELECT k FROM {t} WHERE m < %s", (100,)),
            ("SELECT k, ti + %s FROM {t}", (300,)),
            ("SELECT k, ti + %s FROM {t}", (20,)),
            ("SELECT k FROM {t} WHERE k = %s", (1,)),
            ("SELECT k, %s / ti FROM {t}", (decimal.Decimal("1.5"),)),
            ("SELECT k, %s / m6 FROM {t}", (decimal.Decimal("12345.678"),)),
            ("SELECT k, m * %s FROM {t}", (True,)),
        ]
        assert not (wrong := _differences(conn, cur, raw, t, p, cases)), wrong


def test_a_null_the_text_refuses_is_refused_on_every_run(
    connect: Connect, url: str, unique_name: Callable[[str], str]
) -> None:
    """A NULL's text literal has no type: ``b + NULL`` on a BOOLEAN fails as text ("no such binary operator"), while a
    prepared ``b + ?`` answered NULL from the third run (found by the long differential run)."""
    with twin_tables(connect, url, unique_name, "(k INT PRIMARY KEY, b BOOLEAN, n INT)") as (conn, cur, raw, t, p):
        _twin_rows(conn, cur, raw, t, p, "(1, true, 5)")
        cases = [
            ("SELECT k, b + %s FROM {t}", (None,)),
            ("SELECT k, b + %s FROM {t}", (3,)),
            ("SELECT k, b + %s FROM {t}", (None,)),
            ("SELECT k, n + %s FROM {t}", (None,)),
            ("SELECT k FROM {t} WHERE n = %s", (None,)),
        ]
        assert not (wrong := _differences(conn, cur, raw, t, p, cases)), wrong


def test_a_sort_position_given_as_a_parameter_sorts_on_every_run(
    connect: Connect, url: str, unique_name: Callable[[str], str]
) -> None:
    """In ORDER BY an integer literal is a column's position; cast to its type, a prepared parameter sorted by a
    constant from the second run (found by a helper's review of 1adf452)."""
    with twin_tables(connect, url, unique_name, "(k INT PRIMARY KEY, v VARCHAR(5))") as (conn, cur, raw, t, p):
        _twin_rows(conn, cur, raw, t, p, "(1, 'c'), (2, 'a'), (3, 'b')")
        cases = [
            ("SELECT k, v FROM {t} ORDER BY %s", (2,)),
            ("SELECT k, v FROM {t} ORDER BY k DESC, %s", (2,)),
            ("SELECT k, v FROM {t} ORDER BY %s", (3,)),
        ]
        assert not (wrong := _differences(conn, cur, raw, t, p, cases, ordered=True)), wrong
