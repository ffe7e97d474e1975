"""PEP 249 exceptions, tique's own additions, and the mapping from MonetDB's error messages to them.

MonetDB reports errors as ``[Prefix:module:]SQLSTATE!message``; the SQLSTATE picks the class, and the message
is kept as MonetDB wrote it (position and all), so users see what the engine said.
"""

from __future__ import annotations

import re


class Warning(Exception):  # noqa: A001 - the name PEP 249 requires
    """Important warnings such as data truncation."""


class Error(Exception):
    """Base of every tique error; ``sqlstate`` holds the five-character code when one is known."""

    def __init__(self, message: str = "", sqlstate: str | None = None) -> None:
        super().__init__(message)
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


class SerializationFailure(OperationalError):
    """The transaction lost a write-write conflict (first committer wins) and was rolled back.

    Nothing it wrote is visible. It is safe to run the whole transaction again (``Connection.run`` does).
    """

    def __init__(self, message: str = "", sqlstate: str | None = "40001") -> None:
        super().__init__(message, sqlstate)


class CommitOutcomeUnknown(OperationalError):
    """The connection was lost during COMMIT: the transaction may or may not have committed.

    Recovery settles it when the engine restarts; reconnect and check whether its effects are there before
    running it again.
    """


class StorageFull(OperationalError):
    """The disk holding the database is full (or under tique's free-space minimum), or the engine failed to write
    for want of space. Nothing of the failed transaction was committed.

    Fail-stop: writes are refused (reads are still served) until space returns; free space on that disk (or grow
    it), then run the transaction again. Not a conflict: retrying at once fails the same way.
    """

    def __init__(self, message: str = "", sqlstate: str | None = "53100") -> None:
        super().__init__(message, sqlstate)


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


def class_for_sqlstate(sqlstate: str | None, message: str = "") -> type[DatabaseError]:
    """The PEP 249 class a SQLSTATE belongs to, by its class (the first two characters). Codes PEP 249 has no
    class for (HY..., 08..., MonetDB's own M0...) are OperationalError, as pymonetdb reports every code it does
    not know."""
    if sqlstate is None:
        return OperationalError
    if sqlstate == "40001":
        return SerializationFailure
    if sqlstate.startswith("53"):  # insufficient resources: 53100 disk full (tique's C module)
        return StorageFull
    if sqlstate == "40000" and "concurrency conflicts" in message:
        # MonetDB's own optimistic transactions lost a conflict: also safe to retry.
        return SerializationFailure
    if sqlstate.startswith("23") or sqlstate in ("40002", "M0M29", "2D000"):
        return IntegrityError
    if sqlstate == "40000" and "constraint" in message.lower():
        return IntegrityError
    if sqlstate.startswith("22"):
        return DataError
    if sqlstate.startswith("0A"):
        return NotSupportedError
    if sqlstate.startswith(("42", "3F", "3D", "07", "26", "34")):
        return ProgrammingError
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
    if cls in (SerializationFailure, StorageFull):
        return cls(message, sqlstate)
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
    if "syntax error" not in message or not match:
        return error
    return ProgrammingError(f"{message[: match.start()]} in the statement {statement!r}", error.sqlstate)


CONNECTION_LOST = ("08006", "08003")  # connection failure (the engine adapters raise it), connection closed


def connection_lost(exc: Exception) -> bool:
    """The engine connection is gone (the server died or closed it): the statement's outcome is unknown. Told by
    the SQLSTATE the engine adapters give it; pymonetdb's own socket errors, reached some other way, by text."""
    if getattr(exc, "sqlstate", None) in CONNECTION_LOST:
        return True
    text = str(exc).lower()
    return "lost the connection" in text or "broken pipe" in text
