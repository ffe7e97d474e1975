"""A MonetDB server over MAPI (``tique serve``, or a real mserver5), through pymonetdb."""

from __future__ import annotations

import re
import socket
import struct
import threading
from collections.abc import Sequence
from typing import Any

from tique.engine.base import Column, Result, in_one_transaction
from tique.engine.url import EngineURL
from tique.errors import (
    ConnectionException,
    ConnectionFailure,
    DataError,
    InterfaceError,
    OperationalError,
    from_monetdb,
    login_refused,
)
from tique.gc_paused import paused
from tique.turns import TURN_END_ALIAS, EngineTurns, folded, new_owner, turn_end_sql

_ASCII_RUNS = re.compile("([\x00-\x7f]+)")


def _strip(data: str) -> str:
    """pymonetdb's string reader, fixed: MonetDB escapes a control character such as U+0080 as the octal of its
    UTF-8 bytes ('\\302\\200'), which pymonetdb turned into the two characters 'Â\\x80'. The escapes are bytes."""
    return "".join(
        w.encode("ascii").decode("unicode_escape").encode("latin-1").decode("utf-8") if "\\" in w else w
        for w in _ASCII_RUNS.split(data[1:-1])
    )


def _fix_pymonetdb() -> None:
    from pymonetdb.sql import pythonize, types

    for code in (types.CHAR, types.VARCHAR, types.CLOB, types.STR):
        pythonize.mapping[code] = _strip


class ServerEngine:
    kind = "server"

    def __init__(self, url: EngineURL, *, connect_timeout: float = 10.0) -> None:
        self.url = url
        self.connect_timeout = connect_timeout
        # reads of string columns and appends take turns in the server's C module (tique/turns.py); off when the
        # server has no tique module (a plain MonetDB server)
        self.turns = EngineTurns()

    def describe(self) -> str:
        return self.url.redacted()

    def connect(self) -> ServerConnection:
        return ServerConnection(self)

    def close(self) -> None:
        """Server connections are closed by their owners; nothing is shared here."""


# Statements that neither read nor append rows: sent without a turn. A ROLLBACK must never carry one: in a
# transaction a failure aborted, the engine refuses every other statement, and the request would stop before it.
_TRANSACTION_CONTROL = re.compile(
    r"\s*(START\s+TRANSACTION|BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE|SET|PREPARE|DEALLOCATE)\b[^;]*;?\s*$", re.I
)
# MonetDB's words for tique.turn unknown: a server without tique's C module ("no such operator 'tique'.'turn'(").
# The schema is required: a user's own unknown function named turn switched turns off for the whole process
_MODULE_MISSING = re.compile(r"no such (operator|function) '?tique'?\.'?turn'?\(", re.I)

# Statements sent together by execute_atomically up to this many characters go as one text (one round trip)
ONE_TEXT_LIMIT = 1 << 20


class ServerConnection:
    def __init__(self, engine: ServerEngine) -> None:
        import pymonetdb

        _fix_pymonetdb()
        self.engine = engine
        url = engine.url
        self._lock = threading.Lock()
        self.owner = new_owner()  # this session's turns in the C module (tique/turns.py)
        self._turn_owed = False  # a failed statement's turn not ended yet (_end_turn)
        self._lost: str | None = None  # why the session ended, when the server or an interrupt ended it
        try:
            self._conn: Any = pymonetdb.connect(
                database=url.database,
                hostname=url.host,
                port=url.port,
                username=url.username,
                password=url.password,
                autocommit=True,
                connect_timeout=engine.connect_timeout,
            )
        except (ConnectionRefusedError, socket.gaierror, TimeoutError) as exc:
            raise ConnectionException(
                f"cannot reach a MonetDB server at {url.host}:{url.port} ({exc}); is it running? "
                f"Start one with: tique serve DIR --port {url.port}",
                "08001",
            ) from None
        except OSError as exc:
            raise ConnectionException(f"cannot connect to {engine.describe()}: {exc}", "08001") from None
        except pymonetdb.DatabaseError as exc:
            if login_refused(exc):
                raise OperationalError(
                    f"login to {engine.describe()} refused: wrong user name or password", "28000"
                ) from None
            raise ConnectionException(f"cannot connect to {engine.describe()}: {str(exc).strip()}", "08001") from None
        self._cursor = self._conn.cursor()
        self._cursor.arraysize = 10000
        # every row in the statement's reply: rows fetched later (pymonetdb asks for more than 100 with Xexport) would
        # be read after the statement's turn ended (tique/turns.py)
        self._conn.replysize = -1

    @property
    def closed(self) -> bool:
        return self._conn is None

    @property
    def append_guard(self) -> EngineTurns | None:
        """The engine's turns (tique/turns.py), as an embedded connection gives its kernel's append guard."""
        return self.engine.turns if self.engine.turns.enabled else None

    def execute(self, sql: str) -> Result:
        with self._lock:
            if self._conn is None:
                if self._lost is not None:  # not closed by tique: the error says the server went, not "closed"
                    raise ConnectionFailure(f"lost the connection to {self.engine.describe()}: {self._lost}")
                raise InterfaceError("connection is closed", "08003")
            result = self._execute(self._cursor, sql)
            if self._turn_owed:
                self._end_turn(self._cursor)
            return result

    def _execute(self, cur: Any, sql: str) -> Result:
        import pymonetdb

        preparing = sql.lstrip()[:7].upper() == "PREPARE"
        turn = None if _TRANSACTION_CONTROL.match(sql) else self.engine.turns.pending()
        try:
            # the embedded kernel's listener sends no update count: pymonetdb would leave the last statement's
            cur.rowcount = -1
            if turn is None:
                cur.execute(sql)
            else:
                self._execute_in_turn(cur, sql, *turn)
            prepared = cur.lastrowid if preparing else None
            if cur.description is None:
                return Result(rowcount=cur.rowcount, prepared_id=prepared)
            rows = cur.fetchall()  # (not paused: replies arrive meanwhile, and other threads run)
        except pymonetdb.DatabaseError as exc:
            if turn is not None:
                self._end_turn(cur)
            raise from_monetdb(str(exc)) from None
        except (ValueError, OverflowError) as exc:
            # pymonetdb converts a reply after reading it whole: the session is in step, the value is not
            # representable in Python (a year past 9999, a TIME of 24:00, an interval past timedelta's range...)
            raise DataError(f"a value of the result cannot be read in Python: {exc}", "22008") from None
        except (OSError, EOFError) as exc:
            self._abandon(str(exc) or type(exc).__name__)
            raise ConnectionFailure(f"lost the connection to {self.engine.describe()}: {exc}") from None
        except BaseException:
            # interrupted (KeyboardInterrupt) mid-exchange: the statement's reply may still come, and would
            # answer the next statement; drop the connection, so the next one fails as a lost connection
            self._abandon("a statement was interrupted mid-exchange")
            raise
        columns = [Column(d.name, d.type_code, d.precision, d.scale) for d in cur.description]
        with paused(len(rows)):
            rows = [tuple(r) for r in _reals(columns, rows)]
        return Result(columns=columns, rows=rows, rowcount=len(rows), prepared_id=prepared)

    def _execute_in_turn(self, cur: Any, sql: str, appends: bool, mask: int) -> None:
        """Run ``sql`` in one request with its turn (tique/turns.py); the cursor is left on its result, or with no
        result when it gives none. A server without tique's module runs it without, from now on."""
        import pymonetdb

        try:
            cur.execute(folded(sql, appends, mask, self.owner))
        except pymonetdb.DatabaseError as exc:
            if not _MODULE_MISSING.search(str(exc)):
                raise
            self.engine.turns.enabled = False
            cur.execute(sql)
            return
        cur.nextset()  # past the turn's own result
        if cur.description is not None and [d.name for d in cur.description] == [TURN_END_ALIAS]:
            cur.description = None  # the statement gave no result: this is the turn's end
            cur.rowcount = -1

    def _end_turn(self, cur: Any) -> None:
        """The statement failed, so the server skipped the turn's end that followed it: end it now. Inside a
        transaction the failure aborted, the engine refuses it until the ROLLBACK: it is owed until a statement of
        the session succeeds (a turn whose client is gone lapses)."""
        try:
            cur.execute(turn_end_sql(self.owner))
            self._turn_owed = False
        except Exception:
            self._turn_owed = True

    def execute_atomically(self, statements: Sequence[str]) -> None:
        if sum(len(sql) for sql in statements) <= ONE_TEXT_LIMIT:
            # one text, one round trip. Its own START TRANSACTION: in a session some statement left inside a
            # transaction, the text fails instead of joining that one uncommitted. After an error MonetDB runs the
            # rest of the text as refused statements, and its COMMIT as a ROLLBACK: the session leaves both
            self.execute(";\n".join(["START TRANSACTION", *statements, "COMMIT"]))
            return
        in_one_transaction(self.execute, statements)

    def _abandon(self, lost: str | None = None) -> None:
        """Drop the session; ``lost``: why, when the server or an interrupt ended it rather than a close."""
        self._lost = lost
        conn, self._conn = self._conn, None
        try:
            conn.close()
        except Exception:
            pass

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._abandon()


def _reals(columns: list[Column], rows: list[Any]) -> list[Any]:
    """REAL values come as text with 9 digits, which Python reads as the nearest double: round them back to the
    32-bit value the engine holds (9 digits identify it), as the embedded engine returns it."""
    reals = [i for i, c in enumerate(columns) if c.type_code == "real"]
    if not reals or not rows:
        return rows
    out = []
    for row in rows:
        row = list(row)
        for i in reals:
            if row[i] is not None:
                row[i] = struct.unpack("f", struct.pack("f", row[i]))[0]
        out.append(row)
    return out
