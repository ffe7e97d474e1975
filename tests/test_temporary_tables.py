"""CREATE TEMPORARY TABLE makes MonetDB's own table of the session (tique/temporary.py), on both engines: never a
transactional table that other sessions could see, write or drop, and with ON COMMIT acting at the end of the
tique transaction, as MonetDB's does at the end of its own (found by a review: it was made a shared tique table
in sys)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique
from tique.errors import NotSupportedError, ProgrammingError

Connect = Callable[..., tique.Connection]

SPELLINGS = [
    "CREATE TEMPORARY TABLE",
    "CREATE TEMP TABLE",
    "CREATE LOCAL TEMPORARY TABLE",
    "CREATE LOCAL TEMP TABLE",
    "-- a comment first\nCREATE TEMPORARY TABLE",
    "/* a comment first */ create temporary table",
]


@pytest.fixture
def base(connect: Connect, unique_name: Callable[[str], str]) -> str:
    """A transactional table holding 1 and 2."""
    name = unique_name("base")
    conn = connect()
    conn.cursor().execute(f"CREATE TABLE {name} (a INT PRIMARY KEY)")
    conn.cursor().execute(f"INSERT INTO {name} VALUES (1), (2)")
    conn.commit()
    return name


def rows(conn: tique.Connection, sql: str) -> list[tuple[object, ...]]:
    cur = conn.cursor()
    cur.execute(sql)
    return sorted(cur.fetchall())


def tmp_tables(conn: tique.Connection, name: str) -> list[tuple[object, ...]]:
    """Where MonetDB holds tables called ``name``, as this session sees them."""
    return rows(
        conn,
        "SELECT s.name, t.temporary FROM sys.tables t JOIN sys.schemas s ON t.schema_id = s.id "
        f"WHERE t.name = '{name}'",
    )


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_each_spelling_makes_a_table_of_the_session_emptied_when_the_transaction_ends(
    connect: Connect, unique_name: Callable[[str], str], base: str, spelling: str
) -> None:
    conn, other = connect(), connect()
    name = unique_name("tmp")
    conn.cursor().execute(f"{spelling} {name} (a INT) -- a comment last")
    assert conn.db.catalog.get("sys", name) is None and conn.db.catalog.get("tmp", name) is None
    assert tmp_tables(conn, name) == [("tmp", 1)]  # MonetDB's temporary table, in tmp; nothing in sys
    conn.cursor().execute(f"INSERT INTO {name} SELECT a FROM {base}")
    assert rows(conn, f"SELECT a FROM {name}") == [(1,), (2,)]  # until the transaction ends (DELETE ROWS)
    with pytest.raises(ProgrammingError, match="no such table"):
        other.cursor().execute(f"SELECT a FROM {name}")
    other.rollback()
    conn.commit()
    assert rows(conn, f"SELECT a FROM {name}") == []
    conn.cursor().execute(f"INSERT INTO {name} VALUES (7)")
    conn.rollback()
    assert rows(conn, f"SELECT a FROM {name}") == []
    conn.cursor().execute(f"DROP TABLE {name}")
    conn.commit()
    assert tmp_tables(conn, name) == []


def test_on_commit_preserve_rows_keeps_them_across_transactions_and_a_rollback(
    connect: Connect, unique_name: Callable[[str], str]
) -> None:
    conn = connect()
    name = unique_name("tmp")
    conn.cursor().execute(f"CREATE TEMPORARY TABLE {name} (a INT) ON COMMIT PRESERVE ROWS")
    conn.cursor().execute(f"INSERT INTO {name} VALUES (1)")
    conn.commit()
    conn.cursor().execute(f"INSERT INTO {name} VALUES (2)")
    conn.rollback()  # its writes took effect at once, as a plain table's (README)
    assert rows(conn, f"SELECT a FROM {name}") == [(1,), (2,)]
    conn.cursor().execute(f"CREATE TEMPORARY TABLE IF NOT EXISTS {name} (a INT)")  # keeps PRESERVE ROWS
    conn.commit()
    assert rows(conn, f"SELECT a FROM {name}") == [(1,), (2,)]


def test_on_commit_drop_drops_it_at_the_end_of_the_transaction(
    connect: Connect, unique_name: Callable[[str], str]
) -> None:
    conn = connect()
    for end in (conn.commit, conn.rollback):
        name = unique_name("tmp")
        conn.cursor().execute(f"CREATE LOCAL TEMPORARY TABLE {name} (a INT) ON COMMIT DROP")
        conn.cursor().execute(f"INSERT INTO {name} VALUES (1)")
        assert rows(conn, f"SELECT a FROM {name}") == [(1,)]
        end()
        assert tmp_tables(conn, name) == []


def test_create_as_select_reads_the_transactions_snapshot_and_own_writes(
    connect: Connect, unique_name: Callable[[str], str], base: str
) -> None:
    conn, other = connect(), connect()
    rows(conn, f"SELECT a FROM {base}")  # the snapshot is taken
    other.cursor().execute(f"INSERT INTO {base} VALUES (20)")
    other.commit()  # after the snapshot: not read
    conn.cursor().execute(f"INSERT INTO {base} VALUES (10)")  # its own write, not committed: read
    name = unique_name("tmp")
    cur = conn.cursor()
    cur.execute(f"CREATE TEMPORARY TABLE {name} AS SELECT a, a * 2 AS b FROM {base} ON COMMIT PRESERVE ROWS")
    assert cur.rowcount == 3
    assert rows(conn, f"SELECT a, b FROM {name}") == [(1, 2), (2, 4), (10, 20)]
    conn.rollback()  # the base row goes; the temporary table keeps what it read
    assert rows(conn, f"SELECT a FROM {name}") == [(1,), (2,), (10,)]
    assert rows(conn, f"SELECT a FROM {base}") == [(1,), (2,), (20,)]
    empty = unique_name("tmp")
    conn.cursor().execute(f"CREATE TEMP TABLE {empty} (x, y) AS SELECT a, a FROM {base} WITH NO DATA")
    assert rows(conn, f"SELECT x, y FROM {empty}") == []


def test_a_create_as_select_that_fails_leaves_no_table(
    connect: Connect, unique_name: Callable[[str], str], base: str
) -> None:
    conn = connect()
    name = unique_name("tmp")
    with pytest.raises(tique.DatabaseError):
        conn.cursor().execute(f"CREATE TEMP TABLE {name} AS SELECT 1 / (a - 2) AS q FROM {base}")
    conn.rollback()
    assert tmp_tables(conn, name) == []


def test_a_name_of_a_transactional_table_is_refused_and_other_schemas_get_monetdbs_error(
    connect: Connect, unique_name: Callable[[str], str], base: str
) -> None:
    conn = connect()
    with pytest.raises(NotSupportedError, match="give the temporary table another name"):
        conn.cursor().execute(f"CREATE TEMPORARY TABLE {base} (a INT)")
    with pytest.raises(ProgrammingError, match="tmp"):
        conn.cursor().execute(f"CREATE TEMPORARY TABLE sys.{unique_name('tmp')} (a INT)")
    assert rows(conn, f"SELECT a FROM {base}") == [(1,), (2,)]


def test_autocommit_empties_it_after_each_statement_as_monetdb_does(
    connect: Connect, unique_name: Callable[[str], str]
) -> None:
    conn = connect(autocommit=True)
    name = unique_name("tmp")
    conn.cursor().execute(f"CREATE TEMPORARY TABLE {name} (a INT)")
    conn.cursor().execute(f"INSERT INTO {name} VALUES (1)")
    assert rows(conn, f"SELECT a FROM {name}") == []


def test_it_goes_with_its_session(connect: Connect, unique_name: Callable[[str], str]) -> None:
    name = unique_name("tmp")
    first = connect()
    first.cursor().execute(f"CREATE TEMPORARY TABLE {name} (a INT) ON COMMIT PRESERVE ROWS")
    first.cursor().execute(f"INSERT INTO {name} VALUES (1)")
    first.close()
    second = connect()
    second.cursor().execute(f"CREATE TEMPORARY TABLE {name} (a INT) ON COMMIT PRESERVE ROWS")
    assert rows(second, f"SELECT a FROM {name}") == []


def test_a_table_under_a_temporary_tables_name_is_refused(connect: Connect, unique_name: Callable[[str], str]) -> None:
    conn = connect()
    name = unique_name("tmp")
    conn.cursor().execute(f"CREATE TEMPORARY TABLE {name} (a INT) ON COMMIT PRESERVE ROWS")
    with pytest.raises(NotSupportedError, match="temporary table of that name"):
        conn.cursor().execute(f"CREATE TABLE {name} (a INT PRIMARY KEY)")
    assert conn.db.catalog.get("sys", name) is None
    conn.cursor().execute(f"DROP TABLE {name}")
    conn.cursor().execute(f"CREATE TABLE {name} (a INT PRIMARY KEY)")  # the name is free again
    assert conn.db.catalog.get("sys", name) is not None


@pytest.mark.parametrize(
    "ending",
    [
        " ON COMMIT PRESERVE ROWS -- kept",
        " -- a note\nON COMMIT PRESERVE ROWS;",
        " ON COMMIT PRESERVE ROWS /* kept */ ;",
    ],
)
def test_comments_around_on_commit(connect: Connect, unique_name: Callable[[str], str], ending: str) -> None:
    """A comment after the columns hid the ON COMMIT tique appends (the rows vanished at once), and one after
    ON COMMIT hid the clause from tique (found by a review)."""
    conn = connect()
    name = unique_name("tmp")
    conn.cursor().execute(f"CREATE TEMPORARY TABLE {name} (a INT, s VARCHAR(9) DEFAULT 'x--y'){ending}")
    conn.cursor().execute(f"INSERT INTO {name} (a) VALUES (1)")
    conn.commit()
    assert rows(conn, f"SELECT a, s FROM {name}") == [(1, "x--y")]


def test_quotes_in_parameters_formatted_into_the_ddl(
    connect: Connect, unique_name: Callable[[str], str], base: str
) -> None:
    """pymonetdb quotes a value as 'it\\'s', which the statement's reader ended at the quote (found by a review)."""
    conn = connect()
    name = unique_name("tmp")
    cur = conn.cursor()
    cur.execute(f"CREATE TEMP TABLE {name} AS SELECT a, %s AS s FROM {base} WHERE a = %s", ("it's", 1))
    assert rows(conn, f"SELECT a, s FROM {name}") == [(1, "it's")]


def test_global_temporary_and_the_forms_that_crash_monetdb_are_refused(
    connect: Connect, unique_name: Callable[[str], str]
) -> None:
    conn = connect()
    a, b = unique_name("tmp"), unique_name("tmp")
    with pytest.raises(NotSupportedError, match="GLOBAL TEMPORARY"):
        conn.cursor().execute(f"CREATE GLOBAL TEMPORARY TABLE {a} (x INT)")
    conn.cursor().execute(f"CREATE TEMPORARY TABLE {a} (x INT PRIMARY KEY, y INT) ON COMMIT PRESERVE ROWS")
    with pytest.raises(NotSupportedError, match="FOREIGN KEY"):
        conn.cursor().execute(f"CREATE TEMPORARY TABLE {b} (x INT REFERENCES {a} (x))")
    with pytest.raises(NotSupportedError, match="RENAME"):
        conn.cursor().execute(f"ALTER TABLE {a} RENAME TO {b}")
    conn.cursor().execute(f"INSERT INTO {a} VALUES (1, 2)")  # the session and its engine are still there
    assert rows(conn, f"SELECT x, y FROM {a}") == [(1, 2)]


def test_a_temporary_table_is_read_before_a_transactional_one_of_its_name_as_monetdb_does(
    connect: Connect, unique_name: Callable[[str], str]
) -> None:
    """Another session's CREATE TABLE of a temporary table's name, or SET SCHEMA to a schema holding one: MonetDB
    reads and writes the temporary table by the unqualified name, and so does tique now (it read the other)."""
    conn, other = connect(), connect()
    x = unique_name("tmp")
    conn.cursor().execute(f"CREATE TEMP TABLE {x} (a INT) ON COMMIT PRESERVE ROWS")
    conn.cursor().execute(f"INSERT INTO {x} VALUES (111)")
    conn.commit()
    other.cursor().execute(f"CREATE TABLE {x} (a INT PRIMARY KEY)")
    other.cursor().execute(f"INSERT INTO {x} VALUES (222)")
    other.commit()
    assert rows(conn, f"SELECT a FROM {x}") == [(111,)]
    conn.cursor().execute(f"UPDATE {x} SET a = a + 1")
    conn.commit()
    assert rows(conn, f"SELECT a FROM {x}") == [(112,)]
    assert rows(conn, f"SELECT a FROM sys.{x}") == [(222,)]
    assert rows(other, f"SELECT a FROM {x}") == [(222,)]
    conn.cursor().execute(f"DROP TABLE {x}")  # the temporary one, as MonetDB drops
    conn.commit()
    assert rows(conn, f"SELECT a FROM {x}") == [(222,)]


def test_autocommit_empties_a_create_as_select_and_drops_on_commit_drop_at_once(
    connect: Connect, unique_name: Callable[[str], str], base: str
) -> None:
    conn = connect(autocommit=True)
    name, dropped = unique_name("tmp"), unique_name("tmp")
    cur = conn.cursor()
    cur.execute(f"CREATE TEMP TABLE {name} AS SELECT a FROM {base}")
    assert cur.rowcount == 2
    assert rows(conn, f"SELECT a FROM {name}") == []  # its transaction ended with the statement
    cur.execute(f"CREATE TEMP TABLE {dropped} (a INT) ON COMMIT DROP")
    assert tmp_tables(conn, dropped) == []


def test_a_failing_end_of_transaction_never_hides_the_commits_outcome(
    connect: Connect, unique_name: Callable[[str], str], base: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The emptying of a temporary table failing at COMMIT replaced the SerializationFailure (and after a commit
    that succeeded, raised); it warns instead, and the next table is still emptied (found by a review)."""
    conn, other = connect(), connect()
    first, second = unique_name("tmp"), unique_name("tmp")
    for name in (first, second):
        conn.cursor().execute(f"CREATE TEMP TABLE {name} (a INT)")
        conn.cursor().execute(f"INSERT INTO {name} VALUES (1)")
    conn.cursor().execute(f"UPDATE {base} SET a = 10 WHERE a = 1")
    other.cursor().execute(f"UPDATE {base} SET a = 20 WHERE a = 1")
    other.commit()
    raw = conn._raw
    real = raw.execute

    def failing(sql: str) -> object:
        if sql.startswith(f"DELETE FROM {temporary_qualified(first)}"):
            raise tique.OperationalError("injected")
        return real(sql)

    monkeypatch.setattr(raw, "execute", failing)
    with pytest.warns(RuntimeWarning, match=first), pytest.raises(tique.SerializationFailure):
        conn.commit()
    monkeypatch.undo()
    assert rows(conn, f"SELECT a FROM {second}") == []
    assert rows(conn, f"SELECT a FROM {first}") == [(1,)]


def temporary_qualified(name: str) -> str:
    from tique.temporary import TemporaryTable

    return TemporaryTable(name, "drop").qualified


def test_a_view_whose_cte_shares_a_temporary_tables_name_reads_the_snapshot(
    connect: Connect, unique_name: Callable[[str], str], base: str
) -> None:
    """CREATE VIEW naming a temporary table's name anywhere (a CTE of that name, say) went to MonetDB as written,
    a view tique did not know, which read the latest committed rows instead of the snapshot (found by a review)."""
    conn, other = connect(), connect()
    k, view = unique_name("k"), unique_name("v")
    conn.cursor().execute(f"CREATE TEMP TABLE {k} (a INT) ON COMMIT PRESERVE ROWS")
    conn.cursor().execute(f"CREATE VIEW {view} AS WITH {k} AS (SELECT a FROM {base}) SELECT a FROM {k}")
    conn.commit()
    assert conn.db.catalog.get("sys", view) is not None  # tique's view, expanded into each query
    conn.cursor().execute(f"UPDATE {base} SET a = 99 WHERE a = 1")
    assert rows(conn, f"SELECT a FROM {view}") == [(2,), (99,)]  # its own write
    other.cursor().execute(f"INSERT INTO {base} VALUES (50)")
    other.commit()
    assert rows(conn, f"SELECT a FROM {view}") == [(2,), (99,)]  # not the later commit


def test_a_temporary_table_may_share_a_plain_tables_name(connect: Connect, unique_name: Callable[[str], str]) -> None:
    """MonetDB reads the temporary one by the unqualified name, and tique passes plain tables to it: no conflict."""
    conn = connect()
    name = unique_name("pl")
    conn.cursor().execute(f"CREATE TABLE {name} (a INT) -- tique: plain")
    conn.cursor().execute(f"INSERT INTO {name} VALUES (1)")
    conn.cursor().execute(f"CREATE TEMP TABLE {name} (a INT) ON COMMIT PRESERVE ROWS")
    conn.cursor().execute(f"INSERT INTO {name} VALUES (2)")
    assert rows(conn, f"SELECT a FROM {name}") == [(2,)]
    assert rows(conn, f"SELECT a FROM sys.{name}") == [(1,)]
