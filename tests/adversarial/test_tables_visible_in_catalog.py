"""A transactional table T exists in MonetDB's own catalog under its own name (a view of its latest committed
state), so plain MonetDB clients - pymonetdb directly, mclient, BI tools - see T with its columns, read committed
rows only (one consistent state per statement) and cannot write to it behind tique's back."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pymonetdb
import pytest

import tique
from tests.conftest import start_serve
from tique.checkpoint import Checkpointer
from tique.engine import open_engine

Plain = Callable[[str], list[tuple[Any, ...]]]


@pytest.fixture
def plain(url: str) -> Iterator[Plain]:
    """A client that is not tique: pymonetdb straight to `tique serve`, or a bare kernel session embedded."""
    if url.startswith("monetdb://"):
        rest = url.split("://", 1)[1]
        creds, where = rest.split("@")
        user, password = creds.split(":")
        hostport, database = where.split("/")
        host, port = hostport.split(":")
        conn = pymonetdb.connect(database, hostname=host, port=int(port), username=user, password=password)
        conn.set_autocommit(True)

        def run(sql: str) -> list[tuple[Any, ...]]:
            cur = conn.cursor()
            cur.execute(sql)
            return [tuple(r) for r in cur.fetchall()] if cur.description else []

        yield run
        conn.close()
    else:
        engine = open_engine(url)
        raw = engine.connect()
        yield lambda sql: [tuple(r) for r in raw.execute(sql).rows]
        engine.close()  # closes raw and the session the embedded engine keeps for itself


def test_table_listed_with_columns(connect: Callable[..., tique.Connection], plain: Plain, unique_name) -> None:
    name = unique_name("members")
    conn = connect()
    conn.cursor().execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, nick VARCHAR(20) NOT NULL, score DOUBLE)")
    found = plain(
        "SELECT c.name, c.type FROM sys.columns c JOIN sys.tables t ON c.table_id = t.id "
        f"WHERE t.name = '{name}' ORDER BY c.number"
    )
    assert [r[0] for r in found] == ["id", "nick", "score"]
    assert [r[1] for r in found] == ["int", "varchar", "double"]
    conn.cursor().execute(f"DROP TABLE {name}")
    assert plain(f"SELECT COUNT(*) FROM sys.tables WHERE name = '{name}'") == [(0,)]


def test_plain_client_reads_committed_only(connect: Callable[..., tique.Connection], plain: Plain, unique_name) -> None:
    name = unique_name("kv")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v VARCHAR(10))")
    conn.bulk_load(name, [(1, "stable"), (2, "gone")])
    cur.execute(f"INSERT INTO {name} VALUES (3, 'new')")
    cur.execute(f"UPDATE {name} SET v = 'changed' WHERE k = 1")
    cur.execute(f"DELETE FROM {name} WHERE k = 2")
    cur.execute(f"SELECT COUNT(*) FROM {name}")  # sends the writes to the Cache: provisional, not committed
    assert sorted(plain(f"SELECT k, v FROM {name}")) == [(1, "stable"), (2, "gone")]
    conn.commit()
    assert sorted(plain(f"SELECT k, v FROM {name}")) == [(1, "changed"), (3, "new")]
    cur.execute(f"INSERT INTO {name} VALUES (4, 'aborted')")
    cur.execute(f"SELECT COUNT(*) FROM {name}")
    conn.rollback()
    assert sorted(plain(f"SELECT k FROM {name}")) == [(1,), (3,)]


def test_plain_client_cannot_write(connect: Callable[..., tique.Connection], plain: Plain, unique_name) -> None:
    name = unique_name("ro")
    connect().cursor().execute(f"CREATE TABLE {name} (k INT PRIMARY KEY)")
    with pytest.raises(Exception, match=r"(?i)view"):
        plain(f"INSERT INTO {name} VALUES (1)")
    assert plain(f"SELECT COUNT(*) FROM {name}") == [(0,)]


def test_each_plain_statement_is_consistent(
    connect: Callable[..., tique.Connection], plain: Plain, unique_name
) -> None:
    """Transfers keep the total; a plain client's SUM must never see half a transfer."""
    name = unique_name("acct")
    setup = connect()
    setup.cursor().execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, balance INT)")
    setup.bulk_load(name, [(i, 100) for i in range(8)])
    stop = time.monotonic() + 4
    done = [0]

    def transfers(seed: int) -> None:
        conn = connect()
        i = seed
        while time.monotonic() < stop:
            a, b = i % 8, (i * 3 + 1) % 8
            i += 1
            if a == b:
                continue

            def move(c: tique.Connection, a: int = a, b: int = b) -> None:
                c.cursor().execute(f"UPDATE {name} SET balance = balance - 1 WHERE id = {a}")
                c.cursor().execute(f"UPDATE {name} SET balance = balance + 1 WHERE id = {b}")

            try:
                conn.run(move, retries=20)
                done[0] += 1
            except tique.SerializationFailure:
                pass

    threads = [threading.Thread(target=transfers, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    sums = []
    while time.monotonic() < stop:
        sums.append(plain(f"SELECT SUM(balance), COUNT(*) FROM {name}")[0])
    for t in threads:
        t.join()
    assert done[0] > 5 and len(sums) > 5
    assert set(sums) == {(800, 8)}
    # the plain client ends on the committed state (not on a stale one; transfers cycle every 8 steps, so the
    # final balances may well equal the first ones: compare with tique's own read instead)
    final = connect().cursor()
    final.execute(f"SELECT id, balance FROM {name}")
    assert sorted(plain(f"SELECT id, balance FROM {name}")) == sorted(final.fetchall())


def _direct(port: int) -> Any:
    return pymonetdb.connect("old", hostname="127.0.0.1", port=port, username="monetdb", password="monetdb")


def test_tables_without_view_get_one_at_open(tmp_path: Path) -> None:
    """A database made before tique created views: its tables get their view when `tique serve` opens it."""
    server = start_serve(tmp_path / "old")
    try:
        conn = tique.connect(server.url)
        conn.cursor().execute("CREATE TABLE legacy (k INT PRIMARY KEY, v INT)")
        conn.cursor().execute("INSERT INTO legacy VALUES (1, 10)")
        conn.commit()
        conn.close()
        direct = _direct(server.port)
        direct.set_autocommit(True)
        direct.cursor().execute("DROP VIEW legacy")  # as a database made before views existed
        direct.close()
    finally:
        server.stop()
    server = start_serve(tmp_path / "old")
    try:
        direct = _direct(server.port)
        cur = direct.cursor()
        cur.execute("SELECT k, v FROM legacy")
        assert cur.fetchall() == [(1, 10)]
        direct.close()
    finally:
        server.stop()


def _schema_tables(plain: Plain, schema: str) -> list[str]:
    return sorted(
        str(r[0])
        for r in plain(
            f"SELECT t.name FROM sys.tables t JOIN sys.schemas s ON t.schema_id = s.id WHERE s.name = '{schema}'"
        )
    )


def test_user_schema_holds_only_the_view(connect: Callable[..., tique.Connection], plain: Plain, unique_name) -> None:
    """tique's Storage and Cache live in a schema of their own: the application's schema lists T (the view) and
    nothing of tique's, also for names whose schema__table spelling collides (a__b.c and a.b__c)."""
    base = unique_name("own")
    first, second = f"{base}__x", base  # "{first}"."t" and "{second}"."x__t": one spelling of schema__table
    conn = connect()
    cur = conn.cursor()
    for schema, table in ((first, "t"), (second, "x__t")):
        cur.execute(f'CREATE SCHEMA "{schema}"')
        cur.execute(f'CREATE TABLE "{schema}"."{table}" (k INT PRIMARY KEY, v INT)')
        cur.execute(f'INSERT INTO "{schema}"."{table}" VALUES (1, {len(table)})')
        cur.execute(f'CREATE INDEX "{table}_v" ON "{schema}"."{table}" (v)')
    conn.commit()
    assert _schema_tables(plain, first) == ["t"]
    assert _schema_tables(plain, second) == ["x__t"]
    kinds = plain(f"SELECT t.type FROM sys.tables t JOIN sys.schemas s ON t.schema_id = s.id WHERE s.name = '{first}'")
    assert kinds == [(1,)]  # a view
    for schema, table in ((first, "t"), (second, "x__t")):
        assert plain(f'SELECT k, v FROM "{schema}"."{table}"') == [(1, len(table))]  # each its own rows
        cur.execute(f'UPDATE "{schema}"."{table}" SET v = v + 1')
    conn.commit()
    cur.execute(f'SELECT v FROM "{first}"."t" UNION ALL SELECT v FROM "{second}"."x__t"')
    assert sorted(r[0] for r in cur.fetchall()) == [2, 5]
    for schema, table in ((first, "t"), (second, "x__t")):
        cur.execute(f'DROP INDEX "{schema}"."{table}_v"')  # the index the user named, wherever tique put it
        cur.execute(f'CREATE INDEX "{table}_v" ON "{schema}"."{table}" (v)')  # so the name is free again
        cur.execute(f'DROP TABLE "{schema}"."{table}"')
    conn.commit()
    assert _schema_tables(plain, first) == [] and _schema_tables(plain, second) == []


def test_table_made_by_an_older_tique_keeps_working(tmp_path: Path) -> None:
    """An older tique kept Storage and Cache beside T in the application's schema, and its catalog spec says
    nothing of where they are: such a table is read, written, checkpointed, renamed and dropped there."""
    server = start_serve(tmp_path / "old")
    try:
        tique.connect(server.url).close()  # tique's metadata
        direct = _direct(server.port)
        direct.set_autocommit(True)
        old = direct.cursor()
        old.execute('CREATE TABLE "sys"."aged__storage" ("k" INT NOT NULL, "v" INT, PRIMARY KEY ("k"))')
        old.execute(
            'CREATE TABLE "sys"."aged__cache" ("k" INT, "v" INT, tq_txid BIGINT, tq_seq INT, tq_deleted BOOLEAN)'
        )
        old.execute("INSERT INTO sys.aged__storage VALUES (1, 10), (2, 20)")
        spec = '{"columns": [["k", "INT", true, null], ["v", "INT", false, null]], "key": ["k"], "indexes": []}'
        old.execute(f"INSERT INTO tique.tables VALUES (7, 'sys', 'aged', 'tx', '{spec}')")
        direct.close()
    finally:
        server.stop()
    server = start_serve(tmp_path / "old")  # open: recovery, and the view an older database lacks
    try:
        conn = tique.connect(server.url)
        cur = conn.cursor()
        cur.execute("UPDATE aged SET v = v + 1 WHERE k = 1")
        cur.execute("INSERT INTO aged VALUES (3, 30)")
        conn.commit()
        cur.execute("SELECT k, v FROM aged ORDER BY k")
        assert cur.fetchall() == [(1, 11), (2, 20), (3, 30)]
        direct = _direct(server.port)
        look = direct.cursor()
        look.execute("SELECT COUNT(*) FROM sys.aged__cache")
        assert look.fetchone()[0] == 2  # the versions went to the old Cache
        look.execute("SELECT k, v FROM sys.aged ORDER BY k")  # and the view reads them
        assert look.fetchall() == [(1, 11), (2, 20), (3, 30)]
        direct.close()
        cur.execute("ALTER TABLE aged RENAME TO aged2")
        cur.execute("INSERT INTO aged2 VALUES (4, 40)")
        conn.commit()
        assert not Checkpointer(open_engine(server.url).connect()).run_once().errors
        direct = _direct(server.port)
        look = direct.cursor()
        look.execute("SELECT k, v FROM sys.aged2__storage ORDER BY k")  # renamed in place, checkpointed there
        assert look.fetchall() == [(1, 11), (2, 20), (3, 30), (4, 40)]
        direct.close()
        cur.execute("DROP TABLE aged2")
        conn.commit()
        conn.close()
        direct = _direct(server.port)
        look = direct.cursor()
        look.execute("SELECT COUNT(*) FROM sys.tables WHERE name LIKE 'aged%'")
        assert look.fetchone()[0] == 0
        direct.close()
    finally:
        server.stop()
