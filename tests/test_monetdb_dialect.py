"""Statements whose meaning differs between MonetDB and PostgreSQL answer over a tique table as plain MonetDB answers
over a twin in the same database. tique reads and prints every statement with a sqlglot dialect derived from
PostgreSQL's (tique/rewrite/dialect.py), and PostgreSQL's meanings leaked in: an explicit NULLS LAST ascending was
dropped as PostgreSQL's default (MonetDB's is NULLS FIRST)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

import tique
from tique.database import Database
from tique.engine.base import RawConnection
from tique.engine.result_types import run_typed

Tables = tuple[tique.Connection, RawConnection, str, str]
Rows = list[tuple[object, ...]]

COLUMNS = "k INT PRIMARY KEY, v INT, s VARCHAR(20), d DOUBLE, dt DATE, tm TIME"
ROWS = (
    "(1, NULL, 'xabcx', 1e300, DATE '2024-03-05', TIME '10:11:12'), "
    "(2, 5, 'ab', 99.0, DATE '2024-01-01', TIME '01:02:03'), "
    "(3, 7, NULL, NULL, NULL, NULL), "
    "(4, 4, 'xyx', 0.5, DATE '2023-12-31', TIME '23:59:59')"
)


@pytest.fixture
def tables(url: str, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]) -> Iterator[Tables]:
    t, twin = unique_name("dialect"), unique_name("dialect_twin")
    conn, raw = connect(), Database.get(url).connect_raw()
    conn.cursor().execute(f"CREATE TABLE {t} ({COLUMNS})")
    conn.commit()
    raw.execute(f"CREATE TABLE {twin} ({COLUMNS}) -- tique: plain")
    for sql in (f"INSERT INTO {{t}} VALUES {ROWS}", "UPDATE {t} SET v = v + 1 WHERE k = 4"):
        conn.cursor().execute(sql.format(t=t))
        raw.execute(sql.format(t=twin))
    conn.commit()
    try:
        yield conn, raw, t, twin
    finally:
        raw.close()


def both(tables: Tables, sql: str, own_write: bool = False) -> tuple[Rows, Rows]:
    """What tique answers over the tique table and plain MonetDB over the twin; with ``own_write`` the tique
    transaction has first written the table (its reads then rank its own versions against committed ones)."""
    conn, raw, t, twin = tables
    cur = conn.cursor()
    if own_write:
        cur.execute(f"UPDATE {t} SET s = s WHERE k = 2")
    cur.execute(sql.format(t=t))
    got = [tuple(r) for r in cur.fetchall()]
    conn.rollback()
    # the twin's values as MonetDB types them (the embedded C API passes a TIME WITH TIME ZONE without its zone)
    return got, [tuple(r) for r in run_typed(raw.execute, sql.format(t=twin)).rows]


# No ascending NULLS LAST with LIMIT: MonetDB 11.41's own top-N gets it wrong (over the twin, ORDER BY v NULLS LAST
# LIMIT 1 answers the NULL row, while ORDER BY v NULLS LAST without LIMIT puts it last), so tique matching plain
# MonetDB there proves nothing
NULL_ORDER = {
    "asc_nulls_last": "SELECT k, v FROM {t} ORDER BY v ASC NULLS LAST, k",
    "asc_nulls_first": "SELECT k, v FROM {t} ORDER BY v NULLS FIRST, k",
    "asc_default": "SELECT k, v FROM {t} ORDER BY v, k",
    "desc_nulls_first_limit": "SELECT k, v FROM {t} ORDER BY v DESC NULLS FIRST LIMIT 1",
    "desc_nulls_last": "SELECT k, v FROM {t} ORDER BY v DESC NULLS LAST, k",
    "desc_default": "SELECT k, v FROM {t} ORDER BY v DESC, k",
    "window_nulls_last": "SELECT k, ROW_NUMBER() OVER (ORDER BY v NULLS LAST) FROM {t} ORDER BY k",
    "window_desc_nulls_first": "SELECT k, RANK() OVER (ORDER BY v DESC NULLS FIRST) FROM {t} ORDER BY k",
    "window_default": "SELECT k, ROW_NUMBER() OVER (ORDER BY v) FROM {t} ORDER BY k",
    "subquery_window": "SELECT k FROM (SELECT k, RANK() OVER (ORDER BY v NULLS LAST) AS r FROM {t}) AS x WHERE r = 1",
    "string_nulls_last": "SELECT k FROM {t} ORDER BY s NULLS LAST, k",
}


@pytest.mark.parametrize("own_write", [False, True])
@pytest.mark.parametrize("shape", list(NULL_ORDER))
def test_explicit_null_order_is_kept(tables: Tables, shape: str, own_write: bool) -> None:
    got, want = both(tables, NULL_ORDER[shape], own_write)
    assert got == want


def test_a_write_chooses_rows_by_the_explicit_null_order(tables: Tables) -> None:
    conn, raw, t, twin = tables
    sql = (
        "UPDATE {t} SET s = 'first' WHERE k IN "
        "(SELECT k FROM (SELECT k, ROW_NUMBER() OVER (ORDER BY v NULLS LAST, k) AS r FROM {t}) AS x WHERE r = 1)"
    )
    conn.cursor().execute(sql.format(t=t))
    raw.execute(sql.format(t=twin))
    conn.commit()
    cur = conn.cursor()
    cur.execute(f"SELECT k, s FROM {t} ORDER BY k")
    want = raw.execute(f"SELECT k, s FROM {twin} ORDER BY k").rows
    assert [tuple(r) for r in cur.fetchall()] == [tuple(r) for r in want]


def test_own_versions_still_win_the_ranking(tables: Tables) -> None:
    """tique's own ranking of versions (ORDER BY tq_cts DESC NULLS FIRST) still reads a transaction's own writes."""
    conn, _, t, _ = tables
    cur = conn.cursor()
    cur.execute(f"UPDATE {t} SET v = 50 WHERE k = 2")
    cur.execute(f"UPDATE {t} SET v = v + 1 WHERE k = 2")
    cur.execute(f"SELECT k, v FROM {t} WHERE v > 0 ORDER BY k")
    assert cur.fetchall() == [(2, 51), (3, 7), (4, 5)]
    conn.commit()
    cur.execute(f"SELECT v FROM {t} WHERE k = 2")
    assert cur.fetchall() == [(51,)]


# MonetDB's ^ is bitwise XOR, at the level of +, -, & and | (left to right); PostgreSQL's dialect read it as POWER.
# MonetDB's # starts a comment to the end of the line.
CARET = {
    "xor_column": "SELECT k, v ^ 1, 5 ^ 3 FROM {t} ORDER BY k",
    "xor_in_where": "SELECT k FROM {t} WHERE v ^ 1 = 6 ORDER BY k",
    "xor_precedence": "SELECT k, 1 ^ 2 + 3, 1 + 2 ^ 3, 2 * 3 ^ 1, 6 ^ 3 * 2, 1 | 2 ^ 3, 7 & 1 ^ 2, -5 ^ 1 FROM {t}",
    "xor_key_read": "SELECT v ^ k FROM {t} WHERE k = 2",
    "hash_comment": "SELECT k, v # a comment, not an operator\n + 1 FROM {t} ORDER BY k",
}


@pytest.mark.parametrize("shape", list(CARET))
def test_caret_is_bitwise_xor(tables: Tables, shape: str) -> None:
    got, want = both(tables, CARET[shape], own_write=shape == "xor_in_where")
    assert got == want


def test_caret_writes_store_bitwise_xor(tables: Tables) -> None:
    conn, raw, t, twin = tables
    cur = conn.cursor()
    for sql in ("UPDATE {t} SET v = v ^ 1 WHERE k = 2", "INSERT INTO {t} (k, v) VALUES (5, 5 ^ 3)"):
        cur.execute(sql.format(t=t))
        raw.execute(sql.format(t=twin))
    conn.commit()
    cur.execute(f"SELECT k, v FROM {t} ORDER BY k")
    want = raw.execute(f"SELECT k, v FROM {twin} ORDER BY k").rows
    assert [tuple(r) for r in cur.fetchall()] == [tuple(r) for r in want]
    cur.execute("SELECT 5 ^ 3")
    assert cur.fetchall() == [(6,)]


# MonetDB functions PostgreSQL's dialect printed as PostgreSQL's (STRING_AGG, PERCENTILE_CONT ... WITHIN GROUP,
# DAY_OF_WEEK, RANDOM, GEN_RANDOM_UUID, STUFF, TO_CHAR, TO_DATE, TRIM(chars FROM s)), which MonetDB has not, or
# computed differently (log10(x) as LOG(10, x); 0x41, MonetDB's integer 65, as the blob X'41')
AGGREGATES = ["group_concat(s)", "group_concat(s, ';')", "median(k)", "median(d)", "count(*), median(v)"]
SCALARS = [
    "dayofweek(dt)",
    "dayofmonth(dt)",
    "dayofyear(dt)",
    "weekofyear(dt)",
    "rand() IS NOT NULL",
    "rand(5) IS NOT NULL",
    "uuid() IS NOT NULL",
    "insert(s, 1, 1, 'Q')",
    "time_to_str(tm, '%H')",
    "str_to_date('01/02/2024', '%m/%d/%Y')",
    "str_to_time('10:11', '%H:%M')",
    "str_to_timestamp('2024-01-02 10:11', '%Y-%m-%d %H:%M')",
    "date_to_str(dt, '%d')",
    "trim(s, 'x')",
    "ltrim(s, 'x')",
    "rtrim(s, 'x')",
    "trim(s)",
    "log10(d + 1)",
    "log2(d + 1)",
    "log(2, d + 1)",
    "charindex('x', s, 2)",
    "locate('x', s, 2)",
    "0x41",
    "0x41 + k",
    "X'41'",
]


@pytest.mark.parametrize("call", AGGREGATES)
def test_monetdb_aggregates_answer_as_plain_monetdb(tables: Tables, call: str) -> None:
    got, want = both(tables, f"SELECT {call} FROM {{t}}")
    assert got == want


@pytest.mark.parametrize("call", SCALARS)
def test_monetdb_functions_answer_as_plain_monetdb(tables: Tables, call: str) -> None:
    got, want = both(tables, f"SELECT k, {call} FROM {{t}} ORDER BY k", own_write=True)
    assert got == want


@pytest.mark.parametrize(
    "where", ["dayofweek(dt) = 2", "trim(s, 'x') = 'abc'", "log10(d + 1) = 2", "v = 0x5", "locate('x', s, 2) = 5"]
)
def test_monetdb_functions_filter_as_plain_monetdb(tables: Tables, where: str) -> None:
    got, want = both(tables, f"SELECT k FROM {{t}} WHERE {where} ORDER BY k")
    assert got == want


def test_monetdb_functions_write_as_plain_monetdb(tables: Tables) -> None:
    conn, raw, t, twin = tables
    cur = conn.cursor()
    writes = (
        "UPDATE {t} SET s = insert(trim(s, 'x'), 1, 1, 'Q'), v = 0x10 WHERE k = 1",
        "INSERT INTO {t} (k, s, d) SELECT 9, group_concat(s, ';'), log10(median(d) + 1) FROM {t}",
    )
    for sql in writes:
        cur.execute(sql.format(t=t))
        raw.execute(sql.format(t=twin))
    conn.commit()
    cur.execute(f"SELECT k, v, s, d FROM {t} ORDER BY k")
    want = raw.execute(f"SELECT k, v, s, d FROM {twin} ORDER BY k").rows
    assert [tuple(r) for r in cur.fetchall()] == [tuple(r) for r in want]


# a comment after the statement's ';' was counted as a second statement and refused
TRAILING = [
    "INSERT INTO {t} (k, v) VALUES (7, 70); -- seed row",
    "UPDATE {t} SET v = v + 1 WHERE k = 2; /* by key */",
    "DELETE FROM {t} WHERE k = 3;\n-- gone\n",
    "INSERT INTO {t} (k, v) SELECT k + 10, v FROM {t} WHERE k < 3; # copied",
]


def test_a_comment_after_the_semicolon_is_no_second_statement(
    tables: Tables, unique_name: Callable[[str], str]
) -> None:
    conn, raw, t, twin = tables
    cur = conn.cursor()
    for sql in TRAILING:
        cur.execute(sql.format(t=t))
        raw.execute(sql.format(t=twin))
    cur.execute(f"SELECT k, v FROM {t} WHERE k = 2; -- by key")
    assert cur.fetchall() == [(2, 6)]
    conn.commit()
    cur.execute(f"SELECT k, v FROM {t} ORDER BY k; /* all */")
    want = raw.execute(f"SELECT k, v FROM {twin} ORDER BY k").rows
    assert [tuple(r) for r in cur.fetchall()] == [tuple(r) for r in want]
    created = unique_name("dialect_created")
    cur.execute(f"CREATE TABLE {created} (k INT PRIMARY KEY); -- a new table")
    conn.commit()
    cur.execute(f"INSERT INTO {created} VALUES (1)")
    conn.commit()
    cur.execute(f"SELECT k FROM {created}; -- read back")
    assert cur.fetchall() == [(1,)]


def test_two_statements_run_one_by_one(tables: Tables) -> None:
    """A comment between or after statements is no statement (tests/test_scripts_in_one_execute.py)."""
    conn, _, t, _ = tables
    cur = conn.cursor()
    cur.execute(f"SELECT 1; -- between\nSELECT COUNT(*) FROM {t}")
    assert cur.fetchall() == [(1,)]
    assert cur.nextset() and len(cur.fetchall()) == 1
    assert cur.nextset() is None
    cur.execute("SELECT 1; SELECT 2; -- after")
    assert cur.fetchall() == [(1,)] and cur.nextset() and cur.fetchall() == [(2,)] and cur.nextset() is None
