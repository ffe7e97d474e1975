"""MonetDB's server-side prepared statements, per session: a statement tique runs a second time is prepared
once and from then on sent as ``EXEC id(values)``, which skips MonetDB's SQL parser and optimizer. Measured on
a point snapshot read: 1.26 ms rendered, 0.53 ms as EXEC (0.36 ms for the bare table read).

MonetDB's rules, measured on 11.41: statement ids count up per session from 0 (some refused PREPAREs take one,
others do not), and *any* error on the session drops every prepared statement, as does the session's own DDL or
SET, with no error (engine/base.py drops_prepared); another session's DDL drops none. So every statement of the
session goes through this wrapper: an error forgets all ids, and so does a change of the process's catalog. A
statement's id is read right after its PREPARE, with its parameters' types (neither adapter reports it). A
DEALLOCATE (a user's, or tique's after asking MonetDB's verdict on a statement) forgets the ids it drops, which
are prepared again at their next use. Should an EXEC ever find no statement, preparing stops on this session and
the statement runs as text, so a user never sees the difference.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Sequence

from tique.append_guard import AppendGuard
from tique.engine.base import RawConnection, Result, drops_prepared
from tique.engine.result_types import DESCRIBE, newest_prepared, newest_read
from tique.errors import Error, connection_lost, prepared_statement_missing, value_not_converted
from tique.rewrite.template import SLOT_PREFIX, Template
from tique.rewrite.values import ENGINE_STRING_TYPES
from tique.zero_signs import NEGATIVE_ZERO, zero_signs_kept

PREPARE_AFTER = 2  # uses of a statement on a session before it is prepared
PREPARE_PROTOCOL = True  # run_template prepares; benchmarks/stmts.py turns it off to measure the old path
# DEALLOCATE [PREPARE] ALL | id: the forms MonetDB takes, and which ids they drop
DEALLOCATE = re.compile(r"\s*DEALLOCATE\s+(?:PREPARE\s+)?(ALL|\d+)\s*;?\s*$", re.I)
SET_OPTIMIZER = re.compile(r"\s*SET\s+optimizer\s*=\s*'([^']*)'\s*;?\s*$", re.I)

# What a parameter's literal is typed as when the statement runs as text, so that its prepared form casts the
# parameter to that type: MonetDB types a bare `?` from its context and converts the value to it (`b + ?` with b
# DECIMAL(12,2) took 26341.13 as 26341; `ts = ?` dropped a fraction; `f = ?` rounded a double to a REAL; `b + ?`
# with b BOOLEAN took 3 as TRUE and answered 2 where the text answers 4; `r * ?` with r REAL computed in DOUBLE).
# An integer is typed as MonetDB types its literal, by magnitude (5 TINYINT, 300 SMALLINT); a decimal by its
# digits as written (0.015 is DECIMAL(4,3): a division's scale follows the precision, so DECIMAL(18,3) divided
# otherwise). None: a bare `?` (strings; NULL_ARGUMENT for a NULL); a string runs prepared only into a parameter
# of a string type (_TEXT_PARAMETERS). A literal of another form is not prepared.
_DECIMAL = re.compile(r"-?(\d*)\.(\d*)")
_TYPED = re.compile(r"(DATE|TIME\(\d\)|TIMESTAMP\(\d\)) '")
_TIMESTAMP = re.compile(r"TIMESTAMP '")  # a datetime as pymonetdb writes it: at most microseconds
_STRING = re.compile(r"'(?:[^']|'')*'")
# A NULL's text literal has no type, which some operators refuse (`b + NULL` on a BOOLEAN: "no such binary operator"),
# while a prepared `?` takes one from the context and answers NULL: such a statement is prepared only once its text
# has answered with a NULL there (run).
NULL_ARGUMENT = "NULL"
_INTEGER_TYPES = ((2**7, "TINYINT"), (2**15, "SMALLINT"), (2**31, "INT"), (2**63, "BIGINT"), (2**127, "HUGEINT"))
# The parameter types (sys.prepared_statements_args) a string literal goes into as itself. Into another type an EXEC
# converts the string to it, where the text form leaves MonetDB to compare or combine the string as it does a
# literal, and answers differ (11.41): ``flag = 'true'`` found no row as text and the true rows as EXEC (the text
# casts the BOOLEAN to the string's CHAR(4)); ``ts = '...10:00:00.1234'`` with a TIMESTAMP(3) none as text and the
# row of .123 as EXEC (rounded to the column's precision); ``COALESCE(m, '1.5')`` with a DECIMAL(5,3) failed as
# text and answered as EXEC. Such a statement runs as text with that literal.
_TEXT_PARAMETERS = ENGINE_STRING_TYPES
# The id the session's newest statement took and its parameters' types, asked right after each PREPARE. The id is
# read, not counted: 11.41 numbers some refused PREPAREs ("Could not determine type") and not others ("identifier
# unknown", a syntax error), and a count one too high made a later EXEC run ANOTHER statement.
_TYPES_OF = newest_prepared(1)


# A slot alone in an ORDER BY list: there an integer literal is a column's position (`ORDER BY 2`), while a cast
# parameter is a constant that sorts nothing; MonetDB refuses a bare one. Such a statement runs as text.
_SORT_POSITION = re.compile(r"\bORDER\s+BY\s+(?:[^()]*,\s*)?$", re.I)


def _sorts_by_slot(template: Template) -> bool:
    return any(_SORT_POSITION.search(part) for part in template.parts[: len(template.slots)])


def preparing(sql: str) -> bool:
    """Is ``sql`` one of the statements that prepare a statement (its PREPARE, the query of its parameters' or
    results' types, a DEALLOCATE), which a session sends once per statement shape? (For counting a transaction's
    round trips.)"""
    return sql.startswith(("PREPARE ", _TYPES_OF, DESCRIBE, "DEALLOCATE "))


UNPREPARABLE = "unpreparable"


def parameter_type(literal: str) -> str | None:
    """The type a parameter's literal has as text (see above); UNPREPARABLE when its form is not known here."""
    digits = literal[1:] if literal[:1] == "-" else literal
    if digits.isascii() and digits.isdigit():  # most are integers: spared the patterns (they run per slot and EXEC)
        size = int(digits)
        return next((name for bound, name in _INTEGER_TYPES if size < bound), UNPREPARABLE)
    if literal == "NULL":
        return NULL_ARGUMENT
    if _STRING.fullmatch(literal):
        return None
    if literal.lower() in ("true", "false"):
        return "BOOLEAN"
    if (number := _DECIMAL.fullmatch(literal)) is not None:
        whole = number.group(1).lstrip("0") or number.group(1)[:1]  # as MonetDB counts: 0.5 has 2 digits, .5 one
        precision, fraction = len(whole) + len(number.group(2)), len(number.group(2))
        if not 0 < precision <= 38:
            return UNPREPARABLE
        return f"DECIMAL({precision}, {fraction})"
    if re.fullmatch(r"-?\d+(\.\d*)?[eE][-+]?\d+", literal):
        return "DOUBLE"
    if (typed := _TYPED.match(literal)) is not None:
        return typed.group(1)
    if _TIMESTAMP.match(literal):
        return "TIMESTAMP(6)"
    return UNPREPARABLE


# Called after every statement a tique connection sends to the engine, with (SQL, seconds, error or None):
# Connection.statement_hooks, for tracing, logging and counting round trips.
StatementHook = Callable[[str, float, "Exception | None"], None]


Prepared = tuple[Template, tuple[str | None, ...]]


class PreparingConnection:
    def __init__(
        self, raw: RawConnection, enabled: bool = True, catalog_version: Callable[[], object] | None = None
    ) -> None:
        self.raw = raw
        self.enabled = enabled
        # per statement and the types of its parameters' literals (parameter_type)
        self._ids: dict[Prepared, int] = {}
        self._uses: Counter[Prepared] = Counter()
        self._unpreparable: set[Prepared] = set()
        self._kinds: dict[Prepared, tuple[str, ...]] = {}  # its parameters' types, as it was last prepared
        self._null_answered: set[Prepared] = set()  # statements with a NULL argument whose text answered
        self.hooks: list[StatementHook] = []
        # the process's catalog as the statements were prepared: MonetDB keeps a session's prepared statements
        # through another session's DDL, and an EXEC then reads a table made again with the old plan's types
        # (an INT made DECIMAL(9,2) read 7.50 as 750); a change of it forgets them (see run)
        self.catalog_version = catalog_version
        self._prepared_under: object = None
        self.pipeline = "default_pipe"  # the session's optimizer pipeline, as the SET statements sent here left it

    @property
    def closed(self) -> bool:
        return self.raw.closed  # type: ignore[attr-defined,no-any-return]

    @property
    def append_guard(self) -> AppendGuard | None:
        """The embedded kernel's (append_guard.py), for code given this connection in place of its raw one."""
        return getattr(self.raw, "append_guard", None)

    def close(self) -> None:
        self.raw.close()

    def execute(self, sql: str) -> Result:
        head = sql.lstrip()[:10].upper()
        started = time.perf_counter()
        try:
            result = self.raw.execute(sql)
        except Error as exc:
            self._ids.clear()  # MonetDB dropped them all
            self._tell(sql, started, exc)
            raise
        self._tell(sql, started, None)
        if head.startswith("DEALLOCATE"):
            self._deallocated(sql)
        elif head.startswith("SET OPTIMI"):
            self._ids.clear()  # MonetDB drops the session's prepared statements when its optimizer changes
            named = SET_OPTIMIZER.match(sql)
            self.pipeline = named.group(1) if named else ""  # "": not known
        elif drops_prepared(sql):
            self._ids.clear()  # a DDL of the session's own: they are gone, and come back at their next uses
        return result

    def execute_atomically(self, statements: Sequence[str]) -> None:
        """The raw connection's execute_atomically; the hooks see it as one call, its statements joined."""
        started = time.perf_counter()
        try:
            self.raw.execute_atomically(statements)
        except Error as exc:
            self._ids.clear()  # an error anywhere in the batch: MonetDB dropped them all, as in execute
            self._tell(";\n".join(statements), started, exc)
            raise
        if any(drops_prepared(sql) for sql in statements):
            self._ids.clear()  # DDL among them (DROP TABLE's, CREATE VIEW's)
        self._tell(";\n".join(statements), started, None)

    def _deallocated(self, sql: str) -> None:
        """Forget the ids a DEALLOCATE dropped (measured on 11.41: it leaves the id count as it is)."""
        dropped = DEALLOCATE.match(sql)
        if dropped is None:  # a form whose effect is not known: stop preparing on this session
            self.enabled = False
            self._ids.clear()
        elif dropped.group(1).upper() == "ALL":
            self._ids.clear()
        else:
            sid = int(dropped.group(1))
            self._ids = {t: i for t, i in self._ids.items() if i != sid}

    def _tell(self, sql: str, started: float, error: Exception | None) -> None:
        for hook in self.hooks:
            hook(sql, time.perf_counter() - started, error)

    def run(self, template: Template, values: dict[str, str]) -> Result:
        """Run a rewritten statement, prepared once it is seen again with parameters of the same types."""
        if not self.enabled or not template.slots:
            return self.as_text(template, values)
        if self.catalog_version is not None and self._prepared_under != (now := self.catalog_version()):
            self._forget_all()
            self._null_answered.clear()
            self._prepared_under = now
        types = tuple(parameter_type(values[s]) for s in template.slots)
        key = (template, types)
        if UNPREPARABLE in types or key in self._unpreparable:
            return self.as_text(template, values)
        if NULL_ARGUMENT in types and key not in self._null_answered:
            result = self.as_text(template, values)  # an error here: as text it fails every time
            self._null_answered.add(key)
            return result
        sid = self._ids.get(key)
        if sid is None:
            self._uses[key] += 1
            if self._uses[key] < PREPARE_AFTER:
                return self.as_text(template, values)
            sid = self._prepare(key)
            if sid is None:
                return self.as_text(template, values)
        kinds = self._kinds.get(key, ())
        for i, slot in enumerate(template.slots):
            if values[slot][:1] == "'" and (i >= len(kinds) or kinds[i] not in _TEXT_PARAMETERS):
                return self.as_text(template, values)  # a string an EXEC would convert (_TEXT_PARAMETERS)
        args = ", ".join(values[s] for s in template.slots)
        try:
            return self.execute(f"EXEC {sid}({args})")  # its arguments keep their zeros' signs
        except Error as exc:
            if prepared_statement_missing(exc):
                self.enabled = False  # the count went wrong: run as text from now on
            elif not value_not_converted(exc):
                raise
            # a value the context's type cannot hold (a string or integer too large for the column it is compared
            # with): as text the statement answers rather than fails
            return self.as_text(template, values)

    def _forget_all(self) -> None:
        """Drop the session's prepared statements, here and in MonetDB: they come back at their next uses."""
        if not self._ids:
            return
        try:
            self.execute("DEALLOCATE ALL")  # (clears the ids)
        except Error as exc:  # (the error dropped them all)
            if connection_lost(exc):
                raise

    def as_text(self, template: Template, values: dict[str, str]) -> Result:
        """The statement with its parameters' literals in its text; with a -0.0 among them, on a pipeline that
        keeps it (an UPDATE's new values are computed by such a statement: tique/zero_signs.py)."""
        with zero_signs_kept(self, NEGATIVE_ZERO in values.values()):
            return self.execute(template.render(values))

    def prepared_text(self, sid: int) -> str | None:
        """The statement prepared as ``sid`` on this session (for tracing), None when none is."""
        for key, held in self._ids.items():
            if held == sid:
                return _with_holders(key)
        return None

    def _prepare(self, key: Prepared) -> int | None:
        if _sorts_by_slot(key[0]):
            self._unpreparable.add(key)
            return None
        try:
            self.execute("PREPARE " + _with_holders(key))
            rows = self.execute(_TYPES_OF).rows
        except Error as exc:  # (a failed PREPARE or query dropped every prepared statement of the session)
            if connection_lost(exc):
                raise  # the statement's own error: the session is gone, not the statement unpreparable
            self._unpreparable.add(key)  # e.g. a parameter whose type MonetDB cannot tell: run as text
            return None
        newest = newest_read(rows)
        if newest is None:
            self._unpreparable.add(key)
            return None
        sid, self._kinds[key] = newest
        self._ids[key] = sid
        return sid


def _with_holders(key: Prepared) -> str:
    """The statement's text with a `?` for each slot, cast to its literal's type where a bare one loses it."""
    template, types = key
    bare = (None, NULL_ARGUMENT)
    return template.render({s: "?" if t in bare else f"CAST(? AS {t})" for s, t in zip(template.slots, types)})


def run_template(conn: RawConnection, template: Template, values: dict[str, str]) -> Result:
    """Run one of tique's own statements with slots: prepared on a session that prepares (a PreparingConnection),
    as text on a bare engine connection (recovery, the checkpointer)."""
    if isinstance(conn, PreparingConnection) and PREPARE_PROTOCOL:
        return conn.run(template, values)
    return conn.execute(template.render(values))


def protocol_template(sql: str) -> Template:
    """A Template from SQL whose slots are written ``{name}``, each cast to BIGINT (MonetDB cannot tell the type
    of a bare parameter passed to a C function)."""
    return Template.from_sql(re.sub(r"\{(\w+)\}", lambda m: f"CAST(:{SLOT_PREFIX}{m.group(1)} AS BIGINT)", sql))
