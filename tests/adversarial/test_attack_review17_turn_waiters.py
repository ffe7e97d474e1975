"""Review 17, the turns in the C module (tique/udf/tique_udf.c turn_take): a waiter looks for running requests
whose session thread is gone (a client killed while its reply was written never ends its turn) only when its
timed wait of a second runs out with nothing happening. Every other request's end (and, since 9d71c6d, every
client's next turn that ends its earlier one) broadcasts: on a server where other tables' turns begin and end more
often than once a second, no waiter ever times out, and the gone client's turn holds the tables it named for its
whole lease (60 s), not "about a second" (tique/turns.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from tique.engine.base import RawConnection


def test_a_gone_clients_turn_ends_within_seconds_while_other_tables_take_turns(
    raws: Callable[[], RawConnection],
) -> None:
    gone = raws()
    gone.execute("SELECT tique.turn(0, 1, 17001, 60000)")  # a running read of table bit 1
    gone.close()  # its client is gone: the turn's end never comes

    stop = threading.Event()
    busy = raws()

    def other_tables() -> None:  # reads of another table, one after another (each end broadcasts)
        while not stop.is_set():
            busy.execute("SELECT tique.turn(0, 4, 17002, 60000)")
            busy.execute("SELECT tique.turn_end(17002, 0)")

    churn = threading.Thread(target=other_tables, daemon=True)
    churn.start()
    appender = raws()
    granted = threading.Event()

    def append() -> None:
        appender.execute("SELECT tique.turn(1, 1, 17003, 60000)")
        granted.set()

    threading.Thread(target=append, daemon=True).start()
    started = time.monotonic()
    ok = granted.wait(5.0)
    waited = time.monotonic() - started
    stop.set()
    churn.join(5)
    if not ok:  # free the appender (and the fixture's teardown) without waiting for the lease
        raws().execute("SELECT tique.turn_end(17001, 0)")
        granted.wait(10)
    appender.execute("SELECT tique.turn_end(17003, 0)")
    assert ok, f"an append waited {waited:.1f} s (up to the 60 s lease) for the turn of a client that was gone"
