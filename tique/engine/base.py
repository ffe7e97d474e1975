"""The interface every engine adapter offers: raw connections that run SQL text and return whole results."""

from __future__ import annotations

import bisect
import contextlib
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from tique.errors import SerializationFailure, lost_to_concurrency

T = TypeVar("T")

# Statements after which MonetDB may have dropped every prepared statement of the session without an error,
# measured on 11.41: its own CREATE, DROP, ALTER, COMMENT, GRANT and SET (of the optimizer, the schema), and
# DEALLOCATE ALL; not other sessions' DDL, nor TRUNCATE, ANALYZE, CALL or COPY.
_DROPPING_HEADS = ("CREATE", "DROP", "ALTER", "GRANT", "REVOKE", "COMMENT", "DEALLOCATE", "SET")


# a statement's head: after blanks (_HEAD_AT, past a comment; _LATER, past a ';'), one of the words (group 1 None)
# or a comment (group 1), whose end is found by _later_head (a ';' inside a string literal makes a false match,
# which only costs preparing again)
_HEADS = "|".join(_DROPPING_HEADS)
_HEAD_AT = re.compile(r"\s*(?:(?:" + _HEADS + r")|(/\*|--))", re.IGNORECASE)
_LATER = re.compile(";" + _HEAD_AT.pattern, re.IGNORECASE)


def drops_prepared(sql: str) -> bool:
    """Does a statement of ``sql`` (it may hold several) begin with one of _DROPPING_HEADS? The later statements'
    heads are searched in a long text only when one of the words is in it at all: a 1.4 MB INSERT with 300,000
    ';' in its string literals took 220 ms split at each ';', 8 ms so (a 2.6 kB flush: 14-15 us either way). The
    text may hold a user's string literals: its time stays linear in its length whatever they hold (one pattern
    over the comments after a ';' took 2^k steps on k comments)."""
    if _head(sql).startswith(_DROPPING_HEADS):
        return True
    if len(sql) > 65536:
        upper = sql.upper()
        if not any(word in upper for word in _DROPPING_HEADS):
            return False
    return _later_head(sql)


def _later_head(sql: str) -> bool:
    """Does a ';' of ``sql`` have one of the words after it, past blanks and comments (``/* ... */`` ending at its
    first ``*/``, ``-- ...`` at its line's end, as MonetDB's scanner reads them)? Each comment is skipped once,
    its end found by bisection, so no text of comments and ';' costs more than linear time."""
    ends: dict[str, list[int]] = {}
    skipped: set[int] = set()  # comments after which no word came
    for found in _LATER.finditer(sql):
        if found.group(1) is None:
            return True
        at = found.start(1)
        while at not in skipped:
            skipped.add(at)
            closing = "*/" if sql.startswith("/*", at) else "\n"
            if closing not in ends:
                ends[closing] = [m.start() for m in re.finditer(re.escape(closing), sql)]
            k = bisect.bisect_left(ends[closing], at + 2)
            if k == len(ends[closing]):
                break  # a comment to the end of the text
            after = _HEAD_AT.match(sql, ends[closing][k] + len(closing))
            if after is None:
                break
            if after.group(1) is None:
                return True
            at = after.start(1)
    return False


def _head(statement: str) -> str:
    """The first word of a statement, upper case, past the comments before it (``/* ... */``, ``-- ...``)."""
    text = statement.lstrip()
    while text.startswith(("/*", "--")):
        end = text.find("*/", 2) + 2 if text.startswith("/*") else text.find("\n") + 1
        if end <= 1:
            return ""  # a comment to the end
        text = text[end:].lstrip()
    return text[:10].upper()


@dataclass(frozen=True)
class Column:
    """One result column: its name and MonetDB type name (``int``, ``varchar``, ``decimal``...)."""

    name: str
    type_code: str
    precision: int | None = None
    scale: int | None = None


@dataclass
class Result:
    """A statement's outcome: rows (possibly none) and the number of rows it changed or returned."""

    columns: list[Column] = field(default_factory=list)
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    rowcount: int = -1
    prepared_id: int | None = None  # the id a PREPARE got, when the adapter can tell
    ddl_txids: tuple[int, ...] = ()  # the commit records of a versioned DDL (tique/ddl.py) this statement ran

    def scalar(self) -> Any:
        """The first value of the first row; a statement expected to return one value."""
        return self.rows[0][0]


class RawConnection(Protocol):
    """A connection to MonetDB in autocommit mode: every statement is its own MonetDB transaction."""

    def execute(self, sql: str) -> Result:
        """Run one SQL statement. (The embedded kernel runs only the first statement of a text holding several
        and drops the rest silently: send several through execute_atomically.)"""
        ...

    def execute_atomically(self, statements: Sequence[str]) -> None:
        """Run writing statements as one MonetDB transaction, all or none, discarding their results: between START
        TRANSACTION and COMMIT, over MAPI in one text (one round trip), embedded in one call to the kernel's
        thread. On an error nothing of them stays and the session is in autocommit again; on a session left
        inside a transaction it fails (and ends that one) rather than join it."""
        ...

    def close(self) -> None: ...

    @property
    def closed(self) -> bool: ...


class Engine(Protocol):
    """A MonetDB database reached one way: embedded in this process or over MAPI."""

    kind: str

    def connect(self) -> RawConnection: ...

    def close(self) -> None: ...

    def describe(self) -> str:
        """Where this engine is, for messages (never shows a password)."""
        ...


def in_one_transaction(execute: Callable[[str], Any], statements: Sequence[str]) -> None:
    """Run ``statements`` through ``execute`` inside START TRANSACTION ... COMMIT, rolled back on any failure."""
    try:
        # fails inside a transaction some statement left open: the ROLLBACK ends that one too, rather than leave
        # the session in it (aborted, every later statement refused)
        execute("START TRANSACTION")
        for sql in statements:
            execute(sql)
        execute("COMMIT")
    except BaseException:
        try:
            execute("ROLLBACK")  # after a failed COMMIT the session is back in autocommit already
        except Exception:
            pass
        raise


@contextlib.contextmanager
def one_transaction(conn: RawConnection) -> Iterator[None]:
    """The block's statements on ``conn`` as one engine transaction: all of them take effect or none, also when
    the process dies half way (a DDL's steps on Storage, Cache, the view T and tique.tables must agree). Rolled back
    on any failure."""
    conn.execute("START TRANSACTION")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        try:
            conn.execute("ROLLBACK")  # after a failed COMMIT the session is back in autocommit already
        except Exception:
            pass
        raise


def retried_on_conflict(
    run: Callable[[], T], what: str, tries: int = 20, judge: Callable[[Exception], None] | None = None
) -> T:
    """``run()`` (an engine transaction that is all or nothing) again while MonetDB refuses it for a concurrent
    change of a table it touches (errors.lost_to_concurrency), with a growing pause; then a SerializationFailure that
    says nothing changed. ``judge`` sees every refusal before the retry and may raise instead: MonetDB reports a
    log write that failed for want of space in the same words, and a retry that then succeeds would be acknowledged
    by an engine that may not keep it (storage.py)."""
    for attempt in range(tries):
        try:
            return run()
        except Exception as exc:
            if not lost_to_concurrency(exc):
                raise
            if judge is not None:
                judge(exc)
            if attempt == tries - 1:
                raise SerializationFailure(
                    f"{what} lost to concurrent changes of the tables it touches {tries} times and changed nothing "
                    f"(last: {exc}); run it again when fewer sessions write them",
                    "40001",
                ) from exc
            time.sleep(0.005 * (attempt + 1))
    raise AssertionError("unreachable")
