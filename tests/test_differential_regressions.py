"""Bugs the differential tester (tests/differential) found, each minimized to a fixed statement: tique's answer
on its tables must equal MonetDB's on plain twins holding the same rows."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

import tique
from tests.conftest import ServeProcess
from tique.database import Database
from tique.engine.base import RawConnection

Twins = tuple[tique.Connection, RawConnection, str]


@pytest.fixture
def twins(embedded_url: str, unique_name: Callable[[str], str]) -> Iterator[Twins]:
    """A tique connection, a raw one, and a name prefix for this test's tables."""
    conn = tique.connect(embedded_url)
    raw = Database.get(embedded_url).connect_raw()
    yield conn, raw, unique_name("dr")
    conn.rollback()
    conn.close()
    raw.close()


def both(conn: tique.Connection, raw: RawConnection, ddl: str, rows: list[str], prefix: str) -> None:
    """``ddl`` and ``rows`` (INSERT statements) on tique's ``{t}`` tables (committed) and plain ``{p}`` twins."""
    cur = conn.cursor()
    for name in ("a", "b"):
        cur.execute(ddl.format(t=f"{prefix}_t{name}"))
        raw.execute(ddl.format(t=f"{prefix}_p{name}") + " -- tique: plain")
    conn.commit()
    for row in rows:
        cur.execute(row.format(t=f"{prefix}_t"))
        raw.execute(row.format(t=f"{prefix}_p"))
    conn.commit()


def compare(conn: tique.Connection, raw: RawConnection, query: str, prefix: str) -> list[tuple[object, ...]]:
    cur = conn.cursor()
    cur.execute(query.format(t=f"{prefix}_t"))
    got = sorted(cur.fetchall(), key=repr)
    want = sorted(raw.execute(query.format(t=f"{prefix}_p")).rows, key=repr)
    assert got == want
    return got


ROWS = ["INSERT INTO {t}a VALUES (1, 1)", "INSERT INTO {t}a VALUES (2, NULL)", "INSERT INTO {t}b VALUES (5, 5)"]


@pytest.mark.parametrize(
    "query",
    [
        "SELECT x.k FROM {t}a AS x WHERE x.k NOT IN (SELECT y.k FROM {t}b AS y WHERE y.v > 100)",
        "SELECT x.k FROM {t}a AS x WHERE NOT (x.k IN (SELECT y.k FROM {t}b AS y WHERE 1 = 0))",
    ],
)
def test_not_in_over_an_empty_snapshot(twins: Twins, query: str) -> None:
    # MonetDB 11.41 makes x NOT IN (subquery) false for every row when the subquery is empty and holds an
    # anti-join, as the analytical snapshot does; the point formulation has none
    conn, raw, prefix = twins
    both(conn, raw, "CREATE TABLE {t} (k INT PRIMARY KEY, v INT)", ROWS, prefix)
    assert len(compare(conn, raw, query, prefix)) == 2


def test_not_in_over_a_table_without_primary_key(twins: Twins) -> None:
    # the point formulation ranks versions by the hidden row id, so its snapshot must carry it
    conn, raw, prefix = twins
    both(conn, raw, "CREATE TABLE {t} (k INT, v INT)", ROWS, prefix)
    conn.cursor().execute(f"INSERT INTO {prefix}_tb VALUES (1, 7)")  # the transaction's own write, too
    raw.execute(f"INSERT INTO {prefix}_pb VALUES (1, 7)")
    query = "SELECT x.k FROM {t}a AS x WHERE x.k NOT IN (SELECT y.k FROM {t}b AS y WHERE y.v > 100)"
    assert compare(conn, raw, query, prefix) == [(1,), (2,)]


def test_point_snapshot_setting_on_a_table_without_primary_key(
    embedded_url: str, twins: tuple[tique.Connection, RawConnection, str]
) -> None:
    conn, raw, prefix = twins
    both(conn, raw, "CREATE TABLE {t} (k INT, v INT)", ROWS, prefix)
    point = tique.connect(embedded_url, snapshot="point")
    try:
        cur = point.cursor()
        cur.execute(f"SELECT k, v FROM {prefix}_ta ORDER BY k")
        assert cur.fetchall() == raw.execute(f"SELECT k, v FROM {prefix}_pa ORDER BY k").rows
    finally:
        point.close()


@pytest.mark.xfail(
    strict=True,
    reason="MonetDB 11.41, not tique: a correlated x NOT IN (SELECT ... WHERE y.i = x.b AND p) whose subquery is "
    "empty is false for every row (plain tables without constraints give the same wrong answer); the twin escapes "
    "it only because its NOT NULL primary key lets the optimizer drop 'k IS NULL'. The generator avoids the shape",
)
def test_correlated_not_in_over_an_empty_subquery(twins: Twins) -> None:
    conn, raw, prefix = twins
    rows = ["INSERT INTO {t}a VALUES (1, 1, 'a')", "INSERT INTO {t}a VALUES (2, NULL, NULL)"]
    both(conn, raw, "CREATE TABLE {t} (k INT PRIMARY KEY, b INT, v VARCHAR(5))", rows, prefix)
    query = "SELECT x.k FROM {t}a AS x WHERE x.v NOT IN (SELECT y.v FROM {t}a AS y WHERE y.b = x.b AND y.k IS NULL)"
    assert len(compare(conn, raw, query, prefix)) == 2


def test_exists_elsewhere_in_the_statement_keeps_every_snapshot_exact(twins: Twins) -> None:
    """Seed 59 of the differential run: an EXISTS over an empty snapshot in one branch and an EXISTS in the select
    list of another; MonetDB 11.41 answered tique's rewritten SQL with every row twice while the snapshots outside
    the EXISTS still removed overridden Storage rows by NOT EXISTS. Every snapshot of such a statement now uses
    the LEFT JOIN form."""
    conn, raw, prefix = twins
    rows = [f"INSERT INTO {{t}}a VALUES ({k}, {k + 1}, {'FALSE' if k % 2 else 'NULL'})" for k in range(4)]
    rows += ["INSERT INTO {t}b VALUES (7, 1, FALSE)", "INSERT INTO {t}b VALUES (8, NULL, NULL)"]
    both(conn, raw, "CREATE TABLE {t} (k INT PRIMARY KEY, b INT, f BOOLEAN)", rows, prefix)
    conn.cursor().execute(f"UPDATE {prefix}_ta SET b = b WHERE k = 1")  # a Cache version overriding Storage
    raw.execute(f"UPDATE {prefix}_pa SET b = b WHERE k = 1")
    select = (
        "SELECT x.k, CASE WHEN EXISTS (SELECT 1 FROM {t}b AS z WHERE z.b = y.b) THEN 1 ELSE 0 END AS c "
        "FROM {t}a AS x LEFT JOIN {t}a AS y ON y.k = x.b"
    )
    empty = "(EXISTS (SELECT 1 FROM {t}a AS e WHERE TRUE AND e.f))"
    query = f"{select} WHERE NOT (NOT {empty}) UNION ALL {select} WHERE (NOT {empty}) IS NULL"
    assert compare(conn, raw, query, prefix) == []
    query = f"{select} WHERE (NOT {empty}) UNION ALL {query}"
    assert len(compare(conn, raw, query, prefix)) == 4


def test_multi_row_insert_with_typed_literals(twins: Twins) -> None:
    conn, raw, prefix = twins
    both(conn, raw, "CREATE TABLE {t} (k INT PRIMARY KEY, v VARCHAR(20), f BOOLEAN, ts TIMESTAMP)", [], prefix)
    insert = (
        "INSERT INTO {t}a VALUES (7, NULL, FALSE, TIMESTAMP '2024-01-06 04:09:00'), "
        "(8, 'b', NULL, TIMESTAMP '2024-03-08 08:49:00')"
    )
    raw.execute(insert.format(t=f"{prefix}_p"))
    conn.cursor().execute(insert.format(t=f"{prefix}_t"))
    assert len(compare(conn, raw, "SELECT * FROM {t}a", prefix)) == 2


def test_insert_of_a_typed_literal_beside_a_null_temporal(twins: Twins) -> None:
    """A bare NULL in VALUES is typed SMALLINT by MonetDB: inserted through tique's SELECT path it must still
    reach a TIMESTAMP column (found by the differential tester after the exact-value reads were merged)."""
    conn, raw, prefix = twins
    both(conn, raw, "CREATE TABLE {t} (k INT PRIMARY KEY, d DATE, ts TIMESTAMP)", [], prefix)
    insert = "INSERT INTO {t}a VALUES (1, DATE '2024-03-16', NULL)"
    raw.execute(insert.format(t=f"{prefix}_p"))
    conn.cursor().execute(insert.format(t=f"{prefix}_t"))
    assert len(compare(conn, raw, "SELECT * FROM {t}a", prefix)) == 1


# ---- issue 13's read statements: SET SCHEMA, SAMPLE, EXPLAIN / PLAN --------------------------------------------


def test_set_schema_resolves_unqualified_names_to_the_snapshot(
    embedded_url: str, unique_name: Callable[[str], str]
) -> None:
    schema, conn = unique_name("sch"), tique.connect(embedded_url)
    try:
        cur = conn.cursor()
        cur.execute(f"CREATE SCHEMA {schema}")
        cur.execute(f"CREATE TABLE {schema}.acc (k INT PRIMARY KEY, v INT)")
        conn.commit()
        cur.execute(f"INSERT INTO {schema}.acc VALUES (1, 10)")
        conn.commit()
        cur.execute(f"SET SCHEMA {schema}")
        cur.execute("INSERT INTO acc VALUES (2, 20)")  # an unqualified write goes to the tique table...
        cur.execute("UPDATE acc SET v = v + 1 WHERE k = 1")
        cur.execute("SELECT k, v FROM acc ORDER BY k")  # ...and an unqualified read sees the transaction's writes
        assert cur.fetchall() == [(1, 11), (2, 20)]
        conn.rollback()
        cur.execute("SELECT k, v FROM acc ORDER BY k")
        assert cur.fetchall() == [(1, 10)]
        cur.execute("SET SCHEMA sys")
        conn.commit()
    finally:
        conn.close()


def test_ddl_after_set_schema_uses_the_session_schema(embedded_url: str, unique_name: Callable[[str], str]) -> None:
    """Unqualified names in DDL resolve in the schema SET SCHEMA chose, as MonetDB resolves them: the table is
    created there (not in the connection's first schema, where its view would then shadow nothing), a FOREIGN
    KEY finds its parent there, and a view's body keeps meaning that schema's table when read from another."""
    schema, conn = unique_name("dsch"), tique.connect(embedded_url)
    try:
        cur = conn.cursor()
        cur.execute(f"CREATE SCHEMA {schema}")
        conn.commit()
        cur.execute(f"SET SCHEMA {schema}")
        cur.execute("CREATE TABLE par (id INT PRIMARY KEY, v INT)")
        cur.execute("CREATE TABLE kid (id INT PRIMARY KEY, par_id INT REFERENCES par (id))")
        conn.commit()
        cur.execute("INSERT INTO par VALUES (1, 10)")
        cur.execute("INSERT INTO kid VALUES (5, 1)")
        conn.commit()
        cur.execute("CREATE INDEX par_v ON par (v)")
        cur.execute("ALTER TABLE par ADD COLUMN w INT")
        cur.execute("CREATE VIEW pv AS WITH x AS (SELECT v FROM par) SELECT v FROM x")
        conn.commit()
        cur.execute("SET SCHEMA sys")
        cur.execute(f"SELECT id, v, w FROM {schema}.par")
        assert cur.fetchall() == [(1, 10, None)]
        cur.execute(f"SELECT v FROM {schema}.pv")
        assert cur.fetchall() == [(10,)]
        with pytest.raises(tique.IntegrityError):
            cur.execute(f"DELETE FROM {schema}.par WHERE id = 1")  # the child's FOREIGN KEY holds it
        conn.rollback()
    finally:
        conn.close()
    admin = tique.connect(embedded_url)
    cur = admin.cursor()
    cur.execute(f"SELECT COUNT(*) FROM tique.tables WHERE name IN ('par', 'kid', 'pv') AND schema_name = '{schema}'")
    assert cur.fetchone() == (3,)
    admin.close()


def test_sample_reads_the_snapshot(twins: Twins) -> None:
    conn, raw, prefix = twins
    both(conn, raw, "CREATE TABLE {t} (k INT PRIMARY KEY, v INT)", ROWS, prefix)
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {prefix}_ta VALUES (3, 30)")
    cur.execute(f"DELETE FROM {prefix}_ta WHERE k = 1")
    cur.execute(f"SELECT k FROM {prefix}_ta WHERE k > 0 SAMPLE 10")
    assert sorted(cur.fetchall()) == [(2,), (3,)]  # its own insert, not its own delete
    cur.execute(f"SELECT k FROM {prefix}_ta SAMPLE 1")
    assert cur.fetchone()[0] in (2, 3)  # type: ignore[index]


def test_explain_and_plan_show_the_snapshot(server: ServeProcess, unique_name: Callable[[str], str]) -> None:
    name, conn = unique_name("ex"), tique.connect(server.url)
    try:
        cur = conn.cursor()
        cur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT)")
        conn.commit()
        for word in ("EXPLAIN", "PLAN"):
            cur.execute(f"{word} SELECT v FROM {name} WHERE k > 1")
            text = "\n".join(str(row[0]) for row in cur.fetchall())
            assert f"{name}__storage" in text and f"{name}__cache" in text  # the rewritten statement's plan
        with pytest.raises(tique.NotSupportedError, match="EXPLAIN"):
            cur.execute(f"EXPLAIN DELETE FROM {name}")
        conn.rollback()
    finally:
        conn.close()


def test_next_value_for_in_a_query(twins: Twins) -> None:
    conn, raw, prefix = twins
    both(conn, raw, "CREATE TABLE {t} (k INT PRIMARY KEY, v INT)", ROWS, prefix)
    raw.execute(f"CREATE SEQUENCE {prefix}_seq START WITH 10")
    cur = conn.cursor()
    cur.execute(f"SELECT NEXT VALUE FOR {prefix}_seq")
    first = cur.fetchone()[0]  # type: ignore[index]
    cur.execute(f"SELECT NEXT VALUE FOR sys.{prefix}_seq, k FROM {prefix}_ta ORDER BY k")
    rows = cur.fetchall()
    assert first == 10 and [k for _, k in rows] == [1, 2] and sorted(n for n, _ in rows) == [11, 12]
    with pytest.raises(tique.NotSupportedError, match="NEXT VALUE FOR in a write"):
        cur.execute(f"INSERT INTO {prefix}_ta VALUES (NEXT VALUE FOR {prefix}_seq, 1)")


def test_copy_into_a_transactional_table_runs_in_the_transaction(
    embedded_url: str, unique_name: Callable[[str], str]
) -> None:
    name, conn = unique_name("copy"), tique.connect(embedded_url, on_statement_error="continue")
    try:
        cur = conn.cursor()
        cur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT)")
        conn.commit()
        with pytest.raises(tique.DatabaseError, match="nonexistent"):
            cur.execute(f"COPY INTO {name} FROM '/nonexistent.csv'")
        cur.execute(f'COPY 2 RECORDS INTO "sys".{name} FROM STDIN;\n1|10\n2|20\n')
        assert cur.rowcount == 2
        conn.rollback()
        cur.execute(f"SELECT COUNT(*) FROM {name}")
        assert cur.fetchone()[0] == 0  # the rows were the transaction's
    finally:
        conn.close()
