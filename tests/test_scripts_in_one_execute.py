"""One execute() of several statements, as pymonetdb sends a schema script: tique refused it ("execute() takes one
statement"; found by a parity review). The statements run one by one, each as it would alone; the cursor holds the
first result set and nextset() the next."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique

Connect = Callable[..., tique.Connection]


def test_a_script_runs_statement_by_statement(connect: Connect, unique_name: Callable[[str], str]) -> None:
    conn, other = connect(), connect()
    t, f = unique_name("scr"), unique_name("fn")
    cur = conn.cursor()
    cur.execute(
        f"""-- a schema script
        CREATE TABLE {t} (k INT PRIMARY KEY, s VARCHAR(20));
        INSERT INTO {t} VALUES (1, 'a;b'), (2, 'it''s; fine');  /* a ; in a comment */
        CREATE FUNCTION {f}(x INT) RETURNS INT BEGIN DECLARE y INT; SET y = x + 1; RETURN y; END;
        SELECT k, s FROM {t} ORDER BY k;
        SELECT {f}(41);
        """
    )
    assert cur.fetchall() == [(1, "a;b"), (2, "it's; fine")]
    assert cur.nextset() is True
    assert cur.fetchall() == [(42,)]
    assert cur.nextset() is None and cur.description is None
    assert other.execute(f"SELECT COUNT(*) FROM {t}").fetchall() == [(0,)]  # one transaction, not committed
    conn.commit()
    other.rollback()  # its next snapshot
    assert other.execute(f"SELECT COUNT(*) FROM {t}").fetchall() == [(2,)]


def test_the_first_failure_stops_a_script_and_parameters_go_in_as_pymonetdb_formats_them(
    connect: Connect, unique_name: Callable[[str], str]
) -> None:
    conn = connect(on_statement_error="continue")  # the failed statement undone, the transaction going on
    t = unique_name("scr")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY)")
    with pytest.raises(tique.IntegrityError):
        cur.execute(f"INSERT INTO {t} VALUES (%s); INSERT INTO {t} VALUES (%s); INSERT INTO {t} VALUES (3)", (1, 1))
    assert conn.execute(f"SELECT k FROM {t}").fetchall() == [(1,)]  # the first took effect, the third never ran
    assert cur.execute(f"BEGIN; INSERT INTO {t} VALUES (5); COMMIT;") is None
    conn.rollback()
    assert sorted(conn.execute(f"SELECT k FROM {t}").fetchall()) == [(1,), (5,)]


def test_a_script_in_autocommit_mode_commits_statement_by_statement(
    connect: Connect, unique_name: Callable[[str], str]
) -> None:
    """Each statement as it would run alone, so a migration script may write a table and then alter it (run as one
    transaction, the ALTER was refused and the rows lost; found by a review). A failure rolls back a transaction the
    script began (its COMMIT never ran), and leaves one it did not end open until the application ends it."""
    conn, other = connect(autocommit=True), connect(autocommit=True)
    t, u = unique_name("scr"), unique_name("scr")
    cur = conn.cursor()
    cur.execute(
        f"CREATE TABLE {t} (k INT PRIMARY KEY); INSERT INTO {t} VALUES (1); ALTER TABLE {t} ADD COLUMN v INT; "
        f"INSERT INTO {t} VALUES (2, 20); ALTER TABLE {t} RENAME TO {u}"
    )
    assert other.execute(f"SELECT k, v FROM {u} ORDER BY k").fetchall() == [(1, None), (2, 20)]
    with pytest.raises(tique.IntegrityError):
        cur.execute(f"START TRANSACTION; INSERT INTO {u} VALUES (3, 3); INSERT INTO {u} VALUES (3, 3); COMMIT;")
    cur.execute(f"INSERT INTO {u} VALUES (10, 10)")  # autocommit again: the script's transaction was rolled back
    assert other.execute(f"SELECT COUNT(*) FROM {u}").fetchall() == [(3,)]
    cur.execute(f"START TRANSACTION; INSERT INTO {u} VALUES (4, 4)")  # begun, not ended: open until ROLLBACK
    cur.execute(f"INSERT INTO {u} VALUES (5, 5)")
    conn.rollback()
    assert other.execute(f"SELECT COUNT(*) FROM {u}").fetchall() == [(3,)]


def test_scripts_from_sqlalchemy_executemany_and_copy_data(connect: Connect, unique_name: Callable[[str], str]) -> None:
    """Empty parameters (SQLAlchemy's exec_driver_sql passes ()), a script per parameter set, a COPY FROM STDIN's
    data holding ';', and a function body with END CASE (it swallowed the statements after it; found by a
    review)."""
    conn = connect()
    t, f = unique_name("scr"), unique_name("fn")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, s VARCHAR(9)); SELECT 1", ())
    cur.executemany(f"INSERT INTO {t} VALUES (%s, 'x'); INSERT INTO {t} VALUES (%s + 100, 'y')", [(1, 1), (2, 2)])
    cur.execute(f"DELETE FROM {t} WHERE k > 100; COPY 2 RECORDS INTO {t} FROM STDIN;\n3|a;b\n4|c;d\n")
    cur.execute(
        f"CREATE FUNCTION {f}(x INT) RETURNS INT BEGIN CASE WHEN x > 0 THEN RETURN 1; ELSE RETURN 0; END CASE; END;"
        f" INSERT INTO {t} VALUES (5, 'after'); SELECT {f}(7)"
    )
    assert cur.fetchall() == [(1,)]
    assert conn.execute(f"SELECT k, s FROM {t} ORDER BY k").fetchall() == [
        (1, "x"), (2, "x"), (3, "a;b"), (4, "c;d"), (5, "after")
    ]  # fmt: skip


def test_executemany_of_a_script_failing_midway_fails_the_transaction(
    connect: Connect, unique_name: Callable[[str], str]
) -> None:
    """Its first parameter set's first statement wrote: a COMMIT would keep half of the set (found by a review)."""
    conn = connect()
    t = unique_name("scr")
    conn.cursor().execute(f"CREATE TABLE {t} (k INT PRIMARY KEY)")
    conn.commit()
    cur = conn.cursor()
    with pytest.raises(tique.IntegrityError):
        cur.executemany(f"INSERT INTO {t} VALUES (%s); INSERT INTO {t} VALUES (%s)", [(1, 1)])
    with pytest.raises(tique.InterfaceError, match="rollback"):
        conn.commit()
    conn.rollback()
    assert conn.execute(f"SELECT COUNT(*) FROM {t}").fetchall() == [(0,)]


def test_nested_comments_and_raw_strings_split_as_monetdb_reads_them(
    connect: Connect, unique_name: Callable[[str], str]
) -> None:
    """MonetDB's comments nest (/* a /* b */ ; c */ is one comment) and a raw string reads no backslash escapes
    (R'c:\\' ends at its second quote): the splitter had cut the first script at the comment's inner ';' and run
    ' c */ INSERT ...' as a statement, and had read the raw string's backslash as an escape, so the second
    statement was taken into a string and the script refused."""
    conn = connect()
    t = unique_name("scr")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, s VARCHAR(20))")
    cur.execute(f"INSERT INTO {t} VALUES (1, 'x'); /* a /* b */ ; c */ INSERT INTO {t} VALUES (2, 'y')")
    cur.execute(f"INSERT INTO {t} VALUES (3, R'c:\\'); INSERT INTO {t} VALUES (4, r'd\\' || 'e')")
    cur.execute(f"/*/ ; */ INSERT INTO {t} VALUES (5, 'f') /* /* */ */; SELECT 1 /* a /* ; */ , 2 */")
    assert cur.fetchall() == [(1,)] and cur.nextset() is None
    assert conn.execute(f"SELECT k, s FROM {t} ORDER BY k").fetchall() == [
        (1, "x"),
        (2, "y"),
        (3, "c:\\"),
        (4, "d\\e"),
        (5, "f"),
    ]
