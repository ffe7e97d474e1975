"""Prepared statements: a rewritten statement seen again on a session runs as EXEC, with the same answers,
through engine errors (which make MonetDB drop every prepared statement) and a wrong id count."""

from __future__ import annotations

from collections.abc import Callable

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


def test_a_wrong_id_count_falls_back_to_text(connect: Connect, table: str) -> None:
    conn = connect()
    session = conn._raw
    read(conn, table, 1)
    session._next_id += 5  # as if a PREPARE had been miscounted
    assert read(conn, table, 2) == [("v2", 20)]  # prepares with the wrong id; its EXEC finds nothing
    assert read(conn, table, 3) == [("v3", 30)]
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
