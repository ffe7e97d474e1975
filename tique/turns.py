"""Reads of string columns kept apart from appends across every session of a kernel, in the C module.

MonetDB 11.41 may move a string column's heap while another session's statement reads it: the read returns ``''``
or another row's string (README, "Known engine limits"; measured over MAPI too: a reader of two fixed rows beside
a plain pymonetdb writer read ``''`` in 2 of 3 eight-second runs). ``append_guard.py`` keeps the reads and appends
of the process that opened the kernel apart; the MAPI clients of ``tique serve`` run their statements in the
server's kernel, where no Python of theirs runs. So their turns are taken inside the engine (C ``tique.turn``,
tique/udf/tique_udf.c), with the same rule as the process's guard: a read waits for the appends of its tables
that came before it, an append for such reads, first come first served.

A MAPI client's turn goes in the same request as its statement: ``SELECT tique.turn(...); <statement>; SELECT
tique.turn_end(...)`` - no extra round trip. When the statement fails, the server refuses the rest of the request:
the client ends the turn itself. (It refuses it only up to a START TRANSACTION: a turn of a text that opens its own
transaction is taken inside it, see ``folded``.) A client gone mid-request (killed, or its socket closed while the
reply was being written: the server then skips the rest of the request too) ends no turn: a request waiting for it
ends it within about a second once the session's server thread is gone, and any running request lapses
TURN_LEASE_MS after its statement started. Only running requests lapse: a waiting one's server thread will run
it. ``tique serve``'s own process (its checkpointer) takes the same turns by calling the C functions directly
(``KernelTurns``).

A request's tables are the bits of a 64-bit mask (a name's hash picks its bit): two tables sharing a bit only
wait for each other in vain.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import secrets
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")

# A MAPI client's turn lapses this long after its statement started if nobody ends it (its client and session are
# gone, or the session is stuck): a read that runs longer may then meet an append again.
TURN_LEASE_MS = 60_000
# names the last result of a request holding a turn: a name no statement of a user's carries (a user's column named
# tq_turn_end was taken for the turn's end and its rows dropped)
TURN_END_ALIAS = f"tq_turn_end_{secrets.token_hex(8)}"


def mask_of(names: Iterable[str]) -> int:
    """One bit of 63 per table part (storage_of / cache_of names of append_guard.py)."""
    mask = 0
    for name in names:
        digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
        mask |= 1 << (int.from_bytes(digest, "little") % 63)
    return mask


def new_owner() -> int:
    """A MAPI connection's owner id in the C module (its requests; never 0, never a thread id's range)."""
    return (int.from_bytes(os.urandom(8), "little") >> 2) | (1 << 61)


class EngineTurns:
    """The append guard of a MAPI engine: ``reading`` and ``appending`` mark the statements the calling thread
    sends meanwhile, on any connection of the engine, to go with a turn (ServerConnection.execute folds it in)."""

    def __init__(self) -> None:
        self._local = threading.local()
        self.enabled = os.environ.get("TIQUE_APPEND_GUARD", "1") != "0"

    def pending(self) -> tuple[bool, int] | None:
        """The turn the calling thread's next statement takes: (appends, mask), or None."""
        stack: list[tuple[bool, int]] = getattr(self._local, "stack", [])
        if not stack or not self.enabled:
            return None
        return any(a for a, _ in stack), mask_of_union(m for _, m in stack)

    @contextmanager
    def _marked(self, appends: bool, names: Iterable[str]) -> Iterator[None]:
        stack = self._local.__dict__.setdefault("stack", [])
        stack.append((appends, mask_of(names)))
        try:
            yield
        finally:
            stack.pop()

    def reading(self, tables: Iterable[str], run: Callable[[], T]) -> T:
        names = list(tables)
        if not names:
            return run()
        with self._marked(False, names):
            return run()

    @contextmanager
    def appending(self, tables: Iterable[str]) -> Iterator[None]:
        with self._marked(True, list(tables)):
            yield


def mask_of_union(masks: Iterable[int]) -> int:
    out = 0
    for mask in masks:
        out |= mask
    return out


_OPENS_TRANSACTION = re.compile(r"\s*START\s+TRANSACTION\s*$", re.I)


def folded(sql: str, appends: bool, mask: int, owner: int) -> str:
    """``sql`` with its turn taken before and ended after, in one request."""
    body = sql.strip().rstrip(";")
    take = f"SELECT tique.turn({int(appends)}, {mask}, {owner}, {TURN_LEASE_MS})"
    end = f"SELECT tique.turn_end({owner}, 0) AS {TURN_END_ALIAS}"
    opening, sep, rest = body.partition(";")
    if sep and _OPENS_TRANSACTION.match(opening):
        # Inside the transaction: after a failed turn MonetDB refuses the rest of an autocommit request only up to a
        # START TRANSACTION, which it runs, and the transaction after it, whole. There a failed turn aborts the
        # transaction, so that its COMMIT rolls back: its writes never run without their turn
        return f"{opening};\n{take};\n{rest.lstrip()};\n{end}"
    return f"{take};\n{body};\n{end}"


def turn_end_sql(owner: int) -> str:
    return f"SELECT tique.turn_end({owner}, 0) AS {TURN_END_ALIAS}"


class KernelTurns:
    """The same turns taken by a thread of the process that loaded the C module (``tique serve``'s checkpointer),
    through its C functions: the thread's id is the owner, and a request it makes while it holds another is
    nested (waits only for other owners' running requests)."""

    def __init__(self, module: Any) -> None:
        self._take = module.tique_turn_local  # requests that never lapse (the SQL function's always do)
        self._end = module.tique_turn_end
        self._take.restype = ctypes.c_void_p  # NULL, or a MonetDB exception string (never for these arguments)
        self._end.restype = ctypes.c_void_p

    def take(self, appends: bool, names: Iterable[str]) -> int:
        ticket = ctypes.c_int64(0)
        self._take(
            ctypes.byref(ticket),
            ctypes.byref(ctypes.c_int(int(appends))),
            ctypes.byref(ctypes.c_int64(mask_of(names))),
            ctypes.byref(ctypes.c_int64(threading.get_ident())),
        )
        return ticket.value

    def end(self, ticket: int) -> None:
        ended = ctypes.c_int(0)
        self._end(
            ctypes.byref(ended),
            ctypes.byref(ctypes.c_int64(threading.get_ident())),
            ctypes.byref(ctypes.c_int64(ticket)),
        )
