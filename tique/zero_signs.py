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

MonetDB 11.41 also reuses the slots of deleted rows, and of rows a rolled-back transaction appended, for new
rows, writing a value there only if it compares unequal to the slot's old one: a zero of either sign landing on a
zero of the other keeps the old sign (measured: a DELETE, or a ROLLBACK, then an INSERT, each sign either way).
tique deletes rows as a matter of course (the checkpointer's Cache clean and Storage key deletes), so a write of a
REAL or DOUBLE zero counts the zeros that came out with the other sign (``zeros_wrong``). A flush then sends those
versions again, as a later statement's, which outrank the first copies (Transaction.zero_signs_checked); the
checkpointer writes Storage's again in place (``zeros_set_again``: an UPDATE in a later engine transaction writes
whatever it is given; inside the INSERT's own it does not, measured: that transaction writes the slot once). The
Cache is not updated: an UPDATE there, beside other sessions appending and reading, left readers an update delta
that MonetDB failed to merge now and then ('BATappend_or_update: update BATs not the same size').

A bulk load appends its rows from a staging table and checks them against it in its own engine transaction
(``zeros_copied``), so no reader ever sees a loaded zero with the slot's sign. There an UPDATE of a zero to the
other zero is skipped as the append was, but one to a non-zero value is not, nor one from it back to the zero
(measured), so each wrong zero goes through 1. Measured on 11.41: only a statement that appends a single row
(VALUES or SELECT) landed on a slot's zero; appends of several rows, and INSERT ... SELECT from a table, came out
right. The checks do not rely on that.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from tique.engine.base import RawConnection, retried_on_conflict
from tique.errors import DatabaseError, OperationalError
from tique.names import quote

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


# column -> (a condition for each row whose zero there is -0.0, whether some row's zero there is 0.0)
Zeros = dict[str, tuple[list[str], bool]]
ZeroRow = tuple[str, dict[str, bool]]  # a condition that selects a row, and its zeros: column -> negative?
ZERO_BATCH = 200  # rows a statement names one by one: MonetDB ran out of stack on a few thousand (a review)


def zero_checks(rows: list[ZeroRow], by_row: bool) -> list[tuple[str | None, Zeros]]:
    """``rows``' zeros as the statements that check (or write again) them: (a condition selecting the rows, or
    None for all the caller's; the zeros per column). A column whose zeros all have one sign needs no row's
    condition, so the rows need none unless ``by_row`` (an UPDATE must touch no other row); else they go
    ZERO_BATCH at a time."""
    signs: dict[str, set[bool]] = {}
    for _, zeros in rows:
        for name, negative in zeros.items():
            signs.setdefault(name, set()).add(negative)
    if not by_row and all(len(s) == 1 for s in signs.values()):
        return [(None, {name: ([], False) if True in s else ([], True) for name, s in signs.items()})]
    checks: list[tuple[str | None, Zeros]] = []
    for start in range(0, len(rows), ZERO_BATCH):
        chunk = rows[start : start + ZERO_BATCH]
        columns: Zeros = {}
        for match, zeros in chunk:
            for name, negative_here in zeros.items():
                negative, positive = columns.get(name, ([], False))
                if negative_here:
                    negative.append(match)
                columns[name] = (negative, positive or not negative_here)
        checks.append((" OR ".join(match for match, _ in chunk), columns))
    return checks


def narrowed(where: str, selected: str | None) -> str:
    """``where`` and a check's row conditions (zero_checks: None selects every row ``where`` does)."""
    return f"{where} AND ({selected})" if selected else where


def zeros_wrong(table: str, where: str, columns: Zeros) -> str:
    """A count of ``table``'s rows that ``where`` selects whose zero in one of ``columns`` has the wrong sign (the
    engine's text of a zero is '-0' or '0'), in one read-only statement. A column given no row conditions and no
    0.0 holds -0.0 in every selected zero."""
    wrong = []
    for name, (negative, positive) in columns.items():
        if negative and positive:
            expected = f"CASE WHEN {' OR '.join(negative)} THEN '-0' ELSE '0' END"
        else:
            expected = "'0'" if positive else "'-0'"
        wrong.append(_other_sign(name, expected))
    return f"SELECT COUNT(*) FROM {table} WHERE ({where}) AND ({' OR '.join(wrong)})"


def _other_sign(name: str, expected: str) -> str:
    """Column ``name`` holds a zero whose engine text is not ``expected`` (SQL: '-0' or '0', or a CASE of them)."""
    return f"({quote(name)} = 0 AND CAST({quote(name)} AS CLOB) <> {expected})"


def zeros_wrong_by_row(table: str, where: str, rows: list[ZeroRow]) -> str:
    """One read-only statement: for each of ``rows`` (at most ZERO_BATCH), how many of ``table``'s rows that
    ``where`` and the row's own condition select hold one of its zeros with the wrong sign."""
    sums = []
    for match, zeros in rows:
        wrong = " OR ".join(_other_sign(name, "'-0'" if negative else "'0'") for name, negative in zeros.items())
        sums.append(f"SUM(CASE WHEN {match} AND ({wrong}) THEN 1 ELSE 0 END)")
    return f"SELECT {', '.join(sums)} FROM {table} WHERE {where}"


def zeros_set_again(table: str, where: str, columns: Zeros) -> str:
    """An UPDATE of ``table``'s rows that ``where`` selects, writing each zero of ``columns`` again with its sign.
    Run it in an engine transaction after the one that inserted the rows, under ``zero_signs_kept``."""
    sets, zeros = [], []
    for name, (negative, positive) in columns.items():
        column = quote(name)
        cases = []
        if negative:
            cases.append(f"WHEN {column} = 0 AND ({' OR '.join(negative)}) THEN {NEGATIVE_ZERO}")
        cases.append(f"WHEN {column} = 0 THEN {'0.0e0' if positive else NEGATIVE_ZERO}")
        sets.append(f"{column} = CASE {' '.join(cases)} ELSE {column} END")
        zeros.append(f"{column} = 0")
    return f"UPDATE {table} SET {', '.join(sets)} WHERE ({where}) AND ({' OR '.join(zeros)})"


def zeros_in_place(conn: RawConnection, table: str, rows: list[ZeroRow], where: str) -> bool:
    """Rows of ``table`` just inserted (see ZeroRow): those whose zero came out with the other sign are written
    again in place (the checkpointer's Storage, which only it writes; a transaction's own Cache versions as a last
    resort: an UPDATE of a table others append to leaves their reads an update delta, and may lose to a
    concurrent DELETE there, so it runs again then). ``where``: a condition every statement carries. True when
    some were."""
    again = False
    for selected, columns in zero_checks(rows, by_row=True):
        selected = narrowed(where, selected)
        if int(conn.execute(zeros_wrong(table, selected, columns)).scalar()):
            update = zeros_set_again(table, selected, columns)
            with zero_signs_kept(conn, True):
                retried_on_conflict(lambda sql=update: conn.execute(sql), f"writing the zeros of {table} again")
            again = True
    return again


def zeros_copied(conn: RawConnection, table: str, source: str, on: Sequence[str], columns: Sequence[str]) -> bool:
    """Rows appended to ``table`` from ``source`` in the running engine transaction (matched on columns ``on``):
    each zero of ``columns`` whose sign differs from the source's is written again, before the transaction
    commits (see the module's docstring). True when some were; OperationalError if one stays wrong."""
    if not columns:
        return False
    match = " AND ".join(f"s.{quote(c)} = d.{quote(c)}" for c in on)

    def wrong(name: str) -> str:
        column = quote(name)
        return f"s.{column} = 0 AND CAST(d.{column} AS CLOB) <> CAST(s.{column} AS CLOB)"

    check = (
        f"SELECT COUNT(*) FROM {table} AS d, {source} AS s WHERE {match} AND "
        f"({' OR '.join(f'({wrong(c)})' for c in columns)})"
    )
    if not int(conn.execute(check).scalar()):
        return False
    for name in columns:
        column = quote(name)
        where = f"EXISTS (SELECT 1 FROM {source} AS s WHERE {match} AND {wrong(name)})"
        conn.execute(f"UPDATE {table} AS d SET {column} = 1 WHERE {where}")
        conn.execute(
            f"UPDATE {table} AS d SET {column} = (SELECT s.{column} FROM {source} AS s WHERE {match}) "
            f"WHERE EXISTS (SELECT 1 FROM {source} AS s WHERE {match} AND s.{column} = 0 AND d.{column} <> 0)"
        )
    if int(conn.execute(check).scalar()):
        raise OperationalError(
            f"MonetDB kept writing a REAL or DOUBLE zero loaded into {table} with the sign of the row that was "
            "there before, after writing it again; nothing was loaded"
        )
    return True
