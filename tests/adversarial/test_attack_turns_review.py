"""Attack: the engine turns of MAPI clients (tique/turns.py, tique/engine/server.py, C tique.turn / turn_end).

A read of a table's strings must never run beside an append to that table, across the sessions of ``tique serve``;
a turn must never be held past its statement (every conflicting session then waits for the lease), and folding the
turn into a statement's request must not change what the statement answers. Every wait is bounded: a hang fails
the test instead of hanging pytest.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from typing import Any

import pytest

import tique
from tests.conftest import ServeProcess
from tests.test_engine_turns import Call, end, take
from tique.engine.base import RawConnection
from tique.turns import TURN_LEASE_MS

EVERY_TABLE = (1 << 63) - 1


def test_a_select_whose_column_is_named_tq_turn_end_keeps_its_result(served: ServeProcess) -> None:
    """server.py _execute_in_turn took a result whose only column was named tq_turn_end for the turn's end, and
    dropped it: the user's own SELECT lost its rows. The turn's end is named with a per-process nonce now."""
    with tique.connect(served.url) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE alias_turn (k INT PRIMARY KEY, s VARCHAR(20))")
        cur.execute("INSERT INTO alias_turn VALUES (1, 'one'), (2, 'two')")
        conn.commit()
        cur.execute("SELECT s AS tq_turn_end FROM alias_turn ORDER BY k")
        assert cur.description is not None, "the statement's result was taken for the turn's end"
        assert cur.fetchall() == [("one",), ("two",)]


def test_a_users_unknown_function_named_turn_does_not_switch_turns_off(
    served: ServeProcess, raws: Callable[[], RawConnection]
) -> None:
    """_MODULE_MISSING matched MonetDB's words for any unknown function called turn (the schema was optional), so a
    user's statement calling one switched the engine's turns off for every connection of the process."""
    with tique.connect(served.url) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE fn_turn (k INT PRIMARY KEY, s VARCHAR(20))")
        cur.execute("INSERT INTO fn_turn VALUES (1, 'one'), (2, 'two')")
        conn.commit()
        with pytest.raises(tique.DatabaseError):
            cur.execute("SELECT turn(s, 1, 2, 3) FROM fn_turn")  # the user's mistake: no such function
        conn.rollback()

        def read() -> list[Any]:
            cur.execute("SELECT s FROM fn_turn WHERE k = 2 AND s <> 'x'")
            rows = cur.fetchall()
            conn.commit()
            return rows

        holder = raws()
        take(holder, 1, EVERY_TABLE, owner=0x3A01)  # another session appends to every table
        try:
            waiting = Call(read)
            assert not waiting.done(1.0), "a read of strings ran beside an append: turns were switched off"
        finally:
            end(holder, 0x3A01)
        assert waiting.done() and waiting.error is None


def test_a_request_waiting_longer_than_its_lease_never_runs_beside_a_running_append(
    raws: Callable[[], RawConnection],
) -> None:
    """C turn_take gave a request its lease when it was queued, and turn_expire removed it while it still waited;
    turn_blocked then found no request and let it run, beside the append it waited for. Only running requests lapse
    now. Short leases stand for TURN_LEASE_MS here; test_..._with_the_drivers_lease runs the driver's own."""
    first, writer, reader = raws(), raws(), raws()
    take(first, 0, 1, owner=0x3B01)  # a long read runs
    append = Call(lambda: take(writer, 1, 1, owner=0x3B02))  # an append waits for it
    time.sleep(0.3)
    read = Call(lambda: take(reader, 0, 1, owner=0x3B03, lease_ms=2000))  # a read waits for the append
    time.sleep(0.5)
    end(first, 0x3B01)
    try:
        assert append.done(5) and append.error is None
        assert not read.done(4), "a read got its turn while the append it waited for was running"
    finally:
        end(writer, 0x3B02)
        read.done(5)
        end(reader, 0x3B03)


@pytest.mark.skipif(os.environ.get("TIQUE_TEST_LONG") != "1", reason="takes 65 s: make test-long")
def test_a_request_waiting_longer_than_its_lease_never_runs_beside_a_running_append_with_the_drivers_lease(
    raws: Callable[[], RawConnection],
) -> None:
    """The same with TURN_LEASE_MS for every request, as the driver sends them: a read queued behind an append
    that itself waited for a long read gets its turn 60 s after it came, while the append still runs."""
    first, writer, reader = raws(), raws(), raws()
    take(first, 0, 1, owner=0x3C01)
    append = Call(lambda: take(writer, 1, 1, owner=0x3C02))
    time.sleep(0.3)
    read = Call(lambda: take(reader, 0, 1, owner=0x3C03))
    time.sleep(6)  # the first read ran 6 s: the append's lease now ends 6 s after the waiting read's
    end(first, 0x3C01)
    try:
        assert append.done(5) and append.error is None
        assert not read.done(TURN_LEASE_MS / 1000 - 3), "a read got its turn while the append was running"
    finally:
        end(writer, 0x3C02)
        read.done(5)
        end(reader, 0x3C03)


KILLED_CLIENT = textwrap.dedent(
    """
    import sys, time, pymonetdb
    from tique.turns import folded
    port, database, owner = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    c = pymonetdb.connect(database=database, hostname="127.0.0.1", port=port, username="monetdb",
                          password="monetdb", autocommit=True)
    c.replysize = -1
    # a read of 200k strings, folded with its turn as ServerConnection.execute sends it; the reply (~45 MB) is
    # more than the socket holds, so the server is still writing it when the client dies
    big = "SELECT CAST(value AS VARCHAR(20)) || REPEAT('x', 200) AS s FROM sys.generate_series(0, 200000)"
    c.mapi._putblock("s" + folded(big, False, 4, owner) + "\\n;")
    print("sent", flush=True)
    time.sleep(600)
    """
)


def test_a_client_killed_while_its_reply_is_written_ends_its_turn(
    served: ServeProcess, raws: Callable[[], RawConnection]
) -> None:
    """A client killed while the server still writes its statement's reply: the write fails, the session ends, and
    the turn's end that followed never runs; every append to the table waited for the 60 s lease (so did a client
    interrupted (KeyboardInterrupt) mid-reply: ServerConnection._abandon closes the socket the same way). Now a
    waiter ends a running request whose session thread is gone, within about a second."""
    owner = 0x3D01
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_CLIENT, str(served.port), served.directory.name, str(owner)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "sent"
    time.sleep(2)  # the statement ran; its reply is being written
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    writer, cleaner = raws(), raws()
    append = Call(lambda: take(writer, 1, 4, owner=0x3D02))
    try:
        assert append.done(15), "the killed client's turn is held until its lease: appends to its table wait"
    finally:
        end(cleaner, owner)
        append.done(5)
        end(writer, 0x3D02)


def free_within(raw: RawConnection, owner: int, within: float = 5.0) -> bool:
    """Can another session take an append and then a read of every table within ``within`` seconds?"""
    for appends in (1, 0):
        call = Call(lambda a=appends: take(raw, a, EVERY_TABLE, owner=owner))
        if not call.done(within):
            end(raw.engine.connect(), owner)  # type: ignore[attr-defined]
            return False
        end(raw, owner)
    return True


def test_failed_statements_of_every_kind_leave_no_turn_behind(
    served: ServeProcess, raws: Callable[[], RawConnection], tmp_path: Any
) -> None:
    probe = raws()
    with tique.connect(served.url) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE leak_t (k INT PRIMARY KEY, s VARCHAR(20))")
        cur.execute("CREATE TABLE leak_u (k INT PRIMARY KEY, s VARCHAR(20) UNIQUE)")
        conn.commit()
        conn.bulk_load("leak_t", [(i, f"s{i}") for i in range(50)])
        cur.execute("INSERT INTO leak_t VALUES (100, 'x')")
        conn.commit()
        failures: list[tuple[str, Callable[[], Any]]] = [
            ("engine error in a read", lambda: cur.execute("SELECT s, 1 / (k - k) FROM leak_t")),
            (
                "engine error in a prepared read (EXEC)",
                lambda: [
                    cur.execute("SELECT s FROM leak_t WHERE k > %s AND 1 / (k - %s) > 0", (0, v))
                    for v in (-1, -2, -3, 5)
                ],
            ),
            ("bulk load of a key held in Storage", lambda: conn.bulk_load("leak_t", [(1, "dup")])),
            ("bulk load of a key with a Cache version", lambda: conn.bulk_load("leak_t", [(100, "dup")])),
            ("bulk load with a duplicate inside", lambda: conn.bulk_load("leak_u", [(1, "a"), (2, "a")])),
            (
                "UNIQUE violation at insert",
                lambda: [
                    cur.execute("INSERT INTO leak_u VALUES (10, 'z')"),
                    conn.commit(),
                    cur.execute("INSERT INTO leak_u VALUES (11, 'z')"),
                ],
            ),
            (
                "executemany failing midway",
                lambda: cur.executemany("INSERT INTO leak_t VALUES (%s, %s)", [(200, "a"), (201, "b"), (200, "c")]),
            ),
            (
                "string too long",
                lambda: [cur.execute("INSERT INTO leak_t VALUES (300, %s)", ("y" * 50,)), conn.commit()],
            ),
        ]
        bad_csv = tmp_path / "bad.csv"
        bad_csv.write_text("400,ok\nnot-a-number,bad\n")
        failures.append(("bulk_load_csv with a bad value", lambda: conn.bulk_load_csv("leak_t", str(bad_csv))))
        leaked = []
        for i, (what, fail) in enumerate(failures):
            try:
                fail()
            except tique.Error:
                pass
            try:
                conn.rollback()
            except tique.Error:
                pass
            if not free_within(probe, 0x3E00 + i):
                leaked.append(what)
        assert not leaked, f"turns held after: {leaked}"
        cur.execute("SELECT s FROM leak_t WHERE k = 1")  # still answers
        assert cur.fetchall() == [("s1",)]
