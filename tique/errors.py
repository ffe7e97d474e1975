"""PEP 249 exceptions, tique's own additions, and the mapping from MonetDB's error messages to them.

MonetDB reports errors as ``[Prefix:module:]SQLSTATE!message``; the SQLSTATE picks the class, and the message
is kept as MonetDB wrote it (position and all), so users see what the engine said.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar


class Warning(Exception):  # noqa: A001 - the name PEP 249 requires
    """Important warnings such as data truncation."""


class Error(Exception):
    """Base of every tique error; ``sqlstate`` holds the five-character code when one is known (a class
    registered for a code carries it as its default, as psycopg's classes do)."""

    sqlstate: str | None = None

    def __init__(self, message: str = "", sqlstate: str | None = None) -> None:
        super().__init__(message)
        if sqlstate is not None:
            self.sqlstate = sqlstate


class InterfaceError(Error):
    """Misuse of the driver itself: a closed connection or cursor, fetching with no result."""


class DatabaseError(Error):
    """Errors reported by the database."""


class DataError(DatabaseError):
    """Bad data: a value out of range, a failed conversion."""


class OperationalError(DatabaseError):
    """The database could not carry out the operation: lost connection, time-out, engine failure."""


class IntegrityError(DatabaseError):
    """A constraint would be broken, for example a duplicate primary key."""


class InternalError(DatabaseError):
    """The database or tique reached a state it should never be in."""


class ProgrammingError(DatabaseError):
    """The SQL is wrong: syntax error, unknown table or column, wrong number of parameters."""


class NotSupportedError(DatabaseError):
    """A construct or API that tique or MonetDB does not support."""


# ---- the registry: one class per SQLSTATE tique tells apart (psycopg.errors style) -------------------------

_REGISTRY: dict[str, type[Error]] = {}
E = TypeVar("E", bound=type[Error])


def _code(sqlstate: str) -> Callable[[E], E]:
    """Register a class for ``sqlstate``; its instances carry that code unless given another."""

    def register(cls: E) -> E:
        cls.sqlstate = sqlstate
        _REGISTRY[sqlstate] = cls
        return cls

    return register


def lookup(sqlstate: str) -> type[Error]:
    """The class registered for exactly ``sqlstate`` (as psycopg.errors.lookup); KeyError when none is. For any
    code, ``class_for_sqlstate`` gives the class an error with it is raised as."""
    return _REGISTRY[sqlstate]


@_code("23502")
class NotNullViolation(IntegrityError):
    """NULL in a NOT NULL column."""


@_code("23503")
class ForeignKeyViolation(IntegrityError):
    """A FOREIGN KEY would name no row, or a row still referenced would be deleted or re-keyed."""


@_code("23505")
class UniqueViolation(IntegrityError):
    """A duplicate PRIMARY KEY or UNIQUE value."""


@_code("40001")
class SerializationFailure(OperationalError):
    """The transaction lost a write-write conflict (first committer wins) and was rolled back.

    Nothing it wrote is visible. It is safe to run the whole transaction again (``Connection.run`` does).
    """


@_code("53100")
class StorageFull(OperationalError):
    """The disk holding the database is full (or under tique's free-space minimum), or the engine failed to write
    for want of space. Nothing of the failed transaction was committed.

    Fail-stop: writes are refused (reads are still served) until space returns; free space on that disk (or grow
    it), then run the transaction again. Not a conflict: retrying at once fails the same way.
    """


@_code("08000")
class ConnectionException(OperationalError):
    """The connection to the engine failed."""


@_code("08003")
class ConnectionDoesNotExist(ConnectionException):
    """The engine connection was closed (by this process, or after an interrupt left it out of step)."""


@_code("08006")
class ConnectionFailure(ConnectionException):
    """The engine connection was lost mid-statement (the server died or closed it): the statement's outcome is
    unknown."""


@_code("HYT00")
class Timeout(OperationalError):
    """A wait ran out of time: typically a commit waiting for an earlier one that is stuck."""


# tique's own conditions, in class TQ (implementation-defined: neither MonetDB nor PostgreSQL uses it). README
# "Errors" lists them.


class ParameterRefused(ProgrammingError):
    """A parameter value no SQL literal can carry (an object of a type pymonetdb cannot convert either): refused in
    the client before anything is sent, so, as in pymonetdb, it aborts no transaction."""


class SeveralStatements(ProgrammingError):
    """One execute() given several statements: the cursor runs them one by one (Cursor.execute), as pymonetdb
    sends such a text whole."""


@_code("TQ001")
class TransactionFailed(InterfaceError):
    """A statement in a transaction that can only be rolled back: an earlier statement of it failed (as MonetDB
    aborts a transaction; with on_statement_error="continue" only one that failed after some of its rows may have
    reached the engine), or its lease ran out: call rollback()."""


@_code("TQ002")
class CommitOutcomeUnknown(OperationalError):
    """The connection was lost during COMMIT, or COMMIT failed after its commit point: the transaction may (or,
    after the commit point, did) commit.

    Recovery settles it when the engine restarts; reconnect and check whether its effects are there before
    running it again.
    """


@_code("TQ003")
class LeaseExpired(SerializationFailure):
    """The transaction's lease ran out (its snapshot's, while it stayed idle, or its commit's, while it stalled
    in COMMIT), so it was rolled back: the checkpointer may have moved versions it read, or later commits went
    ahead without it. Like any SerializationFailure, safe to retry."""


@_code("TQ004")
class CommitStuck(Timeout):
    """A commit waited for an earlier one that decided its outcome but never finished (its client died after
    deciding): the driver settles such a commit with its decided outcome and waits again; raised only when it
    could not."""


@_code("TQ005")
class CheckpointLockLost(OperationalError):
    """A checkpointer lost its lock during a run (it stalled past its lease and another checkpointer took it): the
    C module refused its next write, so it wrote nothing it read before that; its next run starts afresh."""


_SQLSTATE_IN_MESSAGE = re.compile(r"^(?:[A-Za-z_ ]*(?:Exception|Error)?:[\w.]*:)?\s*([0-9A-Z]{5})!(.*)$", re.S)


def split_monetdb_message(raw: str) -> tuple[str | None, str]:
    """Return (SQLSTATE, message) from a MonetDB error text such as ``ParseException:SQLparser:42000!...``."""
    text = raw.strip()
    # Several errors can be stacked one per line; the first carries the code, all are informative.
    first, _, rest = text.partition("\n")
    match = _SQLSTATE_IN_MESSAGE.match(first)
    if not match:
        return None, text
    message = match.group(2).strip()
    for line in rest.splitlines():
        line_match = _SQLSTATE_IN_MESSAGE.match(line)
        extra = (line_match.group(2) if line_match else line).strip()
        if extra and extra not in message:
            message += "\n" + extra
    return match.group(1), message


def class_for_sqlstate(sqlstate: str | None, message: str = "") -> type[Error]:
    """The class an error with ``sqlstate`` is raised as: the one registered for the code, else the PEP 249
    class of its class (the first two characters). Codes PEP 249 has no class for (HY..., MonetDB's own
    M0...) are OperationalError, as pymonetdb reports every code it does not know."""
    if sqlstate is None:
        return OperationalError
    if sqlstate in _REGISTRY:
        return _REGISTRY[sqlstate]
    if sqlstate.startswith("08"):
        return ConnectionException
    if sqlstate.startswith("53"):  # insufficient resources
        return StorageFull
    if sqlstate == "40000":
        return _monetdb_commit_failure(message)
    if sqlstate.startswith("23") or sqlstate in ("40002", "M0M29", "2D000"):
        return IntegrityError
    if sqlstate.startswith("22"):
        return DataError
    if sqlstate.startswith("0A"):
        return NotSupportedError
    if sqlstate.startswith(("42", "3F", "3D", "07", "26", "34")):
        return ProgrammingError
    return OperationalError


def _monetdb_commit_failure(message: str) -> type[DatabaseError]:
    """MonetDB reports every failed COMMIT of its own as 40000; only its words tell a lost conflict of its
    optimistic transactions (safe to retry) from a broken constraint."""
    if "concurrency conflicts" in message:
        return SerializationFailure
    if "constraint" in message.lower():
        return IntegrityError
    return OperationalError


# MonetDB 11.41 reports failed arithmetic and conversions from its kernel without a SQLSTATE, as
# ``MALException:calc./:operation failed``; these are data errors (SQLSTATE 22012 / 22018 / 22003).
_KERNEL_DATA_ERRORS = (
    (re.compile(r"calc\.(/|%|div|mod):"), "22012", "division by zero"),
    (re.compile(r"calc\.[-+*]:operation failed"), "22003", "numeric value out of range"),
    (re.compile(r"calc\.[a-z_]+:operation failed"), "22018", "a value could not be converted"),
    # the embedded kernel's conversions (sql.lng_dec2dec_int, int_2_sht...) report an overflow as this alone
    (re.compile(r"(dec2dec|_2_)[a-z_]*:GDK reported error"), "22003", "numeric value out of range"),
    (re.compile(r"overflow", re.I), "22003", "numeric value out of range"),
)


def _kernel_sqlstate(message: str) -> tuple[str | None, str]:
    for pattern, code, meaning in _KERNEL_DATA_ERRORS:
        if pattern.search(message):
            return code, f"{meaning} ({message})"
    return None, message


def from_monetdb(raw: str, context: str | None = None) -> DatabaseError:
    """Build the right exception from a MonetDB error text; ``context`` says what tique was doing."""
    sqlstate, message = split_monetdb_message(raw)
    if sqlstate is None:
        sqlstate, message = _kernel_sqlstate(message)
    cls = class_for_sqlstate(sqlstate, message)
    if context:
        message = f"{message} ({context})"
    if not issubclass(cls, DatabaseError):  # a driver-side code (TQ001) relayed by an engine: still its error
        cls = OperationalError
    return cls(message, sqlstate)


_ENGINE_SNIPPET = re.compile(r"\s*in: \"(.*)\"\s*$", re.S)


ENGINE_SNIPPET_LIMIT = 80  # MonetDB quotes at most this many characters of the text it read


def syntax_error(
    statement: str, engine_message: str, sent_prefix: str = "", origin: list[int] | None = None
) -> ProgrammingError:
    """MonetDB's syntax error restated for the statement the user wrote. MonetDB quotes the (lower-cased) text it
    read up to the failure - of the text tique sent: ``sent_prefix`` + the statement with placeholders as ``?``
    (``origin`` maps each sent character back to the user's text) - and at most its first 80 characters. The
    user sees the position in their own statement, never tique's text."""
    match = _ENGINE_SNIPPET.search(engine_message)
    head = engine_message[: match.start()] if match else engine_message
    head = head.strip().lstrip("!")
    where = ""
    if match:
        quoted = match.group(1).replace("\n!", "\n")  # MAPI starts each line of an error with "!"
        seen = quoted
        if sent_prefix and seen.lower().startswith(sent_prefix.lower()):
            seen = seen[len(sent_prefix) :]
        seen = seen.rstrip(" \t\r\n;")  # MonetDB appends the ";" it added
        if len(quoted) >= ENGINE_SNIPPET_LIMIT:
            where = (
                f" (past its first {ENGINE_SNIPPET_LIMIT - len(sent_prefix)} characters)"  # MonetDB cut its quote short
            )
        elif seen:
            at = origin[len(seen)] if origin is not None and len(seen) < len(origin) else len(seen)
            where = f" at character {at} (after {statement[:at][-30:]!r})"
        else:
            where = " at its start"
    return ProgrammingError(f"{head}{where} in the statement {statement!r}", "42000")


def restated(statement: str, error: ProgrammingError) -> ProgrammingError:
    """A syntax error MonetDB found in the SQL tique rewrote quotes that SQL: name the user's statement instead."""
    message = str(error)
    match = _ENGINE_SNIPPET.search(message)
    if not engine_syntax_error(error) or not match:
        return error
    return ProgrammingError(f"{message[: match.start()]} in the statement {statement!r}", error.sqlstate)


CONNECTION_LOST = ("08006", "08003")  # connection failure (the engine adapters raise it), connection closed


def connection_lost(exc: BaseException) -> bool:
    """The engine connection is gone (the server died or closed it): the statement's outcome is unknown. The
    engine adapters give every such error its SQLSTATE."""
    return getattr(exc, "sqlstate", None) in CONNECTION_LOST


_STUCK_COMMIT = re.compile(r"for commit (\d+) \(state deciding\)")


def stuck_commit(exc: BaseException) -> int | None:
    """The commit a CommitStuck error (TQ004, from the C module) waited for: the C module names it in the
    message only."""
    if not isinstance(exc, CommitStuck):
        return None
    found = _STUCK_COMMIT.search(str(exc))
    return int(found.group(1)) if found else None


# ---- MonetDB conditions without a code of their own ---------------------------------------------------------
# MonetDB gives these a generic SQLSTATE (42000) or none: its words tell them apart, and only here.

_WRITE_FAILED = re.compile(r"\s*(append failed|no space left|disk (is )?full|could not extend)", re.I)


def engine_syntax_error(exc: BaseException) -> bool:
    """MonetDB's parser refused the text (42000, like many other refusals)."""
    return "syntax error" in str(exc)


def engine_access_denied(exc: BaseException) -> bool:
    """MonetDB refused a statement for want of a privilege (42000)."""
    return "access denied" in str(exc)


def prepared_statement_missing(exc: BaseException) -> bool:
    """An EXEC named a prepared statement the session does not hold (42000)."""
    return "PREPARED Statement missing" in str(exc)


# (an EXEC's string argument its parameter's type refuses: "a value could not be converted" embedded, "conversion of
# string 't' to type bit failed" over MAPI, where tique serve parses the EXEC's arguments first)
_NOT_CONVERTED = (
    "value too long for type",
    "a value could not be converted",
    "overflow in conversion",
    "conversion of string",
)


def value_not_converted(exc: BaseException) -> bool:
    """A value could not be converted to the type a prepared statement's parameter took from its context (a
    string longer than the column it is compared with, an integer beyond its range)."""
    text = str(exc)
    return any(m in text for m in _NOT_CONVERTED)


_COPY_REFUSED = re.compile(r"Failed to import table '[^']*'")


def copy_refused_value(exc: BaseException) -> str | None:
    """A COPY INTO refused a value of the file: the engine's message without the (internal) table it names, else
    None."""
    message, refused = _COPY_REFUSED.subn("", str(exc))
    return message if refused else None


_LOGIN_REFUSED = re.compile(r"InvalidCredentialsException|password", re.I)


def login_refused(exc: BaseException) -> bool:
    """A MonetDB server refused the login (pymonetdb's error at connect carries no code)."""
    return _LOGIN_REFUSED.search(str(exc)) is not None


def engine_write_failed(exc: BaseException, opening: bool = False) -> bool:
    """The engine failed a write for want of space: it says so in words only (tique/storage.py). ``opening``: only
    when its message opens with them (a message of tique's may quote a key value or a table name 'disk full')."""
    words = _WRITE_FAILED.match if opening else _WRITE_FAILED.search
    return words(str(exc)) is not None


def read_beside_update(exc: BaseException) -> bool:
    """MonetDB 11.41 failed a statement that read a table while another session's UPDATE of it (in place, as DDL
    updates tique.tables) committed: 'BATappend_or_update: update BATs not the same size'. It changed nothing; a
    read-only statement run again reads the table as it is now."""
    return isinstance(exc, DatabaseError) and "update BATs not the same size" in str(exc)


def lost_to_concurrency(exc: BaseException) -> bool:
    """Did MonetDB refuse a statement or COMMIT because another transaction changed the same table meanwhile (its
    optimistic, table-level conflicts: retrying may succeed)? It says so in several words: a 40000 COMMIT failure,
    "Update failed" (an UPDATE or DELETE of a table another session appended to), "Transaction conflict"."""
    if isinstance(exc, SerializationFailure):
        return True
    if not isinstance(exc, DatabaseError) or isinstance(exc, IntegrityError):
        return False
    # only the engine's own words, which come before anything it quotes: a table named conflict_log or a key
    # 'update failed' in a refusal for a duplicate key is no conflict (retried, it fails the same way for ever)
    words = re.split(r"['\"]", str(exc), maxsplit=1)[0].lower()
    return "update failed" in words or "conflict" in words
