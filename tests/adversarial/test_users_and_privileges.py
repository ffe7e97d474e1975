"""Ordinary MonetDB users use tique through ``tique serve`` with the privileges granted on their tables, and cannot
write tique's metadata, Storage/Cache tables or call its engine functions except through tique's protocol.

Found by the probe of issue 16: a user made with CREATE USER could not log in (the embedded kernel keeps a
password that never verifies until ALTER USER sets it again), so every client was the admin `monetdb`, and any
of them could INSERT INTO tique.outcomes or a Cache table (a reader then sees a rolled-back write as committed)
or call tique.reset / tique.set_lease.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymonetdb
import pytest

import tique
from tests.conftest import ServeProcess, start_serve
from tique.catalog import table_info
from tique.checkpoint import Checkpointer, open_for_checkpoint
from tique.errors import DatabaseError, ProgrammingError

PASSWORD = "alice's pw"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    server = start_serve(tmp_path_factory.mktemp("privs") / "privs")
    admin = tique.connect(server.url, autocommit=True)
    cur = admin.cursor()
    for name in ("granted", "readonly", "secret", "revoked"):
        cur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT)")
        cur.execute(f"INSERT INTO {name} VALUES (1, 10), (2, 20)")
    cur.execute("CREATE USER alice WITH PASSWORD 'alice''s pw' NAME 'Alice' SCHEMA sys")
    cur.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON granted TO alice")
    cur.execute("GRANT SELECT ON readonly TO alice")
    cur.execute("GRANT SELECT, INSERT ON revoked TO alice")
    admin.close()
    yield server
    server.stop()


def alice_url(server: ServeProcess) -> str:
    return server.url.replace(f"monetdb:{server.password}@", "alice:alice%27s%20pw@")


def alice_raw(server: ServeProcess) -> Any:
    """alice without tique: what a hostile client can send."""
    return pymonetdb.connect(
        database=server.directory.name,
        hostname="127.0.0.1",
        port=server.port,
        username="alice",
        password=PASSWORD,
        autocommit=True,
    )


def rows(url: str, table: str) -> list[tuple[int, int]]:
    conn = tique.connect(url)
    try:
        cur = conn.cursor()
        cur.execute(f"SELECT k, v FROM {table} ORDER BY k")
        return [(int(k), int(v)) for k, v in cur.fetchall()]
    finally:
        conn.close()


def refused(raw: Any, sql: str) -> str:
    """The engine's refusal of ``sql`` for this raw session (the test fails if it ran)."""
    cur = raw.cursor()
    with pytest.raises(pymonetdb.DatabaseError) as caught:
        cur.execute(sql)
    return str(caught.value)


def test_created_user_logs_in(served: ServeProcess) -> None:
    conn = tique.connect(alice_url(served))
    cur = conn.cursor()
    cur.execute("SELECT CURRENT_USER")
    assert cur.fetchone() == ("alice",)
    conn.close()


def test_user_reads_and_writes_a_granted_table(served: ServeProcess) -> None:
    conn = tique.connect(alice_url(served))
    cur = conn.cursor()
    cur.execute("INSERT INTO granted VALUES (3, 30)")
    cur.execute("UPDATE granted SET v = v + 1 WHERE k = 1")
    cur.execute("DELETE FROM granted WHERE k = 2")
    conn.commit()
    conn.close()
    assert rows(served.url, "granted") == [(1, 11), (3, 30)]
    assert rows(alice_url(served), "granted") == [(1, 11), (3, 30)]


def test_user_report_yields_to_writers(served: ServeProcess) -> None:
    """An ordinary user's analytical read beside writers switches its own session to the sequential pipeline
    (tique/workload.py): MonetDB lets a user set that for their session."""
    writer, reader = tique.connect(served.url), tique.connect(alice_url(served))
    sent: list[str] = []
    reader.statement_hooks.append(lambda sql, seconds, error: sent.append(sql))
    reader.cursor().execute("SELECT SUM(v) FROM readonly")  # the first begin: where the snapshot stands
    reader.commit()
    writer.cursor().execute("UPDATE granted SET v = v + 1 WHERE k = 1")
    writer.commit()
    cur = reader.cursor()
    cur.execute("SELECT SUM(v) FROM readonly")
    assert cur.fetchall() == [(30,)]
    assert "SET optimizer = 'sequential_pipe'" in sent
    for conn in (writer, reader):
        conn.close()


@pytest.mark.parametrize(
    ("statement", "privilege"),
    [
        ("INSERT INTO readonly VALUES (9, 90)", "INSERT"),
        ("UPDATE readonly SET v = 0 WHERE k = 1", "UPDATE"),
        ("DELETE FROM readonly WHERE k = 1", "DELETE"),
    ],
)
def test_select_only_table_is_read_but_not_written(served: ServeProcess, statement: str, privilege: str) -> None:
    conn = tique.connect(alice_url(served), on_statement_error="continue")
    cur = conn.cursor()
    cur.execute("SELECT v FROM readonly WHERE k = 1")
    assert cur.fetchone() == (10,)
    with pytest.raises(ProgrammingError) as caught:
        cur.execute(statement)
    message = str(caught.value)
    assert "readonly" in message and privilege in message and "alice" in message
    cur.execute("SELECT COUNT(*) FROM readonly")  # the transaction stays usable
    assert cur.fetchone() == (2,)
    conn.commit()
    conn.close()
    assert rows(served.url, "readonly") == [(1, 10), (2, 20)]


def test_ungranted_table_is_neither_read_nor_written(served: ServeProcess) -> None:
    conn = tique.connect(alice_url(served))
    cur = conn.cursor()
    with pytest.raises(ProgrammingError, match=r"no SELECT privilege on table sys\.secret"):
        cur.execute("SELECT v FROM secret WHERE k = 1")
    conn.rollback()
    with pytest.raises(ProgrammingError, match=r"no INSERT privilege on table sys\.secret"):
        cur.execute("INSERT INTO secret VALUES (5, 50)")
    conn.close()
    raw = alice_raw(served)
    info = table_info(_admin_raw(served), "sys", "secret")
    for sql in (f"SELECT * FROM {info.cache}", f"SELECT * FROM {info.storage}", "SELECT * FROM sys.secret"):
        refused(raw, sql)
    raw.close()
    assert rows(served.url, "secret") == [(1, 10), (2, 20)]


def _admin_raw(server: ServeProcess) -> Any:
    from tique.engine import open_engine

    return open_engine(server.url).connect()


def test_metadata_and_internal_tables_cannot_be_forged(served: ServeProcess) -> None:
    raw = alice_raw(served)
    readonly = table_info(_admin_raw(served), "sys", "readonly")
    granted = table_info(_admin_raw(served), "sys", "granted")
    for sql in (
        "INSERT INTO tique.outcomes VALUES (999999, 1, TRUE)",
        "DELETE FROM tique.outcomes",
        "UPDATE tique.commits SET cts = 0",
        "DELETE FROM tique.commits",
        "INSERT INTO tique.tables VALUES (1, 'sys', 'x', 'tx', '{}')",
        "DELETE FROM tique.tables",
        f"INSERT INTO {readonly.cache} VALUES (9, 90, 1, 0, FALSE)",
        f"DELETE FROM {granted.cache}",
        f"UPDATE {granted.cache} SET v = 0",
        f"DELETE FROM {granted.storage}",
        f"INSERT INTO {granted.storage} VALUES (7, 70)",
        f"DROP TABLE {granted.cache}",
    ):
        message = refused(raw, sql)
        assert "insufficient privileges" in message or "access denied" in message, (sql, message)
    raw.close()
    assert rows(served.url, "readonly") == [(1, 10), (2, 20)]


@pytest.mark.parametrize(
    "call",
    [
        "SELECT tique.reset(1, 1)",
        "SELECT tique.set_lease(1)",
        "SELECT tique.abandon(1)",
        "SELECT tique.decide(1, 1)",
        "SELECT tique.advance(1, 0)",
        "SELECT tique.ckpt_acquire(1, 100000)",
        "SELECT tique.ckpt_lock(1, 100000)",
        "SELECT tique.ckpt_fence(1, 1, 100000)",
        "SELECT tique.storage_failed()",
        "SELECT tique.bump_catalog()",
        "SELECT tique.next_cts()",
    ],
)
def test_engine_functions_are_refused(served: ServeProcess, call: str) -> None:
    raw = alice_raw(served)
    assert "insufficient privileges" in refused(raw, call)
    raw.close()


def test_outcome_of_another_transaction_cannot_be_written(served: ServeProcess) -> None:
    """The protocol's outcome procedures write only what the C module decided for the transaction that took the
    commit timestamp: naming someone else's commit writes nothing."""
    admin = tique.connect(served.url)
    cur = admin.cursor()
    cur.execute("UPDATE granted SET v = 100 WHERE k = 1")
    cur.execute("SELECT v FROM granted WHERE k = 1")  # its version goes to the Cache (read-your-writes)
    txid = admin.transaction().txid
    admin.rollback()  # no commit record: its Cache rows must never become visible
    other = tique.connect(served.url)
    other.cursor().execute("UPDATE granted SET v = v WHERE k = 3")
    other.commit()
    check = _admin_raw(served)
    cts = int(check.execute("SELECT MAX(cts) FROM tique.commits").scalar())
    raw = alice_raw(served)
    cur = raw.cursor()
    for sql in (
        f"CALL tique.put_outcome({txid}, {cts}, 1)",
        f"CALL tique.close_outcome({txid}, {cts})",
        f"CALL tique.settle_outcome({cts})",
    ):
        try:
            cur.execute(sql)
        except pymonetdb.DatabaseError:
            pass  # refused: nothing written either
    raw.close()
    assert not check.execute(f"SELECT COUNT(*) FROM tique.outcomes WHERE txid = {txid}").scalar()
    assert rows(served.url, "granted")[0] != (1, 100)
    admin.close()
    other.close()


def test_grant_and_revoke_carry_over_to_storage_and_cache(served: ServeProcess) -> None:
    assert rows(alice_url(served), "revoked") == [(1, 10), (2, 20)]
    admin = tique.connect(served.url, autocommit=True)
    admin.cursor().execute("REVOKE SELECT, INSERT ON revoked FROM alice")
    info = table_info(_admin_raw(served), "sys", "revoked")
    raw = alice_raw(served)
    refused(raw, f"SELECT * FROM {info.cache}")
    refused(raw, f"SELECT * FROM {info.storage}")
    refused(raw, f"INSERT INTO {info.cache} VALUES (9, 90, 1, 0, FALSE)")
    with pytest.raises(ProgrammingError, match=r"no SELECT privilege on table sys\.revoked"):
        rows(alice_url(served), "revoked")
    admin.cursor().execute("GRANT SELECT ON revoked TO alice")
    assert rows(alice_url(served), "revoked") == [(1, 10), (2, 20)]
    cur = raw.cursor()
    cur.execute(f"SELECT COUNT(*) FROM {info.storage}")
    refused(raw, f"INSERT INTO {info.cache} VALUES (9, 90, 1, 0, FALSE)")
    raw.close()
    admin.close()


def test_only_the_admin_runs_the_checkpointer(served: ServeProcess) -> None:
    conn = tique.connect(alice_url(served))
    cur = conn.cursor()
    cur.execute("UPDATE granted SET v = 7 WHERE k = 3")
    conn.commit()
    conn.close()
    with pytest.raises(DatabaseError):
        engine, raw = open_for_checkpoint(alice_url(served))
        try:
            Checkpointer(raw).run_once()
        finally:
            raw.close()
            engine.close()
    engine, raw = open_for_checkpoint(served.url)
    try:
        report = Checkpointer(raw).run_once()
    finally:
        raw.close()
        engine.close()
    assert report.moved >= 1
    assert (3, 7) in rows(alice_url(served), "granted")


def test_conflicting_users_commit_one_and_abort_the_other(served: ServeProcess) -> None:
    """An ordinary user's COMMIT goes through the protocol procedures: a write-write conflict between two users'
    transactions aborts one of them (its outcome recorded as aborted), and both sessions go on."""
    first, second = tique.connect(alice_url(served)), tique.connect(alice_url(served))
    first.cursor().execute("UPDATE granted SET v = 500 WHERE k = 1")
    second.cursor().execute("UPDATE granted SET v = 600 WHERE k = 1")
    first.commit()
    with pytest.raises(tique.errors.SerializationFailure):
        second.commit()
    cur = second.cursor()
    cur.execute("SELECT v FROM granted WHERE k = 1")
    assert cur.fetchone() == (500,)
    cur.execute("UPDATE granted SET v = v + 1 WHERE k = 1")
    second.commit()
    first.close()
    second.close()
    assert (1, 501) in rows(served.url, "granted")


def test_user_cannot_change_tique_tables_by_ddl(served: ServeProcess) -> None:
    conn = tique.connect(alice_url(served), autocommit=True)
    cur = conn.cursor()
    for ddl in ("CREATE TABLE mine (k INT PRIMARY KEY, v INT)", "DROP TABLE granted", "ALTER TABLE granted ADD w INT"):
        with pytest.raises(DatabaseError):
            cur.execute(ddl)
    conn.close()
    assert rows(served.url, "granted")
    # a refused DDL leaves no record behind that would fail, or hold back, later transactions on the table
    later = tique.connect(alice_url(served))
    later.cursor().execute("UPDATE granted SET v = v WHERE k = 1")
    later.commit()
    assert later.last_commit is not None and later.last_commit.visible
    later.close()


def test_given_up_commit_stays_aborted(served: ServeProcess) -> None:
    """The protocol procedures an ordinary user's driver calls, step by step: a commit timestamp is advanced only
    once settled, and one its owner gave up (close_outcome) is aborted for good: no later decide."""
    raw = alice_raw(served)
    cur = raw.cursor()
    cur.execute("SELECT tique.begin_txn(0, 60000)")
    txid = int(cur.fetchone()[0])
    cur.execute(f"SELECT tique.next_cts_for({txid})")
    cts = int(cur.fetchone()[0])
    cur.execute(f"INSERT INTO tique.commits VALUES ({txid}, 0, {cts}, 42)")
    assert "not a commit timestamp" in refused(raw, f"SELECT tique.advance_settled({cts}, 0)")  # not settled
    cur.execute(f"CALL tique.close_outcome({txid}, {cts})")
    refused(raw, f"CALL tique.put_outcome({txid}, {cts}, 1)")
    cur.execute(f"SELECT tique.advance_settled({cts}, 0), tique.end_txn({txid})")
    cur.execute(f"SELECT ok FROM tique.outcomes WHERE txid = {txid}")
    assert cur.fetchall() == [(False,)]
    raw.close()
    conn = tique.connect(alice_url(served))  # later commits are not held back by it
    conn.cursor().execute("UPDATE granted SET v = 8 WHERE k = 3")
    conn.commit()
    conn.close()
    assert (3, 8) in rows(served.url, "granted")


def test_user_and_grants_survive_a_restart(tmp_path: Path) -> None:
    server = start_serve(tmp_path / "restarted")
    admin = tique.connect(server.url, autocommit=True)
    cur = admin.cursor()
    cur.execute("CREATE TABLE kept (k INT PRIMARY KEY, v INT)")
    cur.execute("INSERT INTO kept VALUES (1, 1)")
    cur.execute("CREATE USER alice WITH PASSWORD 'alice''s pw' NAME 'Alice' SCHEMA sys")
    cur.execute("GRANT SELECT ON kept TO alice")
    admin.close()
    server.stop()
    server = start_serve(tmp_path / "restarted", port=server.port)
    try:
        assert rows(alice_url(server), "kept") == [(1, 1)]
        conn = tique.connect(alice_url(server))
        with pytest.raises(ProgrammingError, match=r"no INSERT privilege on table sys\.kept"):
            conn.cursor().execute("INSERT INTO kept VALUES (2, 2)")
        conn.close()
    finally:
        server.stop()
