"""Turns in the C module (tique/turns.py): a read of a table's strings never runs beside an append to it, across
the MAPI clients of ``tique serve`` and the server's own process. The engine race they prevent is measured by
benchmarks/string_race.py (forms ``mapi`` and ``mapi_turns``; tests/test_smoke_scripts.py runs it small)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import tique
from tests.conftest import ServeProcess
from tique.database import Database
from tique.engine import udf
from tique.engine.base import RawConnection
from tique.turns import KernelTurns, mask_of

EVERY_TABLE = (1 << 63) - 1  # a mask that shares a bit with every table's


class Call:
    """A statement run in a thread of its own; ``done`` once it returned."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.result: Any = None
        self.error: BaseException | None = None
        self.finished = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[[], Any]) -> None:
        try:
            self.result = fn()
        except BaseException as exc:
            self.error = exc
        finally:
            self.finished.set()

    def done(self, within: float = 10.0) -> bool:
        return self.finished.wait(within)


def take(conn: RawConnection, appends: int, mask: int, owner: int, lease_ms: int = 60_000) -> int:
    return int(conn.execute(f"SELECT tique.turn({appends}, {mask}, {owner}, {lease_ms})").scalar())


def end(conn: RawConnection, owner: int) -> int:
    return int(conn.execute(f"SELECT tique.turn_end({owner}, 0)").scalar())


def test_an_append_waits_for_a_running_read_of_its_tables_only(raws: Callable[[], RawConnection]) -> None:
    reader, writer, other, second_reader = raws(), raws(), raws(), raws()
    take(reader, 0, 0b1000, owner=11)
    assert take(second_reader, 0, 0b1000, owner=12)  # reads run together
    end(second_reader, 12)
    assert take(other, 1, 0b0100, owner=13)  # an append of other tables runs at once
    end(other, 13)
    blocked = Call(lambda: take(writer, 1, 0b1100, owner=14))
    assert not blocked.done(0.5), "an append ran beside a read of its table"
    assert end(reader, 11) == 1
    assert blocked.done() and blocked.error is None
    end(writer, 14)


def test_turns_go_first_come_first_served(raws: Callable[[], RawConnection]) -> None:
    first, writer, late = raws(), raws(), raws()
    take(first, 0, 1, owner=21)
    append = Call(lambda: take(writer, 1, 1, owner=22))
    time.sleep(0.3)
    read = Call(lambda: take(late, 0, 1, owner=23))
    assert not read.done(0.5), "a read overtook an append that came before it (appends could starve)"
    end(first, 21)
    assert append.done() and not read.done(0.3)
    end(writer, 22)
    assert read.done() and read.error is None
    end(late, 23)


def test_a_turn_nobody_ends_lapses_after_its_lease(raws: Callable[[], RawConnection]) -> None:
    gone, writer = raws(), raws()
    take(gone, 0, 1, owner=31, lease_ms=400)  # its client died, and its statement failed: nobody ends it
    started = time.monotonic()
    take(writer, 1, 1, owner=32)
    assert 0.2 < time.monotonic() - started < 5
    end(writer, 32)


def test_a_clients_next_turn_ends_its_earlier_one(raws: Callable[[], RawConnection]) -> None:
    conn, writer = raws(), raws()
    take(conn, 0, 1, owner=41)  # its end was lost with a failed statement
    take(conn, 0, 2, owner=41)  # a MAPI client runs one statement at a time: the first is over
    assert take(writer, 1, 1, owner=42)
    end(writer, 42)
    end(conn, 41)


def test_a_clients_next_turn_lets_who_waited_for_its_earlier_one_run_at_once(
    raws: Callable[[], RawConnection],
) -> None:
    conn, writer = raws(), raws()
    take(conn, 0, 1, owner=43)  # its end was lost with a failed statement
    append = Call(lambda: take(writer, 1, 1, owner=44))
    assert not append.done(0.1)
    take(conn, 0, 2, owner=43)  # ends the first: the append must not sleep on until its waits time out (1 s)
    assert append.done(0.5) and append.error is None, "a waiter was not woken when its blocker ended"
    end(writer, 44)
    end(conn, 43)


def test_a_tique_read_over_mapi_waits_for_an_append_and_reads_right(
    served: ServeProcess, raws: Callable[[], RawConnection]
) -> None:
    with tique.connect(served.url) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE turn_read (k INT PRIMARY KEY, s VARCHAR(20))")
        cur.execute("INSERT INTO turn_read VALUES (1, 'one'), (2, 'two')")
        conn.commit()

        def read() -> list[Any]:
            cur.execute("SELECT s FROM turn_read WHERE k = 2")
            rows = cur.fetchall()
            conn.commit()
            return rows

        assert read() == [("two",)]
        holder = raws()
        take(holder, 1, EVERY_TABLE, owner=51)
        waiting = Call(read)
        assert not waiting.done(0.5), "a read of strings ran beside an append to its table"
        end(holder, 51)
        assert waiting.done() and waiting.error is None and waiting.result == [("two",)]


def test_a_tique_commit_over_mapi_waits_for_a_read_and_a_failed_read_ends_its_turn(
    served: ServeProcess, raws: Callable[[], RawConnection]
) -> None:
    with tique.connect(served.url) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE turn_write (k INT PRIMARY KEY, s VARCHAR(20))")
        conn.commit()
        holder = raws()
        take(holder, 0, EVERY_TABLE, owner=61)
        cur.execute("INSERT INTO turn_write VALUES (1, 'one')")  # buffered in the client
        committing = Call(conn.commit)  # its rows go to the Cache: an append
        assert not committing.done(0.5), "a commit appended strings beside a read of its table"
        end(holder, 61)
        assert committing.done() and committing.error is None
        with pytest.raises(tique.DatabaseError):
            cur.execute("SELECT s, 1 / (k - k) FROM turn_write")  # fails inside its turn
        conn.rollback()
        assert Call(lambda: take(holder, 1, EVERY_TABLE, owner=62)).done(5), "the failed read kept its turn"
        end(holder, 62)


def test_the_servers_own_process_takes_the_same_turns(embedded_url: str) -> None:
    """tique serve's checkpointer takes its turns by calling the C module (KernelTurns): a MAPI-style turn of
    another owner waits for them, in the same module."""
    Database.get(embedded_url)  # loads the module into this process
    assert udf._module is not None
    kernel = KernelTurns(udf._module)
    raw = Database.get(embedded_url).connect_raw()
    try:
        ticket = kernel.take(True, ["some table"])
        mask = mask_of(["some table"])
        read = Call(lambda: take(raw, 0, mask, owner=71))
        assert not read.done(0.5)
        kernel.end(ticket)
        assert read.done() and read.error is None
        end(raw, 71)
    finally:
        raw.close()


def test_a_statement_failing_inside_a_transaction_ends_its_turn_after_the_rollback(
    served: ServeProcess, raws: Callable[[], RawConnection]
) -> None:
    """The engine refuses every statement of an aborted transaction but ROLLBACK, the turn's end too: it is
    owed until then (found by CI: refused bulk loads over MAPI left turns that held readers for the lease)."""
    conn, other = raws(), raws()
    turns = conn.engine.turns  # type: ignore[attr-defined]
    conn.execute("CREATE TABLE turn_abort (k INT, s VARCHAR(10))")
    conn.execute("START TRANSACTION")
    with pytest.raises(tique.DatabaseError):
        turns.reading(["t"], lambda: conn.execute("SELECT s, 1 / (k - k) FROM turn_abort UNION ALL SELECT 'x', 1 / 0"))
    with turns.appending(["t"]):
        conn.execute("ROLLBACK")  # a ROLLBACK goes without a turn, even inside one: a turn would be refused first
    assert Call(lambda: take(other, 1, EVERY_TABLE, owner=81)).done(5), "the failed statement kept its turn"
    end(other, 81)
    assert conn.execute("SELECT COUNT(*) FROM turn_abort").scalar() == 0


def test_a_session_cannot_take_a_turn_that_never_lapses(raws: Callable[[], RawConnection]) -> None:
    """Only the kernel's own process takes turns without a lease (C tique_turn_local): over SQL a lease of 0 (or
    an owner of 0) is refused, and a longer lease than 60 s is cut to 60 s."""
    conn = raws()
    for lease, owner in ((0, 91), (60_000, 0)):
        with pytest.raises(tique.DatabaseError, match="lease > 0"):
            take(conn, 0, 1, owner=owner, lease_ms=lease)


def test_a_flush_whose_turn_is_refused_writes_nothing(served: ServeProcess, raws: Callable[[], RawConnection]) -> None:
    """A flush goes as one request, START TRANSACTION ... COMMIT, with its turn. After a failed statement MonetDB
    refuses the rest of an autocommit request only up to a START TRANSACTION, then runs that transaction whole:
    so the turn is taken inside it, and when it is refused (here: ended by another session while it waited) the
    rows and the commit record are rolled back, not written beside the read the append waited for."""
    with tique.connect(served.url) as conn:
        cur = conn.cursor()
        cur.execute("CREATE TABLE turn_refused (k INT PRIMARY KEY, s VARCHAR(20))")
        conn.commit()
        server = conn._raw.raw
        holder, other = raws(), raws()
        take(holder, 0, EVERY_TABLE, owner=111)
        cur.execute("INSERT INTO turn_refused VALUES (1, 'one')")
        committing = Call(conn.commit)
        assert not committing.done(0.5)
        assert end(other, server.owner) == 1  # the waiting request is ended: its turn is refused
        assert committing.done() and isinstance(committing.error, tique.DatabaseError)
        cache = 'tique_data."sys__turn_refused__cache"'
        assert other.execute(f"SELECT COUNT(*) FROM {cache}").scalar() == 0, "the flush ran without its turn"
        end(holder, 111)
        conn.rollback()
        cur.execute("INSERT INTO turn_refused VALUES (2, 'two')")
        conn.commit()
        cur.execute("SELECT k, s FROM turn_refused")
        assert cur.fetchall() == [(2, "two")]
        conn.commit()
