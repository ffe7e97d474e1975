"""A transaction id is bound to the kernel session that began it: another ordinary user who learns it (ids are in
tique.commits, Cache rows, outcomes) cannot take a commit timestamp for it, publish it, decide it committed or
aborted, renew or end its snapshot, through any procedure or function PUBLIC may call, nor call the C module's
unchecked functions. The owner's own commit still works, step by step as its driver runs it.

Found by the probe of issue 16 (item 5): the protocol runs in the client and ids were not bound to sessions, so
any user could act for a running transaction whose id it learned."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pymonetdb
import pytest

import tique
from tests.conftest import ServeProcess, start_serve

TAKEN = 1


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    server = start_serve(tmp_path_factory.mktemp("bound") / "bound")
    admin = tique.connect(server.url, autocommit=True)
    cur = admin.cursor()
    cur.execute("CREATE TABLE shared (k INT PRIMARY KEY, v INT)")
    cur.execute("INSERT INTO shared VALUES (1, 10), (2, 20)")
    for user in ("alice", "bob"):
        cur.execute(f"CREATE USER {user} WITH PASSWORD '{user} pw' NAME '{user}' SCHEMA sys")
        cur.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON shared TO {user}")
    admin.close()
    yield server
    server.stop()


def raw_session(server: ServeProcess, user: str) -> Any:
    return pymonetdb.connect(
        database=server.directory.name,
        hostname="127.0.0.1",
        port=server.port,
        username=user,
        password=f"{user} pw",
        autocommit=True,
    )


def one(raw: Any, sql: str) -> Any:
    cur = raw.cursor()
    cur.execute(sql)
    return cur.fetchone()[0]


def refused(raw: Any, sql: str) -> str:
    cur = raw.cursor()
    with pytest.raises(pymonetdb.DatabaseError) as caught:
        cur.execute(sql)
    return str(caught.value)


def test_another_user_cannot_act_for_a_running_transaction(served: ServeProcess) -> None:
    alice, bob = raw_session(served, "alice"), raw_session(served, "bob")
    txid = int(one(alice, "SELECT tique.begin_txn(0, 60000)"))
    cts = int(one(alice, f"SELECT tique.next_cts_for({txid})"))
    alice.cursor().execute(f"INSERT INTO tique.commits VALUES ({txid}, 0, {cts}, 42)")

    for attack in (
        f"SELECT tique.next_cts_for({txid})",
        f"SELECT tique.record_cts({txid})",
        f"SELECT tique.publish_own({txid})",
        f"SELECT tique.publish({cts}, 100)",
        f"CALL tique.put_outcome({txid}, {cts}, 1)",
        f"CALL tique.close_outcome({txid}, {cts})",
        f"SELECT tique.renew({txid}, 600000)",
    ):
        message = refused(bob, attack)
        assert "belongs to another session" in message, (attack, message)
    for unchecked in (  # the C module's functions that take the session as an argument are the owner's only
        f"SELECT tique.publish_as({cts}, 100, 0)",
        f"SELECT tique.decide_as({cts}, 1, 0)",
        f"SELECT tique.decide({cts}, 1)",
        f"SELECT tique.end_txn_as({txid}, 0)",
        f"SELECT tique.next_cts_for_as({txid}, 0)",
        f"SELECT tique.record_cts_as({txid}, 0)",
        f"SELECT tique.publish_own_as({txid}, 0)",
        f"SELECT tique.begin_txn_as({txid}, 60000, 0)",
    ):
        assert "privilege" in refused(bob, unchecked).lower(), unchecked
    assert int(one(bob, f"SELECT tique.end_txn({txid})")) == 0  # another's snapshot pin is left alone
    bobs = int(one(bob, f"SELECT tique.begin_txn({txid}, 60000)"))  # ends bob's previous one only
    assert bobs != txid
    assert int(one(bob, f"SELECT tique.cts_state({cts})")) == TAKEN
    assert int(one(bob, f"SELECT tique.verdict({cts})")) == -1
    assert int(one(alice, f"SELECT tique.snapshot_of({txid})")) >= 0  # alice's pin survived

    # alice's own commit runs as her driver runs it
    assert int(one(alice, f"SELECT tique.renew({txid}, 60000)")) == 1
    alice.cursor().execute(f"SELECT tique.publish({cts}, 5000)")
    alice.cursor().execute(f"CALL tique.put_outcome({txid}, {cts}, 1)")
    alice.cursor().execute(f"SELECT tique.advance_settled({cts}, 5000), tique.end_txn({txid})")
    assert one(alice, f"SELECT ok FROM tique.outcomes WHERE txid = {txid}") is True
    alice.close()
    bob.close()


def test_another_user_cannot_act_for_the_admins_transaction(served: ServeProcess) -> None:
    """The admin's driver runs its own transactions with the unchecked calls (no session lookup): they are bound to
    the admin, so an ordinary user is refused just the same."""
    admin = pymonetdb.connect(
        database=served.directory.name,
        hostname="127.0.0.1",
        port=served.port,
        username="monetdb",
        password=served.password,
        autocommit=True,
    )
    bob = raw_session(served, "bob")
    txid = int(one(admin, "SELECT tique.begin_txn_as(0, 60000, 0)"))
    cts = int(one(admin, f"SELECT tique.next_cts_for_as({txid}, 0)"))
    for attack in (
        f"SELECT tique.next_cts_for({txid})",
        f"SELECT tique.record_cts({txid})",
        f"SELECT tique.publish_own({txid})",
        f"SELECT tique.publish({cts}, 100)",
        f"CALL tique.put_outcome({txid}, {cts}, 1)",
        f"CALL tique.close_outcome({txid}, {cts})",
        f"SELECT tique.renew({txid}, 600000)",
    ):
        assert "belongs to another session" in refused(bob, attack), attack
    assert int(one(bob, f"SELECT tique.end_txn({txid})")) == 0
    assert int(one(bob, f"SELECT tique.cts_state({cts})")) == TAKEN
    admin.cursor().execute(f"SELECT tique.publish_as({cts}, 5000, 0)")
    admin.cursor().execute(f"INSERT INTO tique.outcomes SELECT {txid}, tique.decide({cts}, 0), FALSE")
    admin.cursor().execute(f"SELECT tique.advance({cts}, 5000), tique.end_txn_as({txid}, 0)")
    admin.close()
    bob.close()


def test_owners_commit_through_tique_while_others_watch(served: ServeProcess) -> None:
    url = served.url.replace(f"monetdb:{served.password}@", "{user}:{user}%20pw@")
    alice = tique.connect(url.format(user="alice"))
    bob = tique.connect(url.format(user="bob"))
    alice.cursor().execute("UPDATE shared SET v = v + 1 WHERE k = 1")
    bob.cursor().execute("UPDATE shared SET v = v + 1 WHERE k = 2")
    alice.commit()
    bob.commit()
    cur = alice.cursor()
    cur.execute("SELECT k, v FROM shared ORDER BY k")
    assert cur.fetchall() == [(1, 11), (2, 21)]
    alice.close()
    bob.close()
