"""Attack: the guards of commits 5eb68c2, 6fbad4f and b8f4cce, against the real kernel (embedded and over MAPI).

- ``Connection.bulk_load`` as a committed catalog change of its table (``tique.versioned.versioned``): the move
  into Storage runs after the change is decided, so overlapping users of the table fail certification;
- ``Connection._moved_under``: an engine ProgrammingError/OperationalError inside a transaction, when the process
  catalog changed since the statement was planned, becomes a SerializationFailure;
- ``Connection._not_renamed_meanwhile``: a pass-through query run in a transaction fails it when one of its names
  is a tique table after it ran;
- ``Connection.rollback`` ending the snapshot pin of a transaction that sent rows to the Cache;
- ``Transaction._dropped`` treating changed columns as a dropped table at COMMIT's flush.

Found here and fixed: a WITH name or a quoted name differing in case from a tique table failed every transaction;
a genuine error beside an unrelated DDL or load became a SerializationFailure; a move into Storage longer than the
commit lease let a writer hide a loaded row; an empty load failed overlapping writers; an ordinary user's refused
load named tique's Storage; a read-only transaction that saw rows a load added to Storage during it committed
(it now fails at COMMIT, as a writer does).
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import tique
from tests.committed import rows, run
from tests.conftest import ROOT, ServeProcess, start_serve
from tique.connection import Connection
from tique.elle.checker import analyze
from tique.elle.history import Mop, Op

Connect = Callable[..., Connection]
Names = Callable[[str], str]

# the move's first statement (bulk_load._move): the check of the Cache, inside the move's engine transaction
MOVE_CHECK = r"^SELECT COUNT\(\*\) FROM \S*__cache\S* WHERE tq_txid NOT IN"


def table(conn: Connection, name: str, rows_: int = 0) -> str:
    run(conn, f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT)")
    if rows_:
        conn.bulk_load(name, [(i, i) for i in range(1, rows_ + 1)])
    return name


# ---- pass-through queries in a transaction (_not_renamed_meanwhile) ------------------------------------------


def test_cte_named_like_a_tique_table_runs_in_a_transaction(connect: Connect, unique_name: Names) -> None:
    conn = connect()
    name = table(conn, unique_name("cte"), 2)

    def body(c: Connection) -> list[tuple[Any, ...]]:
        cur = c.cursor()
        cur.execute(f"SELECT v FROM {name} WHERE k = 1")
        cur.execute(f"WITH {name} AS (SELECT 42 AS k) SELECT k FROM {name}")
        return [tuple(r) for r in cur.fetchall()]

    assert conn.run(body, retries=2) == [(42,)]


def test_quoted_engine_table_differing_in_case_from_a_tique_table(connect: Connect, unique_name: Names) -> None:
    conn = connect()
    name = table(conn, unique_name("case"), 1)
    upper = name.upper()
    raw = conn.db.connect_raw()
    try:
        raw.execute(f'CREATE TABLE "{upper}" (x INT)')
        raw.execute(f'INSERT INTO "{upper}" VALUES (7)')

        def body(c: Connection) -> list[tuple[Any, ...]]:
            cur = c.cursor()
            cur.execute(f'SELECT x FROM "{upper}"')
            return [tuple(r) for r in cur.fetchall()]

        assert conn.run(body, retries=2) == [(7,)]
    finally:
        raw.execute(f'DROP TABLE "{upper}"')
        raw.close()


@pytest.mark.parametrize(
    "query",
    [
        "SELECT COUNT(*) > 0 FROM sys.tables",
        "SELECT COUNT(*) >= 0 FROM sys.columns AS c JOIN sys.tables AS t ON c.table_id = t.id",
        "SELECT x FROM (SELECT 1 AS x) AS {name}",
        "SELECT COUNT(*) >= 0 FROM {schema}.{name}",
        "SELECT COUNT(*) >= 0 FROM {plain}",
    ],
    ids=["sys.tables", "sys.columns", "subquery-alias", "other-schema", "plain-table"],
)
def test_pass_through_queries_in_a_transaction_keep_it(connect: Connect, unique_name: Names, query: str) -> None:
    """Held: no false SerializationFailure. Cost: two more engine calls per run (full reads of tique.tables)."""
    conn = connect()
    name = table(conn, unique_name("pt"), 1)
    plain, schema = unique_name("plain"), unique_name("sch")
    run(conn, f"CREATE TABLE {plain} (x INT) -- tique: plain")
    raw = conn.db.connect_raw()  # an engine table of the same name in another schema, not tique's
    raw.execute(f"CREATE SCHEMA {schema}")
    raw.execute(f"CREATE TABLE {schema}.{name} (x INT)")
    sql = query.format(name=name, plain=plain, schema=schema)
    cur = conn.cursor()
    try:
        sent: list[str] = []
        cur.execute(f"SELECT v FROM {name} WHERE k = 1")
        cur.execute(sql)  # planned once
        conn.statement_hooks.append(lambda s, _t, _e: sent.append(s))
        cur.execute(sql)
        assert cur.fetchall()[0][0] in (1, True)
        conn.statement_hooks.clear()
        conn.commit()
        assert len(sent) <= 3, sent
        # the cost: the whole catalog read after every such query, twice (tique/catalog.py, read_tables)
        assert all("FROM tique.tables" in s for s in sent[1:]), sent
    finally:
        raw.execute(f"DROP TABLE {schema}.{name}")
        raw.execute(f"DROP SCHEMA {schema}")
        raw.close()


def test_cost_of_the_catalog_read_after_a_pass_through(connect: Connect, unique_name: Names) -> None:
    """Measured: with 60 more tique tables in the catalog, the read after each pass-through query."""
    conn = connect()
    for _ in range(60):
        table(conn, unique_name("many"))
    timings: list[tuple[str, float]] = []
    cur = conn.cursor()
    cur.execute("SELECT COUNT(*) FROM sys.tables")
    conn.statement_hooks.append(lambda s, t, _e: timings.append((s, t)))
    for _ in range(20):
        cur.execute("SELECT COUNT(*) FROM sys.tables")
    conn.statement_hooks.clear()
    conn.commit()
    catalog = [t for s, t in timings if "FROM tique.tables" in s]
    query = [t for s, t in timings if "FROM sys.tables" in s]
    assert len(query) == 20 and len(catalog) == 40  # read until two reads agree (tique/catalog.py, read_tables)
    print(f"pass-through: {sum(query) / 20 * 1000:.2f} ms, catalog read after it: {sum(catalog) / 20 * 1000:.2f} ms")


# ---- a genuine error beside another session's DDL (_moved_under) ---------------------------------------------


def _unrelated_change(other: Connection, kind: str, names: Names, target: str) -> Callable[[str, float, Any], None]:
    """A statement hook: whenever the statement fails in the engine, another session changes an unrelated
    table at that moment (a bulk load into it, or CREATE TABLE)."""
    count = [0]

    def hook(_sql: str, _seconds: float, error: Exception | None) -> None:
        if error is None:
            return
        count[0] += 1
        if kind == "load":
            other.bulk_load(target, [(count[0], count[0])])
        else:
            run(other, f"CREATE TABLE {names('unrel')} (k INT PRIMARY KEY)")

    return hook


@pytest.mark.parametrize("kind", ["load", "create"])
def test_genuine_error_beside_an_unrelated_change_stays_the_users(
    connect: Connect, unique_name: Names, kind: str
) -> None:
    conn, other = connect(), connect()
    name = table(conn, unique_name("gen"), 1)
    unrelated = table(other, unique_name("unrel"))
    conn.statement_hooks.append(_unrelated_change(other, kind, unique_name, unrelated))

    def body(c: Connection) -> None:
        cur = c.cursor()
        cur.execute(f"SELECT v FROM {name} WHERE k = 1")
        cur.execute(f"SELECT no_such_column FROM {name}")

    try:
        with pytest.raises(tique.ProgrammingError) as caught:
            conn.run(body, retries=3)
    finally:
        conn.statement_hooks.clear()
    assert not isinstance(caught.value, tique.SerializationFailure), caught.value


def test_genuine_error_surfaces_after_one_retry(connect: Connect, unique_name: Names) -> None:
    """Held: with one change elsewhere at the first failure only, conn.run's retry gives the user's error."""
    conn, other = connect(), connect()
    name = table(conn, unique_name("gen1"), 1)
    unrelated = table(other, unique_name("unrel1"))
    changes = _unrelated_change(other, "load", unique_name, unrelated)
    fired: list[str] = []

    def once(sql: str, seconds: float, error: Exception | None) -> None:
        if error is not None and not fired:
            fired.append(sql)
            changes(sql, seconds, error)

    conn.statement_hooks.append(once)

    def body(c: Connection) -> None:
        cur = c.cursor()
        cur.execute(f"SELECT v FROM {name} WHERE k = 1")
        cur.execute(f"SELECT no_such_column FROM {name}")

    try:
        with pytest.raises(tique.ProgrammingError, match="no_such_column") as caught:
            conn.run(body, retries=3)
    finally:
        conn.statement_hooks.clear()
    assert not isinstance(caught.value, tique.SerializationFailure)
    assert fired


@pytest.mark.parametrize(
    ("statement", "error"),
    [
        ("SELECT v / (k - k) FROM {name}", tique.DataError),
        ("INSERT INTO {name} VALUES (1, 5)", tique.IntegrityError),
        ("INSERT INTO {text} VALUES (1, 'far too long for it')", tique.DataError),
        ("INSERT INTO {uniq} VALUES (2, 1)", tique.IntegrityError),
    ],
    ids=["division-by-zero", "duplicate-key", "value-too-long", "unique"],
)
def test_data_and_constraint_errors_beside_unrelated_ddl_stay_the_users(
    connect: Connect, unique_name: Names, statement: str, error: type[Exception]
) -> None:
    """Held: errors that are not ProgrammingError/OperationalError are never turned into conflicts, and the
    transaction goes on where it did before."""
    conn, other = connect(), connect()
    name = table(conn, unique_name("dz"), 2)
    text, uniq = unique_name("txt"), unique_name("uq")
    run(conn, f"CREATE TABLE {text} (k INT PRIMARY KEY, s VARCHAR(5))")
    run(conn, f"CREATE TABLE {uniq} (k INT PRIMARY KEY, u INT UNIQUE)")
    run(conn, f"INSERT INTO {uniq} VALUES (1, 1)")
    unrelated = table(other, unique_name("unrel2"))
    conn.statement_hooks.append(_unrelated_change(other, "load", unique_name, unrelated))
    cur = conn.cursor()
    cur.execute(f"SELECT v FROM {name} WHERE k = 1")
    try:
        with pytest.raises(error) as caught:
            cur.execute(statement.format(name=name, text=text, uniq=uniq))
            cur.fetchall()
            conn.commit()
    finally:
        conn.statement_hooks.clear()
    assert not isinstance(caught.value, tique.SerializationFailure), caught.value
    conn.rollback()


# ---- bulk_load as a committed change -----------------------------------------------------------------------


def test_a_move_longer_than_the_commit_lease_loses_no_loaded_row(connect: Connect, unique_name: Names) -> None:
    loader, writer = connect(), connect()
    name = table(loader, unique_name("slow"))
    seen: list[Any] = []

    def slow_move(sql: str, _seconds: float, error: Exception | None) -> None:
        if error is None and not seen and re.match(MOVE_CHECK, sql):
            seen.append("move")
            time.sleep(1.5)  # a move of some millions of rows: longer than the commit lease

            def body(c: Connection) -> list[tuple[Any, ...]]:
                cur = c.cursor()
                cur.execute(f"SELECT COUNT(*) FROM {name} WHERE k = 5")
                found = [tuple(r) for r in cur.fetchall()]
                cur.execute(f"INSERT INTO {name} VALUES (5, -1)")
                return found

            try:
                seen.append(writer.run(body))
            except tique.Error as exc:
                seen.append(exc)

    loader.statement_hooks.append(slow_move)
    try:
        loaded = loader.bulk_load(name, [(5, 5), (6, 6)])
    except tique.Error as exc:
        loaded = exc
    finally:
        loader.statement_hooks.clear()
    assert seen and seen[0] == "move"
    got = rows(loader, f"SELECT k, v FROM {name} ORDER BY k")
    # the load refused, or the writer lost, or the loaded rows are what the table reads: never a loaded row hidden
    assert loaded != 2 or isinstance(seen[1], Exception) or got == [(5, 5), (6, 6)], (loaded, seen, got)


def test_a_read_only_transaction_reads_one_snapshot_across_a_load(connect: Connect, unique_name: Names) -> None:
    """Was a strict xfail (loaded rows go to Storage, which every snapshot sees: a read-only transaction read a key
    absent, then present, and committed). A read-only transaction that read in two statements or more now checks at
    COMMIT for DDL and loads of the tables it read since it began, and fails as a writer does."""
    loader, reader = connect(), connect()
    name = table(loader, unique_name("ro"), 1)
    cur = reader.cursor()
    cur.execute(f"SELECT COUNT(*) FROM {name}")
    before = cur.fetchall()
    loader.bulk_load(name, [(2, 2)])
    cur.execute(f"SELECT COUNT(*) FROM {name}")
    after = cur.fetchall()
    committed = True
    try:
        reader.commit()
    except tique.SerializationFailure:
        committed = False
    assert not committed or before == after, (before, after)


def test_a_reader_that_writes_elsewhere_fails_across_a_load(connect: Connect, unique_name: Names) -> None:
    """Held: a transaction that read the loaded table and wrote another one fails certification."""
    loader, reader = connect(), connect()
    name = table(loader, unique_name("rw"), 1)
    other = table(loader, unique_name("rwo"))
    cur = reader.cursor()
    cur.execute(f"SELECT COUNT(*) FROM {name}")
    loader.bulk_load(name, [(2, 2)])
    cur.execute(f"INSERT INTO {other} VALUES (1, 1)")
    with pytest.raises(tique.SerializationFailure):
        reader.commit()


def test_an_empty_load_fails_no_writer(connect: Connect, unique_name: Names) -> None:
    loader, writer = connect(), connect()
    name = table(loader, unique_name("empty"), 1)
    writer.cursor().execute(f"UPDATE {name} SET v = v + 1 WHERE k = 1")
    assert loader.bulk_load(name, []) == 0
    writer.commit()
    assert rows(loader, f"SELECT v FROM {name}") == [(2,)]


def test_a_refused_load_beside_a_writer_loads_nothing(connect: Connect, unique_name: Names) -> None:
    """Held (with a cost): the refused load loads nothing and the writer's row survives; the writer fails its
    certification all the same (the load's change was decided before its check ran)."""
    loader, writer = connect(), connect()
    name = table(loader, unique_name("refused"), 1)
    writer.cursor().execute(f"UPDATE {name} SET v = 10 WHERE k = 1")
    with pytest.raises(tique.IntegrityError, match="loaded nothing"):
        loader.bulk_load(name, [(1, 5), (2, 2)])
    with pytest.raises(tique.SerializationFailure):
        writer.commit()
    assert rows(loader, f"SELECT k, v FROM {name} ORDER BY k") == [(1, 1)]


def test_two_loads_of_one_table_at_once(connect: Connect, unique_name: Names) -> None:
    """Held: two connections loading disjoint keys of one table at the same moment (the second's move while the
    first's is inside its engine transaction): each load is whole or absent, and no row is lost or doubled."""
    first, second = connect(), connect()
    name = table(first, unique_name("twice"))
    outcome: list[Any] = []

    def meanwhile(sql: str, _seconds: float, error: Exception | None) -> None:
        if error is None and not outcome and re.match(MOVE_CHECK, sql):
            try:
                outcome.append(second.bulk_load(name, [(i, i) for i in range(100, 150)]))
            except tique.Error as exc:
                outcome.append(exc)

    first.statement_hooks.append(meanwhile)
    try:
        mine: Any = first.bulk_load(name, [(i, i) for i in range(1, 51)])
    except tique.Error as exc:
        mine = exc
    finally:
        first.statement_hooks.clear()
    expected = (50 if mine == 50 else 0) + (50 if outcome[0] == 50 else 0)
    assert rows(first, f"SELECT COUNT(*) FROM {name}") == [(expected,)], (mine, outcome)
    assert expected > 0, (mine, outcome)
    print("two loads:", mine, outcome)


# ---- over MAPI: a killed loader, an ordinary user ------------------------------------------------------------

USER_PASSWORD = "carol pw"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    server = start_serve(tmp_path_factory.mktemp("guards") / "guards")
    admin = tique.connect(server.url, autocommit=True)
    cur = admin.cursor()
    cur.execute("CREATE TABLE carols (k INT PRIMARY KEY, v INT)")
    cur.execute("CREATE USER carol WITH PASSWORD 'carol pw' NAME 'Carol' SCHEMA sys")
    cur.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON carols TO carol")
    admin.close()
    yield server
    server.stop()


KILLED_LOADER = textwrap.dedent(
    """
    import os, re, signal, sys
    import tique
    url, table, after = sys.argv[1:4]
    conn = tique.connect(url)
    def hook(sql, seconds, error):
        if re.search(after, sql):
            os.kill(os.getpid(), signal.SIGKILL)
    conn.statement_hooks.append(hook)
    conn.bulk_load(table, [(i, i) for i in range(100, 110)])
    """
)


@pytest.mark.parametrize(
    "after",
    [r"^INSERT INTO tique\.commits", r"^INSERT INTO tique\.outcomes", MOVE_CHECK, r"^INSERT INTO \S*__storage"],
    ids=["record", "decided", "check", "storage-insert"],
)
def test_a_killed_loader_holds_later_commits_about_one_lease(
    served: ServeProcess, unique_name: Names, after: str
) -> None:
    conn = tique.connect(served.url)
    try:
        name = table(conn, unique_name("kill"), 1)
        other = table(conn, unique_name("killo"))
        proc = subprocess.run(
            [sys.executable, "-c", KILLED_LOADER, served.url, name, after], cwd=ROOT, capture_output=True, timeout=60
        )
        assert proc.returncode == -9, proc.stderr[-2000:]
        started = time.monotonic()
        run(conn, f"INSERT INTO {other} VALUES (1, 1)")
        held = time.monotonic() - started
        run(conn, f"INSERT INTO {name} VALUES (2, 2)")
        assert held < 3, f"a commit of another table waited {held:.2f} s behind the killed load"
        assert rows(conn, f"SELECT k FROM {name} ORDER BY k") == [(1,), (2,)]  # nothing of the killed load
        print(f"killed after {after}: a later commit waited {held:.2f} s")
    finally:
        conn.close()


def test_an_ordinary_users_refused_load_names_the_users_table(served: ServeProcess) -> None:
    url = served.url.replace(f"monetdb:{served.password}@", "carol:carol%20pw@")
    conn = tique.connect(url)
    try:
        with pytest.raises(tique.Error) as caught:
            conn.bulk_load("carols", [(1, 1)])
        assert "__storage" not in str(caught.value) and "carols" in str(caught.value), caught.value
    finally:
        conn.close()


# ---- rollback ends the pin ---------------------------------------------------------------------------------


@pytest.mark.parametrize("then", ["begin-commit", "close", "load", "autocommit"])
def test_rollback_of_sent_rows_then_more_work(connect: Connect, unique_name: Names, then: str) -> None:
    """Held: a rollback that sent rows (ending its pin), then a new transaction, a close, a load of the key."""
    conn = connect(autocommit=then == "autocommit")
    name = table(conn, unique_name("rb"), 1)
    cur = conn.cursor()
    if then == "autocommit":
        cur.execute(f"INSERT INTO {name} VALUES (7, 7)")
        conn.rollback()  # nothing open: a no-op
        conn.rollback()
        assert rows(conn, f"SELECT k FROM {name} ORDER BY k") == [(1,), (7,)]
        return
    cur.execute(f"INSERT INTO {name} VALUES (7, 7)")
    cur.execute(f"SELECT COUNT(*) FROM {name}")  # the row goes to the Cache
    assert cur.fetchall() == [(2,)]
    conn.rollback()
    conn.rollback()
    if then == "close":
        conn.close()
        conn = connect()
    elif then == "load":
        with pytest.raises(tique.IntegrityError, match="loaded nothing"):  # until a checkpoint drops its rows
            conn.bulk_load(name, [(7, 70)])
    cur = conn.cursor()
    cur.execute(f"SELECT COUNT(*) FROM {name}")
    assert cur.fetchall() == [(1,)]
    cur.execute(f"INSERT INTO {name} VALUES (8, 8)")
    conn.commit()
    assert rows(conn, f"SELECT k FROM {name} ORDER BY k") == [(1,), (8,)]


def test_rollback_after_the_snapshot_lease_ran_out(connect: Connect, unique_name: Names) -> None:
    """Held: the pin's end after its lease ended it is harmless; the next transaction runs."""
    conn = connect(snapshot_lease_ms=100)
    name = table(conn, unique_name("rblease"), 1)
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {name} VALUES (3, 3)")
    cur.execute(f"SELECT COUNT(*) FROM {name}")
    time.sleep(0.4)
    conn.rollback()
    run(conn, f"INSERT INTO {name} VALUES (4, 4)")
    assert rows(conn, f"SELECT k FROM {name} ORDER BY k") == [(1,), (4,)]


# ---- Transaction._dropped: an ALTER before COMMIT's flush -----------------------------------------------------


@pytest.mark.parametrize(
    "ddl", ["ALTER TABLE {t} ADD COLUMN w INT", "ALTER TABLE {t} DROP COLUMN v", "ALTER TABLE {t} RENAME COLUMN v TO w"]
)
def test_commit_after_another_sessions_alter_fails_retryably(connect: Connect, unique_name: Names, ddl: str) -> None:
    writer, other = connect(), connect()
    name = table(writer, unique_name("alt"), 1)
    writer.cursor().execute(f"INSERT INTO {name} VALUES (2, 2)")  # buffered
    run(other, ddl.format(t=name))
    with pytest.raises(tique.SerializationFailure) as caught:
        writer.commit()
    assert "__cache" not in str(caught.value) and "__storage" not in str(caught.value)
    assert rows(other, f"SELECT COUNT(*) FROM {name}") == [(1,)]


# ---- snapshot isolation with a bulk load and renames in the middle (Elle list-append) ------------------------


def test_list_append_with_loads_and_renames_is_snapshot_isolated(embedded_url: str, unique_name: Names) -> None:
    """Every transaction appends (read-only ones: the test above); loads of fresh keys and two renames run
    in the middle. The history must be snapshot isolated."""
    name = unique_name("elle")
    setup = tique.connect(embedded_url)
    run(setup, f"CREATE TABLE {name} (k INT PRIMARY KEY, v TEXT)")
    setup.close()
    clients, per_client, keys = 4, 60, 10
    parts: dict[Any, list[Op]] = {}
    failures: list[BaseException] = []
    current = [name]
    reach = [keys]  # the clients' keys: those below, the loaded ones once their load ran

    def client(p: int) -> None:
        rng = random.Random(p)
        conn = tique.connect(embedded_url)
        ops: list[Op] = []
        counter = 0
        try:
            for _ in range(per_client):
                mops = []
                for j in range(rng.randint(1, 4)):
                    key = rng.randrange(reach[0])
                    if rng.random() < 0.5 and j > 0:
                        mops.append(Mop("r", key, None))
                    else:
                        counter += 1
                        mops.append(Mop("append", key, p * 1_000_000 + counter))
                ops.append(Op(0, "invoke", p, tuple(mops), time.time_ns()))
                kind, done = _apply(conn, current[0], mops)
                ops.append(Op(0, kind, p, tuple(done), time.time_ns()))
        except BaseException as exc:
            failures.append(exc)
        finally:
            conn.close()
            parts[p] = ops

    def loader() -> None:
        conn = tique.connect(embedded_url)
        ops: list[Op] = []
        try:
            for step in range(6):
                time.sleep(0.15)
                if step in (2, 4):  # renamed away and back, writers running
                    away = f"{name}_r"
                    run(conn, f"ALTER TABLE {name} RENAME TO {away}")
                    time.sleep(0.05)
                    run(conn, f"ALTER TABLE {away} RENAME TO {name}")
                # a fresh key (the clients append to it afterwards), and on odd steps also a key they wrote: refused
                fresh = Mop("append", keys + step, 9_000_000 + step)
                mops = (fresh,) if step % 2 == 0 else (fresh, Mop("append", step, 9_100_000 + step))
                ops.append(Op(0, "invoke", "loader", mops, time.time_ns()))
                try:
                    conn.bulk_load(name, [(m.key, str(m.value)) for m in mops])
                    ops.append(Op(0, "ok", "loader", mops, time.time_ns()))
                except (tique.IntegrityError, tique.SerializationFailure, tique.ProgrammingError):
                    ops.append(Op(0, "fail", "loader", mops, time.time_ns()))
                reach[0] = keys + step + 1
        except BaseException as exc:
            failures.append(exc)
        finally:
            conn.close()
            parts["loader"] = ops

    threads = [threading.Thread(target=client, args=(p,)) for p in range(clients)]
    threads.append(threading.Thread(target=loader))
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert not failures, failures
    merged = sorted((op for part in parts.values() for op in part), key=lambda op: (op.time or 0, op.type != "invoke"))
    history = [Op(i, op.type, op.process, op.value, op.time) for i, op in enumerate(merged)]
    result = analyze(history)
    assert result.valid("snapshot-isolation"), result.to_json("snapshot-isolation")
    oks = sum(op.type == "ok" for op in history)
    # not a vacuous check: enough of it committed (renames abort whatever overlaps them; 16 to 70 of 240 seen)
    assert oks > clients * per_client // 20, oks


def _apply(conn: Connection, name: str, mops: list[Mop]) -> tuple[str, list[Mop]]:
    """One list-append transaction (tique.elle.workload.TiqueClient's), on table ``name``: fail when it did not
    commit (a conflict, or the table renamed away meanwhile), info when its outcome is unknown."""
    cur = conn.cursor()
    done: list[Mop] = []
    try:
        for m in mops:
            if m.f == "r":
                cur.execute(f"SELECT v FROM {name} WHERE k = %s", (m.key,))
                row = cur.fetchone()
                seen = tuple(int(x) for x in row[0].split(",")) if row else ()
                done.append(Mop("r", m.key, seen))
            else:
                cur.execute(f"UPDATE {name} SET v = v || %s WHERE k = %s", (f",{m.value}", m.key))
                if cur.rowcount == 0:
                    cur.execute(f"INSERT INTO {name} VALUES (%s, %s)", (m.key, str(m.value)))
                done.append(m)
    except (tique.SerializationFailure, tique.IntegrityError, tique.ProgrammingError):
        conn.rollback()
        return "fail", mops
    try:
        conn.commit()
    except (tique.SerializationFailure, tique.IntegrityError):
        return "fail", mops
    except tique.Error:
        return "info", mops
    return "ok", done
