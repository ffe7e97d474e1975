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
    conn = connect()
    t = unique_name("scr")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY)")
    with pytest.raises(tique.IntegrityError):
        cur.execute(f"INSERT INTO {t} VALUES (%s); INSERT INTO {t} VALUES (%s); INSERT INTO {t} VALUES (3)", (1, 1))
    assert conn.execute(f"SELECT k FROM {t}").fetchall() == [(1,)]  # the first took effect, the third never ran
    assert cur.execute(f"BEGIN; INSERT INTO {t} VALUES (5); COMMIT;") is None
    conn.rollback()
    assert sorted(conn.execute(f"SELECT k FROM {t}").fetchall()) == [(1,), (5,)]
