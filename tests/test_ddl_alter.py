"""ALTER TABLE on transactional tables: Storage, Cache, the catalog spec and the outside VIEW T change together,
rows of both shapes survive a checkpoint, and a failure midway leaves the old table working."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest

import tique
from tests.physical import storage
from tique.catalog import table_info
from tique.checkpoint import Checkpointer
from tique.engine import open_engine
from tique.engine.base import RawConnection
from tique.errors import NotSupportedError, ProgrammingError


@pytest.fixture
def plain(url: str) -> Iterator[RawConnection]:
    """A raw engine session: the checkpointer, MonetDB's catalog and the outside view."""
    engine = open_engine(url)
    conn = engine.connect()
    yield conn
    engine.close()  # closes conn and the session an embedded engine keeps for itself


def spec(raw: RawConnection, name: str) -> dict:
    return json.loads(str(raw.execute(f"SELECT spec FROM tique.tables WHERE name = '{name}'").scalar()))


def setup(conn: tique.Connection, t: str) -> None:
    """Rows in Storage (checkpointed) and in the Cache (committed after the checkpoint)."""
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, v VARCHAR(10))")
    cur.execute(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    conn.commit()


def test_add_column_with_default(connect: Callable[..., tique.Connection], unique_name, plain: RawConnection) -> None:
    t = unique_name("alt_add")
    conn = connect()
    setup(conn, t)
    conn.close()
    Checkpointer(plain).run_once()  # rows 1, 2 in Storage
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {t} VALUES (3, 'c')")  # in the Cache, old shape
    conn.commit()
    cur.execute(f"ALTER TABLE {t} ADD COLUMN n INT NOT NULL DEFAULT 7")
    cur.execute(f"ALTER TABLE {t} ADD COLUMN m VARCHAR(5)")
    cur.execute(f"SELECT id, v, n, m FROM {t} ORDER BY id")
    assert cur.fetchall() == [(1, "a", 7, None), (2, "b", 7, None), (3, "c", 7, None)]
    cur.execute(f"INSERT INTO {t} (id, v) VALUES (4, 'd')")
    cur.execute(f"INSERT INTO {t} VALUES (5, 'e', 9, 'x')")
    cur.execute(f"UPDATE {t} SET n = 8 WHERE id = 3")
    conn.commit()
    assert [c[0] for c in spec(plain, t)["columns"]] == ["id", "v", "n", "m"]
    assert spec(plain, t)["columns"][2][3] == 7
    expected = [(1, "a", 7, None), (2, "b", 7, None), (3, "c", 8, None), (4, "d", 7, None), (5, "e", 9, "x")]
    assert [tuple(r) for r in plain.execute(f'SELECT * FROM "{t}" ORDER BY id').rows] == expected  # the view
    conn.close()
    report = Checkpointer(plain).run_once()
    assert not report.errors, report.errors
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"SELECT * FROM {t} ORDER BY id")
    assert [tuple(r) for r in cur.fetchall()] == expected
    with pytest.raises(tique.IntegrityError):
        cur.execute(f"INSERT INTO {t} VALUES (6, 'f', NULL, NULL)")


def test_drop_and_rename_column(connect: Callable[..., tique.Connection], unique_name, plain: RawConnection) -> None:
    t = unique_name("alt_drop")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, v VARCHAR(10), w INT)")
    cur.execute(f"INSERT INTO {t} VALUES (1, 'a', 10), (2, 'b', 20)")
    conn.commit()
    cur.execute(f"ALTER TABLE {t} DROP COLUMN w")
    cur.execute(f"ALTER TABLE {t} RENAME COLUMN v TO label")
    cur.execute(f"SELECT * FROM {t} ORDER BY id")
    assert [tuple(r) for r in cur.fetchall()] == [(1, "a"), (2, "b")]
    assert [d[0] for d in cur.description] == ["id", "label"]
    with pytest.raises(tique.DatabaseError):
        cur.execute(f"SELECT w FROM {t}")
    conn.rollback()
    cur.execute(f"UPDATE {t} SET label = 'z' WHERE id = 2")
    conn.commit()
    assert [c[0] for c in spec(plain, t)["columns"]] == ["id", "label"]
    assert [tuple(r) for r in plain.execute(f'SELECT id, label FROM "{t}" ORDER BY id').rows] == [(1, "a"), (2, "z")]
    conn.close()
    assert not Checkpointer(plain).run_once().errors
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"SELECT id, label FROM {t} ORDER BY id")
    assert [tuple(r) for r in cur.fetchall()] == [(1, "a"), (2, "z")]
    with pytest.raises(NotSupportedError, match="primary key"):
        cur.execute(f"ALTER TABLE {t} DROP COLUMN id")


def test_rename_table(connect: Callable[..., tique.Connection], unique_name, plain: RawConnection) -> None:
    t, u = unique_name("alt_ren"), unique_name("alt_new")
    conn = connect()
    setup(conn, t)
    cur = conn.cursor()
    cur.execute(f"ALTER TABLE {t} RENAME TO {u}")
    cur.execute(f"SELECT id, v FROM {u} ORDER BY id")
    assert [tuple(r) for r in cur.fetchall()] == [(1, "a"), (2, "b")]
    cur.execute(f"INSERT INTO {u} VALUES (3, 'c')")
    conn.commit()
    with pytest.raises(tique.DatabaseError):
        cur.execute(f"SELECT * FROM {t}")
    conn.rollback()
    info = table_info(plain, "sys", u)
    rows = plain.execute("SELECT s.name, t.name FROM sys.tables t JOIN sys.schemas s ON t.schema_id = s.id").rows
    names = {(str(s), str(n)) for s, n in rows}
    assert {("sys", u), (info.physical_schema, info.storage_name), (info.physical_schema, info.cache_name)} <= names
    assert not [n for _, n in names if n == t or n.startswith(f"{t}__") or f"__{t}__" in n]  # nothing kept the old name
    assert plain.execute(f'SELECT COUNT(*) FROM "{u}"').scalar() == 3
    conn.close()
    assert not Checkpointer(plain).run_once().errors
    assert plain.execute(f"SELECT COUNT(*) FROM {info.storage}").scalar() == 3


@pytest.mark.parametrize(
    "statement, step",
    [
        ("ADD COLUMN n INT DEFAULT 1", "cache"),  # Storage already changed, the Cache not yet
        ("ADD COLUMN n INT DEFAULT 1", "spec"),  # both tables and the view changed, the catalog not yet
        ("DROP COLUMN v", "spec"),
        ("RENAME COLUMN v TO w", "cache"),
        ("RENAME COLUMN v TO w", "spec"),
        ("RENAME TO {t}_x", "cache"),
        ("RENAME TO {t}_x", "spec"),
    ],
)
def test_failure_midway_leaves_old_table(
    connect: Callable[..., tique.Connection],
    unique_name,
    plain: RawConnection,
    monkeypatch: pytest.MonkeyPatch,
    statement: str,
    step: str,
) -> None:
    from tique import alter  # (imported here: on code without it, the other tests still run and fail one by one)

    t = unique_name("alt_fail")
    conn = connect()
    setup(conn, t)

    def boom(at: str) -> None:
        if at == step:
            raise RuntimeError("injected failure")

    monkeypatch.setattr(alter, "step_hook", boom)
    cur = conn.cursor()
    with pytest.raises(Exception, match="injected"):
        cur.execute(f"ALTER TABLE {t} " + statement.format(t=t))
    monkeypatch.setattr(alter, "step_hook", None)
    cur.execute(f"SELECT * FROM {t} ORDER BY id")
    assert [tuple(r) for r in cur.fetchall()] == [(1, "a"), (2, "b")]
    assert [c[0] for c in spec(plain, t)["columns"]] == ["id", "v"]
    cur.execute(f"INSERT INTO {t} VALUES (3, 'c')")
    conn.commit()
    assert plain.execute(f'SELECT COUNT(*) FROM "{t}"').scalar() == 3
    info = table_info(plain, "sys", t)
    for physical in (info.storage_name, info.cache_name):
        found = plain.execute(
            "SELECT c.name FROM sys.columns c JOIN sys.tables t ON c.table_id = t.id JOIN sys.schemas s "
            f"ON t.schema_id = s.id WHERE s.name = '{info.physical_schema}' AND t.name = '{physical}'"
        ).rows
        assert {str(r[0]) for r in found} - {"tq_txid", "tq_seq", "tq_deleted"} == {"id", "v"}
    conn.close()
    assert not Checkpointer(plain).run_once().errors


def test_refusals_name_the_alternative(connect: Callable[..., tique.Connection], unique_name) -> None:
    t = unique_name("alt_ref")
    conn = connect()
    setup(conn, t)
    cur = conn.cursor()
    with pytest.raises(NotSupportedError, match="ALTER TABLE"):
        cur.execute(f"ALTER TABLE {t} ADD CONSTRAINT u UNIQUE (v)")
    with pytest.raises(ProgrammingError, match="already exists"):
        cur.execute(f"ALTER TABLE {t} ADD COLUMN id INT")
    with pytest.raises(NotSupportedError, match="needs a DEFAULT"):
        cur.execute(f"ALTER TABLE {t} ADD COLUMN n INT NOT NULL")
    with pytest.raises(NotSupportedError, match="primary key"):
        cur.execute(f"ALTER TABLE {t} DROP id")
    with pytest.raises(NotSupportedError, match="SET READ ONLY"):
        cur.execute(f"ALTER TABLE {t} SET READ ONLY")
    cur.execute(f"ALTER TABLE {t} DROP v")  # COLUMN is optional
    cur.execute(f"SELECT * FROM {t} ORDER BY id")
    assert cur.fetchall() == [(1,), (2,)]


def test_default_current_timestamp(connect: Callable[..., tique.Connection], unique_name, plain: RawConnection) -> None:
    """Evaluated by the engine when the INSERT statement runs: one value per statement, not per transaction."""
    t = unique_name("alt_ts")
    conn = connect()
    cur = conn.cursor()
    cur.execute(
        f"CREATE TABLE {t} (id INT PRIMARY KEY, at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, d DATE DEFAULT CURRENT_DATE)"
    )
    before = plain.execute("SELECT CAST(CURRENT_TIMESTAMP AS TIMESTAMP)").scalar()
    cur.execute(f"INSERT INTO {t} (id) VALUES (1), (2)")
    cur.execute(f"INSERT INTO {t} VALUES (3, DEFAULT, DEFAULT)")
    cur.execute(f"INSERT INTO {t} (id) SELECT id + 10 FROM {t} WHERE id = 1")
    cur.execute(f"INSERT INTO {t} VALUES (4, TIMESTAMP '2001-02-03 04:05:06', NULL)")
    conn.commit()
    after = plain.execute("SELECT CAST(CURRENT_TIMESTAMP AS TIMESTAMP)").scalar()
    cur.execute(f"SELECT id, at, d FROM {t} ORDER BY id")
    rows = cur.fetchall()
    assert [r[0] for r in rows] == [1, 2, 3, 4, 11]
    for r in rows[:3] + rows[4:]:
        assert before <= r[1] <= after and r[2] == r[1].date()
    assert rows[0][1] == rows[1][1]  # one statement, one moment
    assert str(rows[3][1]) == "2001-02-03 04:05:06" and rows[3][2] is None
    assert spec(plain, t)["columns"][1][3] == {"sql": "CURRENT_TIMESTAMP"}
    cur.execute(f"ALTER TABLE {t} ADD COLUMN seen TIMESTAMP DEFAULT CURRENT_TIMESTAMP")
    cur.execute(f"SELECT COUNT(*) FROM {t} WHERE seen >= at")
    assert cur.fetchone()[0] == 5  # existing rows: the moment of the ALTER


def test_default_values_with_current_timestamp(connect: Callable[..., tique.Connection], unique_name) -> None:
    t = unique_name("alt_dv")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {t} (n INT DEFAULT 5, at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)")
    cur.execute(f"INSERT INTO {t} DEFAULT VALUES")
    cur.execute(f"SELECT n, at IS NOT NULL FROM {t}")
    assert cur.fetchall() == [(5, True)]


def test_alter_under_a_users_view_says_what_to_do(connect: Callable[..., tique.Connection], unique_name) -> None:
    t = unique_name("alt_dep")
    conn = connect()
    setup(conn, t)
    cur = conn.cursor()
    cur.execute(f"CREATE VIEW {t}_v AS SELECT id FROM {t}")
    b = connect()
    b.cursor().execute(f"INSERT INTO {t} VALUES (3, 'c')")
    with pytest.raises(ProgrammingError, match="drop the views"):
        cur.execute(f"ALTER TABLE {t} ADD COLUMN n INT")
    b.commit()  # a refused ALTER records nothing that could fail another transaction
    b.cursor().execute(f"DELETE FROM {t} WHERE id = 3")
    b.commit()
    cur.execute(f"SELECT id FROM {t}_v ORDER BY id")
    assert cur.fetchall() == [(1,), (2,)]
    cur.execute(f"DROP VIEW {t}_v")
    cur.execute(f"ALTER TABLE {t} ADD COLUMN n INT")
    cur.execute(f"SELECT * FROM {t} ORDER BY id")
    assert cur.fetchall() == [(1, "a", None), (2, "b", None)]


def test_rename_table_after_writing_it_is_refused_in_that_transaction(
    connect: Callable[..., tique.Connection], unique_name
) -> None:
    """The transaction's writes to T are kept under T's old name: a read of the renamed table answered without
    them (its own row missing) and COMMIT then failed saying another session had dropped the table. Refused
    before anything changes, the transaction goes on; after its COMMIT the rename runs."""
    t, u = unique_name("alt_renw"), unique_name("alt_renw_new")
    conn = connect()
    setup(conn, t)
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {t} VALUES (3, 'c')")
    with pytest.raises(NotSupportedError, match="commit"):
        cur.execute(f"ALTER TABLE {t} RENAME TO {u}")
    cur.execute(f"SELECT id FROM {t} WHERE id = 3")
    assert cur.fetchall() == [(3,)]
    conn.commit()
    cur.execute(f"ALTER TABLE {t} RENAME TO {u}")
    cur.execute(f"SELECT id, v FROM {u} ORDER BY id")
    assert [tuple(r) for r in cur.fetchall()] == [(1, "a"), (2, "b"), (3, "c")]
    conn.commit()


def test_transaction_across_add_column(connect: Callable[..., tique.Connection], unique_name) -> None:
    """A transaction that buffered rows of T before an ALTER of T: it commits them with the new column's DEFAULT,
    or (with versioned catalog changes) fails as a whole - never half, never with a NULL where the DEFAULT goes.
    Rows of both shapes in one transaction fail cleanly: rolled back, the table works."""
    t = unique_name("alt_across")
    a, b = connect(), connect()
    setup(a, t)
    ca, cb = a.cursor(), b.cursor()
    ca.execute(f"INSERT INTO {t} VALUES (3, 'c')")  # buffered, old shape
    cb.execute(f"ALTER TABLE {t} ADD COLUMN n INT NOT NULL DEFAULT 4")
    try:
        a.commit()
        committed = True
    except tique.DatabaseError:
        committed = False
    cb.execute(f"SELECT id, v, n FROM {t} ORDER BY id")
    assert [tuple(r) for r in cb.fetchall()] == [(1, "a", 4), (2, "b", 4)] + ([(3, "c", 4)] if committed else [])
    b.rollback()
    ca.execute(f"SELECT COUNT(*) FROM {t} WHERE n = 4")
    assert ca.fetchone()[0] == 2 + committed
    a.rollback()
    ca.execute(f"INSERT INTO {t} (id, v) VALUES (8, 'h')")
    cb.execute(f"ALTER TABLE {t} ADD COLUMN m INT DEFAULT 5")
    with pytest.raises(tique.DatabaseError):  # SerializationFailure: a statement meets another session's ALTER
        ca.execute(f"INSERT INTO {t} VALUES (9, 'i', 1, 2)")  # now both shapes in one transaction
        ca.execute(f"SELECT COUNT(*) FROM {t}")
        a.commit()
    a.rollback()
    cb.execute(f"SELECT COUNT(*) FROM {t} WHERE id IN (8, 9)")
    assert cb.fetchone()[0] == 0
    b.rollback()
    ca.execute(f"INSERT INTO {t} VALUES (9, 'i', 1, 2)")
    a.commit()


def test_drop_column_cleanup_failure_warns(
    connect: Callable[..., tique.Connection], unique_name, plain: RawConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the commit point only clean-up is left: a failure there leaves an unused column, not a broken table."""
    from tique import alter

    t = unique_name("alt_clean")
    conn = connect()
    setup(conn, t)

    def boom(at: str) -> None:
        if at == "cleanup":
            raise RuntimeError("injected failure")

    monkeypatch.setattr(alter, "step_hook", boom)
    cur = conn.cursor()
    with pytest.warns(UserWarning, match="took effect"):
        cur.execute(f"ALTER TABLE {t} DROP COLUMN v")
    monkeypatch.setattr(alter, "step_hook", None)
    cur.execute(f"INSERT INTO {t} VALUES (3)")
    conn.commit()
    cur.execute(f"SELECT * FROM {t} ORDER BY id")
    assert cur.fetchall() == [(1,), (2,), (3,)]
    conn.close()
    assert not Checkpointer(plain).run_once().errors
    assert plain.execute(f"SELECT COUNT(*) FROM {storage(plain, t)} WHERE v IS NULL").scalar() == 3  # the unused column


def test_add_column_over_a_column_a_drop_left_behind(
    connect: Callable[..., tique.Connection], unique_name, plain: RawConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A DROP COLUMN whose clean-up failed (or was killed) leaves the physical column: adding the name again gives a
    new column with its DEFAULT in every row, not the old values, and not "already exists"."""
    from tique import alter

    t = unique_name("alt_readd")
    conn = connect()
    setup(conn, t)
    monkeypatch.setattr(
        alter, "step_hook", lambda at: (_ for _ in ()).throw(RuntimeError("x")) if at == "cleanup" else None
    )
    cur = conn.cursor()
    with pytest.warns(UserWarning, match="took effect"):
        cur.execute(f"ALTER TABLE {t} DROP COLUMN v")
    monkeypatch.setattr(alter, "step_hook", None)
    cur.execute(f"ALTER TABLE {t} ADD COLUMN v INT DEFAULT 7")
    cur.execute(f"INSERT INTO {t} (id) VALUES (3)")
    conn.commit()
    cur.execute(f"SELECT id, v FROM {t} ORDER BY id")
    assert cur.fetchall() == [(1, 7), (2, 7), (3, 7)]
    conn.close()
    assert not Checkpointer(plain).run_once().errors
    assert plain.execute(f"SELECT COUNT(*) FROM {storage(plain, t)} WHERE v = 7").scalar() == 3


def test_alter_column_default_and_null(
    connect: Callable[..., tique.Connection], unique_name, plain: RawConnection
) -> None:
    t = unique_name("alt_def")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, v VARCHAR(10) NOT NULL DEFAULT 'x')")
    cur.execute(f"ALTER TABLE {t} ALTER COLUMN v SET DEFAULT 'y'")
    cur.execute(f"INSERT INTO {t} (id) VALUES (1)")
    cur.execute(f"ALTER TABLE {t} ALTER COLUMN v DROP NOT NULL")
    cur.execute(f"ALTER TABLE {t} ALTER COLUMN v DROP DEFAULT")
    cur.execute(f"INSERT INTO {t} (id) VALUES (2)")
    conn.commit()
    cur.execute(f"SELECT id, v FROM {t} ORDER BY id")
    assert cur.fetchall() == [(1, "y"), (2, None)]
    assert spec(plain, t)["columns"][1][2:] == [False, None]
    with pytest.raises(NotSupportedError, match="SET NOT NULL"):
        cur.execute(f"ALTER TABLE {t} ALTER COLUMN v SET NOT NULL")
    with pytest.raises(NotSupportedError, match="type"):
        cur.execute(f"ALTER TABLE {t} ALTER COLUMN v SET DATA TYPE VARCHAR(20)")
    conn.close()
    assert not Checkpointer(plain).run_once().errors
    assert plain.execute(f"SELECT COUNT(*) FROM {storage(plain, t)} WHERE v IS NULL").scalar() == 1


def test_alter_is_a_versioned_catalog_change(connect: Callable[..., tique.Connection], unique_name) -> None:
    """A writing transaction that used T while another session altered it fails at COMMIT; a migration's own
    ALTER followed by a data UPDATE in the same transaction commits."""
    t, other = unique_name("alt_ver"), unique_name("alt_other")
    a, b = connect(), connect()
    setup(a, t)
    ca, cb = a.cursor(), b.cursor()
    cb.execute(f"CREATE TABLE {other} (k INT PRIMARY KEY)")
    ca.execute(f"SELECT COUNT(*) FROM {t}")  # a reads t ...
    ca.execute(f"INSERT INTO {other} VALUES (1)")  # ... and writes elsewhere
    cb.execute(f"ALTER TABLE {t} ADD COLUMN n INT DEFAULT 0")
    with pytest.raises(tique.SerializationFailure):
        a.commit()
    ca.execute(f"SELECT COUNT(*) FROM {other}")
    assert ca.fetchone()[0] == 0
    a.rollback()
    ca.execute(f"SELECT COUNT(*) FROM {t}")  # the migration reads, alters, fills, commits
    ca.execute(f"ALTER TABLE {t} ADD COLUMN m INT")
    ca.execute(f"UPDATE {t} SET m = id * 10")
    a.commit()
    cb.execute(f"SELECT id, n, m FROM {t} ORDER BY id")
    assert cb.fetchall() == [(1, 0, 10), (2, 0, 20)]


def test_rename_to_a_taken_name_says_what_is_wrong(connect: Callable[..., tique.Connection], unique_name) -> None:
    """A RENAME TO whose new name is a tique table is about the renamed table: a missing one is named as missing,
    and a plain table is refused by MonetDB for the taken name (before: "ALTER TABLE on the transactional table
    't2' is not supported")."""
    taken, missing, plain_t = unique_name("alt_taken"), unique_name("alt_missing"), unique_name("alt_plain")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {taken} (k INT PRIMARY KEY)")
    cur.execute(f"CREATE TABLE {plain_t} (k INT) -- tique: plain")
    conn.commit()
    with pytest.raises(tique.ProgrammingError, match=f"no such table '{missing}'"):
        cur.execute(f"ALTER TABLE {missing} RENAME TO {taken}")
    conn.rollback()
    with pytest.raises(tique.DatabaseError) as refused:
        cur.execute(f"ALTER TABLE {plain_t} RENAME TO {taken}")
    assert "not supported" not in str(refused.value)
    conn.rollback()
    cur.execute(f"SELECT COUNT(*) FROM {taken}")
    assert cur.fetchone()[0] == 0
    conn.close()


def test_a_table_a_view_uses_is_named_in_the_refusals_of_drop_and_alter(
    connect: Callable[..., tique.Connection], unique_name
) -> None:
    """MonetDB refused DROP TABLE of a tique table a user's view used with "DROP VIEW: cannot drop view 't'": the
    statement the user did not send. DROP TABLE and ALTER TABLE now name the table and the views that use it, and the
    table and the view keep their rows."""
    t, view = unique_name("used"), unique_name("user")
    conn = connect(autocommit=True)
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT)")
    cur.execute(f"INSERT INTO {t} VALUES (1, 2)")
    cur.execute(f"CREATE VIEW {view} AS SELECT k FROM {t}")
    for statement in (f"DROP TABLE {t}", f"DROP TABLE {t} CASCADE"):
        with pytest.raises(ProgrammingError, match=rf"^DROP TABLE {t}: .*{view} depend on it; drop them first") as e:
            cur.execute(statement)
        assert e.value.sqlstate == "2BM37"
    with pytest.raises(ProgrammingError, match=rf"^ALTER TABLE {t}: views use '{t}' \({view}\)"):
        cur.execute(f"ALTER TABLE {t} ADD COLUMN w INT")
    assert conn.execute(f"SELECT * FROM {view}").fetchall() == [(1,)]
    cur.execute(f"DROP VIEW {view}")
    cur.execute(f"DROP TABLE {t}")
    assert conn.execute(f"SELECT COUNT(*) FROM sys.tables WHERE name = '{t}'").fetchall() == [(0,)]
