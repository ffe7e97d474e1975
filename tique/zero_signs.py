"""Statements that write a floating-point -0.0 run on a pipeline that keeps the sign of every zero.

MonetDB 11.41's ``constants`` optimizer (part of default_pipe, sequential_pipe and no_mitosis_pipe; not of
minimal_pipe or minimal_fast) merges a statement's equal constants, and it finds -0.0 equal to 0.0 (and to an
integer 0 the statement converts to a float): a statement holding both zeros of REAL or DOUBLE stores or returns
one sign for all of them, whatever literal form they take (measured: 324 of 1064 zero cells of random multi-row
INSERTs came back with the wrong sign on default_pipe, 0 on minimal_fast; ``EXEC`` arguments keep theirs too).
tique's multi-value writers join values of separate client statements or transactions (the flush of buffered
rows, the checkpointer's Storage writes, bulk loads, CREATE TABLE AS ... WITH DATA), and a statement rendered
with a client's parameters computes an UPDATE's new values in the engine. Each of them asks whether it writes a
-0.0 and, if so, runs inside ``zero_signs_kept``. Negative zeros are rare, so the pipeline switch (two round
trips, and the session's prepared statements, which MonetDB drops on a switch) is paid only then.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from tique.engine.base import RawConnection
from tique.errors import DatabaseError

KEEPING = frozenset({"minimal_pipe", "minimal_fast"})  # the pipelines without the constants optimizer
SAFE = "minimal_fast"
NEGATIVE_ZERO = "-0.0e0"  # tique.params.literal(-0.0): how a parameter's -0.0 reaches a statement's text


def negative_zero(values: Iterable[Any]) -> bool:
    """Is one of ``values`` a float -0.0?"""
    return any(isinstance(v, float) and v == 0.0 and math.copysign(1.0, v) < 0 for v in values)


@contextmanager
def zero_signs_kept(conn: RawConnection, needed: bool) -> Iterator[None]:
    """Run the block's statements on a pipeline that keeps zero signs when ``needed``, and put the session's
    pipeline back after them (an error of that switch back is dropped: the block's own outcome is the one to
    report, and the next statement that minds its pipeline sets it). A session that tracks its pipeline (a
    PreparingConnection) says which it is on; another is asked."""
    if not needed:
        yield
        return
    was = getattr(conn, "pipeline", None) or str(conn.execute("SELECT optimizer").scalar())
    if was in KEEPING:
        yield
        return
    conn.execute(f"SET optimizer = '{SAFE}'")
    try:
        yield
    finally:
        try:
            conn.execute(f"SET optimizer = '{was}'")
        except DatabaseError:
            pass
