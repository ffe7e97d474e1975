"""From statement text to a plan, once per distinct text: what kind of statement, and its rewritten SQL."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from sqlglot import exp

from tique import compound, ddl_parse, deep
from tique.catalog import Lookup, TableInfo
from tique.database import Database
from tique.engine.base import RawConnection
from tique.errors import (
    DatabaseError,
    NotSupportedError,
    ProgrammingError,
    SeveralStatements,
    engine_syntax_error,
    syntax_error,
)
from tique.known_rows import Learned
from tique.names import NAME, ident, quote, read_names
from tique.params import Params, literal, resolve, scan, value
from tique.prepared import DEALLOCATE
from tique.privileges import Access, access_statement
from tique.rewrite.exact import NOTHING, Decode, exact_read
from tique.rewrite.lists import lifting
from tique.rewrite.parse import Unparsed, parse
from tique.rewrite.point import KeyRead, key_read
from tique.rewrite.reads import PointKeys, ReadOptions, names_read, snapshot_reads
from tique.rewrite.template import Template
from tique.rewrite.values import ParameterFloat, monetdb_string, parameter_text
from tique.rewrite.values_lists import values_as_unions
from tique.rewrite.writes import (
    DeletePlan,
    InsertPlan,
    UpdatePlan,
    check_number,
    plan_delete,
    plan_insert,
    plan_update,
)


@dataclass(frozen=True)
class ReadPlan:
    template: Template
    reads: frozenset[str]
    analytical: bool = False  # some table is read with the analytical formulation: the default optimizer
    point_keys: PointKeys = ()
    decode: Decode = NOTHING  # outputs rewritten to be read exactly (see exact.py)
    key_read: KeyRead | None = None  # one row by its whole key: answered from a row the transaction holds
    learned: Learned = field(default_factory=Learned, compare=False)  # by running it (known_rows.py)
    stored: Template | None = None  # a key read of keys no Cache row has: Storage alone (cache_keys.py)
    names: frozenset[str] | None = None  # the statement's names, when every column it reads is one (names_read)


@dataclass(frozen=True)
class PassThrough:
    """A statement that touches no table of tique's: sent as it is (parameters filled in)."""

    template: Template
    decode: Decode = NOTHING
    sets_schema: bool = False  # SET SCHEMA: the session's schema for unqualified names changes (see cursor.py)
    # a query's tables as written ((schema or None, name)): none was tique's when planned, and if one is after
    # it ran (another session renamed or created it meanwhile), MonetDB answered from tique's view of its latest
    # state, not the transaction's snapshot (Connection._pass_through)
    names: tuple[tuple[str | None, str], ...] = ()


@dataclass(frozen=True)
class Control:
    action: str  # begin | commit | rollback
    chain: bool = False  # AND CHAIN: the next transaction begins at once


@dataclass(frozen=True)
class DDL:
    tree: exp.Expression
    sql: str


@dataclass(frozen=True)
class CopyPlan:
    """COPY INTO a transactional table, as part of the transaction: the engine loads the rows into a temporary
    table of the session (the application's COPY, pointed there), and an INSERT ... SELECT from it writes them
    to the Cache as this transaction's rows, with every key, UNIQUE and FOREIGN KEY check of an INSERT."""

    staging: str  # the temporary table, e.g. tmp.tq_copy_42
    create: str
    copy: str
    insert: InsertPlan


Plan = ReadPlan | PassThrough | Control | DDL | Access | InsertPlan | UpdatePlan | DeletePlan | CopyPlan
WritePlan = InsertPlan | UpdatePlan | DeletePlan | CopyPlan


@dataclass(frozen=True)
class Bound:
    """A plan's parameters, resolved once: each slot's SQL literal (``rendered``) and, for an INSERT of literal
    rows, each slot's Python value (``values``: coerced to the column's type and hashed, not rendered)."""

    rendered: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)


def bind_plan(plan: Plan, parameters: Params) -> Bound:
    """The parameters of ``plan`` as each of its slots takes them. A read of a snapshot (a SELECT, an UPDATE's
    or DELETE's read) compares them with stored values, so -0.0 goes as 0.0 (params.resolve's ``probe``),
    except an UPDATE's SET values, which are stored; INSERT and pass-through statements send them as given."""
    if isinstance(plan, ReadPlan):
        rendered = resolve(plan.template.param_slots, parameters, probe=True)
        held = plan.key_read.held_slots if plan.key_read is not None else _pinned_slots(plan)
        return Bound(rendered, {s: _bound(s, parameters) for s in held})
    if isinstance(plan, PassThrough):
        return Bound(resolve(plan.template.param_slots, parameters))
    if isinstance(plan, UpdatePlan):
        for slot, column in plan.numbers:
            check_number(value(slot, parameters), plan.table.column(column).sql_type, column, plan.table.name)
        rendered = resolve(plan.select.param_slots, parameters, probe=True, keep=plan.stored_slots)
        held = plan.select.param_slots if plan.key_update is not None else _pinned_slots(plan)
        values = {s: _bound(s, parameters) for s in held}
        for slot in plan.text_slots:  # SET <string column> = <float>: the text pymonetdb's literal is stored as
            given = value(slot, parameters)
            if isinstance(given, float):
                text = parameter_text(given)
                rendered[slot] = literal(text)
                if slot in values:
                    values[slot] = text
        return Bound(rendered, values)
    if isinstance(plan, DeletePlan):
        held = plan.row_read.held_slots if plan.row_read is not None else _pinned_slots(plan)
        return Bound(resolve(plan.select.param_slots, parameters, probe=True), {s: _bound(s, parameters) for s in held})
    if isinstance(plan, InsertPlan):
        slots = _insert_slots(plan)
        rendered = resolve(slots, parameters)  # also checks that every value can be quoted
        return Bound(rendered, {s: _bound(s, parameters) for s in slots})
    return Bound()


def _bound(slot: str, parameters: Params) -> Any:
    """A parameter's value as tique stores and compares it itself: a float marked as a parameter, which pymonetdb
    would send as a DECIMAL literal (values.ParameterFloat: '123.0' in a string column)."""
    given = value(slot, parameters)
    return ParameterFloat(given) if type(given) is float else given


def _pinned_slots(plan: ReadPlan | UpdatePlan | DeletePlan) -> tuple[str, ...]:
    """The slots a read pins key columns to (PointKeys): their values choose whether it reads Storage alone
    (Transaction.storage_only)."""
    return tuple(slot for _, slots in plan.point_keys for slot in slots if slot)


def _insert_slots(plan: InsertPlan) -> tuple[str, ...]:
    if plan.rows is not None:
        return tuple(dict.fromkeys(item[1] for row in plan.rows for item in row if item[0] == "s"))
    assert plan.select is not None
    return plan.select.param_slots


_TX_WORDS = {
    "START": "begin",
    "BEGIN": "begin",
    "COMMIT": "commit",
    "END": "commit",
    "ROLLBACK": "rollback",
    "ABORT": "rollback",
}
_SAVEPOINTS_REFUSED = (
    "tique does not support savepoints: {sql!r} was not run. A failed statement already has no effect and "
    "leaves the transaction usable; to undo more, roll the whole transaction back"
)


# MonetDB's views and functions whose reading crashes its kernel as tique runs it (_refuse_sessions)
_CRASHING = ("sessions", "queue")
_SYS_SESSIONS = re.compile(rf"\bsys\s*\.\s*\"?({'|'.join(_CRASHING)})\b", re.I)
_USER_PREPARED = re.compile(r"\s*(?:PREPARE|EXEC|EXECUTE)\b", re.I)
_COMMENT = re.compile(r"/\*.*?\*/|--[^\n]*", re.S)


def _without_comments(sql: str) -> str:
    """``sql`` without its comments, for telling a control statement (which holds no string) by its words; a
    statement with a quote keeps only its leading comments dropped."""
    if "'" not in sql and '"' not in sql:
        return _COMMENT.sub(" ", sql)
    while True:
        head = _COMMENT.match(sql.lstrip())
        if head is None:
            return sql
        sql = sql.lstrip()[head.end() :]


def control_statement(sql: str) -> Control | None:
    """The transaction control statement ``sql`` is, in any spelling SQL or MonetDB accepts; None if it is
    none. Savepoints (SAVEPOINT, RELEASE, ROLLBACK TO) raise NotSupportedError: tique cannot undo rows a
    transaction already sent to the engine, and the engine's own savepoints would not touch tique's."""
    words = _without_comments(sql).strip().rstrip(";").upper().split()
    if not words:
        return None
    first, rest = words[0], words[1:]
    if first in ("SAVEPOINT", "RELEASE") or (first == "ROLLBACK" and "TO" in rest[:2]):
        raise NotSupportedError(_SAVEPOINTS_REFUSED.format(sql=sql.strip()))
    if first == "SET" and (rest[:1] == ["TRANSACTION"] or rest[:2] == ["LOCAL", "TRANSACTION"]):
        # MonetDB opens a transaction in the session for SET [LOCAL] TRANSACTION: sent on, the next COMMIT's rows
        # and record would go into it and never commit. Every tique transaction is snapshot isolated: a begin
        _refuse_read_only(sql, rest)
        return Control("begin")
    action = _TX_WORDS.get(first)
    if action is None:
        return None
    if action == "begin":  # START TRANSACTION [modes], BEGIN [WORK | TRANSACTION]: every snapshot is SI
        if first == "START" and rest and rest[0] != "TRANSACTION":
            return None
        _refuse_read_only(sql, rest)
        return Control("begin")
    if rest and rest[0] in ("WORK", "TRANSACTION"):
        rest = rest[1:]
    if rest in ([], ["AND", "NO", "CHAIN"]):
        return Control(action)
    if rest == ["AND", "CHAIN"]:
        return Control(action, chain=True)
    raise ProgrammingError(
        f"cannot read the transaction statement {sql.strip()!r}: tique takes COMMIT | END | ROLLBACK | ABORT "
        "[WORK | TRANSACTION] [AND [NO] CHAIN]"
    )


def _refuse_read_only(sql: str, words: list[str]) -> None:
    """READ ONLY is refused, as MonetDB 11.41 refuses it: begun, its writes would run, unasked."""
    if "READ ONLY" in " ".join(words).replace(",", " "):
        raise NotSupportedError(
            f"{sql.strip()!r}: tique has no read-only transactions (nor has MonetDB 11.41); start a transaction "
            "without READ ONLY: its reads are snapshot isolated all the same",
            "0A000",
        )


def plan_statement(db: Database, conn: RawConnection, sql: str, with_params: bool, options: ReadOptions) -> Plan:
    key = (sql, with_params, options, db.catalog.version)
    plan = db.plans.get(key)
    if plan is None:

        def lifted() -> Plan:
            with lifting():  # long IN lists skip parsing and rewriting (rewrite/lists.py)
                return _plan(db, conn, sql, with_params, options)

        plan = deep.planned(lifted, "the statement")
        if not isinstance(plan, (DDL, Control)):
            db.plans.put((sql, with_params, options, db.catalog.version), plan)
    return plan


# MonetDB syntax sqlglot cannot read, around a statement it can: EXPLAIN / PLAN before a query, SAMPLE after it
_PREFIXED = re.compile(r"^\s*(EXPLAIN|PLAN)\s+(?=\S)", re.I)
_SAMPLED = re.compile(r"\s+(SAMPLE\s+(?:\d+(?:\.\d*)?|\.\d+)(?:\s+SEED\s+\d+)?)\s*;?\s*$", re.I)


def _wrapped(plan: Plan, prefix: str, suffix: str, what: str) -> Plan:
    """The plan of the statement inside EXPLAIN / PLAN / SAMPLE, with the text around it put back: the engine
    then explains or samples the rewritten statement, i.e. the snapshot the transaction reads."""
    if not isinstance(plan, (ReadPlan, PassThrough)) or (isinstance(plan, PassThrough) and plan.sets_schema):
        raise NotSupportedError(
            f"{what} is supported by tique for queries only; for a write, {what} the SELECT that finds its rows",
            "0A000",
        )
    parts = list(plan.template.parts)
    parts[0], parts[-1] = prefix + parts[0], parts[-1] + suffix
    template = Template(tuple(parts), plan.template.slots)
    if isinstance(plan, ReadPlan):  # the engine explains or samples it: never answered from a held row
        return replace(plan, template=template, key_read=None, learned=Learned(), stored=None)
    return replace(plan, template=template)


# NEXT VALUE FOR s, which sqlglot cannot read: planned as a function call marker, then put back in the SQL sent
_NEXT_VALUE = re.compile(r"\bNEXT\s+VALUE\s+FOR\s+((?:\"[^\"]+\"|\w+)(?:\s*\.\s*(?:\"[^\"]+\"|\w+))?)", re.I)
_NEXT_MARKER = re.compile(r"tq_next_value_for\('((?:[^']|'')*)'\)", re.I)


def _with_sequences(plan: Plan) -> Plan:
    if not isinstance(plan, (ReadPlan, PassThrough)):
        raise NotSupportedError(
            "NEXT VALUE FOR in a write to a tique table is not supported: run SELECT NEXT VALUE FOR first and pass "
            "the value as a parameter, or declare the key column as a generated key (DEFAULT / AUTO_INCREMENT)",
            "0A000",
        )
    parts = tuple(
        _NEXT_MARKER.sub(lambda m: "NEXT VALUE FOR " + m.group(1).replace("''", "'"), p) for p in plan.template.parts
    )
    return replace(plan, template=Template(parts, plan.template.slots))


# MonetDB's export: COPY <query> INTO {'file' | STDOUT} [...]
_COPY_SELECT = re.compile(r"\s*COPY\s+(?=(?:\(\s*)*(?:SELECT|WITH)\b)", re.I)


def _plan_export(
    db: Database, conn: RawConnection, sql: str, start: int, with_params: bool, options: ReadOptions
) -> Plan:
    """COPY <query> INTO 'file' ...: the query planned as any read (over tique tables, the transaction's snapshot
    with its own writes), the export's text put back around the rewritten query; over MonetDB's own tables, the
    statement as written (sqlglot reads PostgreSQL's COPY, and printed it as COPY ... WITH)."""
    into = None
    depth = 0
    found = [(at, text) for at, text in compound.tokens(sql) if at >= start and compound.significant(text)]
    for i, (at, text) in enumerate(found):
        depth += (text == "(") - (text == ")")
        following = found[i + 1][1] if i + 1 < len(found) else ""
        if depth == 0 and text.upper() == "INTO" and (following.startswith("'") or following.upper() == "STDOUT"):
            into = at
    if into is None:
        raise ProgrammingError(
            f"COPY <query> INTO: cannot find INTO 'file' or INTO STDOUT after the query in {sql.strip()[:80]!r}; "
            "MonetDB exports with COPY SELECT ... INTO 'file' [USING DELIMITERS ...]",
            "42000",
        )
    inner = _plan(db, conn, sql[start:into], with_params, replace(options, exact_outputs=False))
    if isinstance(inner, PassThrough) and not with_params and not inner.sets_schema:
        return PassThrough(Template((sql,), ()))
    return _wrapped(inner, sql[:start], " " + sql[into:], "COPY ... INTO")


_COPY_INTO = re.compile(
    rf"\s*COPY\s+(?:\d+\s+(?:OFFSET\s+\d+\s+)?RECORDS\s+)?(?:BINARY\s+)?INTO\s+({NAME}(?:\.{NAME})?)",
    re.I,
)


def _refuse_sessions(tree: exp.Expression, schema: str, lookup: Lookup, temporary: frozenset[str]) -> None:
    """MonetDB 11.41's embedded kernel crashes (the whole process, or ``tique serve`` with every client) on reading
    sys.sessions, its view or its function (measured: plain monetdbe too), and sys.queue (measured: with tique's
    sessions open, embedded and served; a review found it): refused by name instead. A CTE or a temporary table of
    that name, or a function of another schema, is not it."""
    ctes = {c.alias.lower() for c in tree.find_all(exp.CTE) if c.alias}
    created = tree.find(exp.Table) if isinstance(tree, exp.Create) else None  # a new table's name reads nothing
    names = [
        (ident(t.args.get("db")) or schema, ident(t))
        for t in tree.find_all(exp.Table)
        if t is not created and (t.args.get("db") or (ident(t) not in ctes and ident(t) not in temporary))
    ]
    for f in tree.find_all(exp.Anonymous):
        called = str(f.this).lower()
        if called in _CRASHING and (not isinstance(f.parent, exp.Dot) or ident(f.parent.this) == "sys"):
            raise _sessions_refused(called)
    for s, n in names:
        if s == "sys" and n in _CRASHING and lookup("sys", n) is None:
            raise _sessions_refused(n)


def _sessions_refused(name: str) -> NotSupportedError:
    return NotSupportedError(
        f"sys.{name} is refused by tique: reading it crashes MonetDB 11.41's embedded kernel (the whole process, "
        "or tique serve with every client)",
        "0A000",
    )


def _plan(db: Database, conn: RawConnection, sql: str, with_params: bool, options: ReadOptions) -> Plan:
    control = control_statement(sql)
    if control:
        return control
    access = access_statement(sql)  # CREATE USER, GRANT/REVOKE: tique adds to them (privileges.py)
    if access:
        return access
    if DEALLOCATE.match(sql):  # no SQL parser reads it; tique's session wrapper keeps its own statements in step
        return PassThrough(Template.from_sql(sql))
    if _USER_PREPARED.match(_without_comments(sql)):
        raise NotSupportedError(
            f"tique does not run PREPARE or EXEC: {sql.strip()!r} was not run. Pass parameters to cursor.execute "
            "(tique prepares a statement it sees again itself); on this session MonetDB numbers tique's own "
            "prepared statements with yours, so an EXEC could run one of tique's",
            "0A000",
        )
    prefixed = _PREFIXED.match(sql)
    if prefixed:
        word = prefixed.group(1).upper()
        return _wrapped(_plan(db, conn, sql[prefixed.end() :], with_params, options), f"{word} ", "", word)
    sampled = _SAMPLED.search(sql)
    if sampled and sql.lstrip()[:1] in ("S", "s", "W", "w", "("):  # a query: SELECT, WITH or parenthesized
        inner = _plan(db, conn, sql[: sampled.start()], with_params, options)
        return _wrapped(inner, "", f" {sampled.group(1)}", "SAMPLE")
    if _NEXT_VALUE.search(sql):
        marked = _NEXT_VALUE.sub(lambda m: "tq_next_value_for('" + m.group(1).replace("'", "''") + "')", sql)
        planned = _plan(db, conn, marked, with_params, options)
        if isinstance(planned, DDL):  # DEFAULT NEXT VALUE FOR s (catalog.SequenceDefault); sent as written
            return DDL(planned.tree, sql)
        return _with_sequences(planned)

    seen: dict[tuple[str, str], TableInfo | None] = {}

    def lookup(schema: str | None, name: str) -> TableInfo | None:
        if schema is None and name in options.temporary:  # MonetDB's order: the session's temporary table first
            return None
        at = (schema or options.schema or db.default_schema, name)
        if at not in seen:  # each pass looks tables up again: a small table's probe (catalog.probed) once
            info = db.catalog.lookup(conn, *at)
            seen[at] = db.catalog.probed(conn, info) if info is not None else None
        return seen[at]

    created = compound.compound_start(sql)
    if created:  # MonetDB's own DDL, its body's semicolons and all (compound.py)
        compound.check_one(sql, created.start())
        crashing = _SYS_SESSIONS.search(sql)
        if crashing:  # its body would crash the kernel when run (_refuse_sessions)
            raise _sessions_refused(crashing.group(1).lower())
        db.catalog.refresh(conn)  # never pass a body over a table another process made tique's meanwhile
        tique_tables = {(i.schema, i.name) for i in db.catalog.all() if i.kind != "plain"}
        compound.refuse_tique_tables(sql, created.group(1), tique_tables, options.schema or db.default_schema)
        return DDL(exp.Command(this="CREATE", expression=exp.Literal.string(sql)), sql)
    analyzed = ddl_parse.ANALYZE.match(sql)
    if analyzed and analyzed.group(2):
        info = lookup(*read_names(f"{analyzed.group(1)}.{analyzed.group(2)}"))
        if info is not None and info.kind == "tx":  # its Storage and Cache are analyzed (ddl.py)
            return DDL(exp.Command(this="ANALYZE", expression=exp.Literal.string(sql)), sql)

    exported = _COPY_SELECT.match(sql)
    if exported:
        return _plan_export(db, conn, sql, exported.end(), with_params, options)

    copied = _COPY_INTO.match(sql)
    if copied:
        parts = read_names(copied.group(1))
        info = lookup(parts[0] if len(parts) == 2 else None, parts[-1])
        if info is not None and info.kind == "tx":
            return _plan_copy(sql, copied, info, lookup, options)
        if not with_params:  # into a table of MonetDB's own, from a file or STDIN: as written (sqlglot reads
            return PassThrough(Template((sql,), ()))  # PostgreSQL's COPY, not MonetDB's)

    try:
        trees = parse(sql, with_params)
    except Unparsed as exc:
        if len(compound.statements_of(sql)) > 1:  # each is planned alone (Cursor.execute)
            raise SeveralStatements("execute() takes one statement; send them one by one", "42000") from None
        raise engine_verdict(conn, sql, with_params, exc, lambda name: lookup(None, name) is not None) from None
    if len(trees) != 1:
        raise SeveralStatements(f"execute() takes one statement, got {len(trees)}; send them one by one")
    tree = trees[0]
    _refuse_sessions(tree, options.schema or db.default_schema, lookup, options.temporary)

    if isinstance(tree, exp.TruncateTable):
        truncate = truncate_as_delete(tree, lookup)
        if truncate is not None:
            return plan_delete(truncate, lookup, options)
    setting = str(tree.expression or "").strip().upper() if isinstance(tree, exp.Command) else ""
    if setting.startswith("SCHEMA") and str(tree.this).upper() == "SET":
        return PassThrough(Template.from_tree(tree), sets_schema=True)
    if isinstance(tree, (exp.Create, exp.Drop, exp.Alter, exp.TruncateTable, exp.Comment)) or (
        isinstance(tree, exp.Command) and str(tree.this).upper() in ("CREATE", "DROP", "ALTER", "TRUNCATE")
    ):
        return DDL(tree, sql)
    tree = values_as_unions(tree)  # MonetDB misreads some VALUES tables (rewrite/values_lists.py)
    tree = _with_inside(tree, lookup)
    if any(_managed(lookup, t) for t in tree.find_all(exp.Table)):
        _refuse_unreadable_strings(tree)
    try:
        if isinstance(tree, exp.Insert):
            return plan_insert(tree, lookup, options)
        if isinstance(tree, exp.Update):
            return plan_update(tree, lookup, options)
        if isinstance(tree, exp.Delete):
            return plan_delete(tree, lookup, options)
    except LookupError:  # a write to a table tique does not manage
        if not any(_managed(lookup, t) for t in tree.find_all(exp.Table)):
            return PassThrough(Template.from_tree(tree))
        # it reads tique tables: as the transaction's snapshot (with its own writes sent first), not as MonetDB's
        # views of them (the latest committed state); the engine writes the plain table as the statement says
        found = snapshot_reads(tree, lookup, options)
        return ReadPlan(Template.from_tree(found.tree), frozenset(found.reads), found.analytical, found.point_keys)
    if isinstance(tree, exp.Merge):
        if not any(_managed(lookup, t) for t in tree.find_all(exp.Table)):
            return PassThrough(Template.from_tree(tree))  # MonetDB's own MERGE on its own tables
        target = tree.this if isinstance(tree.this, exp.Table) else tree.this.find(exp.Table)
        if target is not None and not _managed(lookup, target):
            # into MonetDB's own table, from tique tables: reading their snapshot, as a plain table's INSERT ...
            # SELECT does (its target is no snapshot: snapshot_reads skips a write's target)
            found = snapshot_reads(tree, lookup, options)
            return ReadPlan(Template.from_tree(found.tree), frozenset(found.reads), found.analytical, found.point_keys)
        raise NotSupportedError(
            "MERGE on a tique table is not supported by tique: run its parts as statements in one transaction "
            "(UPDATE t SET ... FROM s WHERE ..., then INSERT INTO t SELECT ... FROM s WHERE NOT EXISTS (...)); the "
            "transaction is atomic and snapshot isolated as the MERGE would be"
        )
    if isinstance(tree, (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.With)) or tree.find(exp.Select):
        held = key_read(tree, lookup, options)  # before the tree changes below
        names = names_read(tree, lookup)
        decode = exact_read(tree, lookup) if options.exact_outputs else NOTHING  # before tables become snapshots
        if tree.find(exp.Lateral) and any(_managed(lookup, t) for t in tree.find_all(exp.Table)):
            raise NotSupportedError(
                "LATERAL over a tique table is not supported by tique: MonetDB 11.41 answers a LATERAL subquery over "
                "a snapshot wrongly (rows deleted in the snapshot came back). Write it as a join with GROUP BY, or as "
                "a correlated subquery in the SELECT list or WHERE"
            )
        if tree.find(exp.TableSample) and any(_managed(lookup, t) for t in tree.find_all(exp.Table)):
            raise NotSupportedError(
                "TABLESAMPLE is not supported by tique (nor by MonetDB 11.41): sample with MonetDB's SAMPLE clause "
                "at the end of the query (SELECT ... FROM t SAMPLE 100, or SAMPLE 0.1 for a fraction)"
            )
        plain = tree.copy() if held is not None and held.stored is not None else None
        found = snapshot_reads(tree, lookup, options)
        if not found.reads:
            return PassThrough(Template.from_tree(tree), decode, names=tables_named(tree))
        stored = None
        if plain is not None:
            stored = Template.from_tree(snapshot_reads(plain, lookup, replace(options, cached=False)).tree)
        return ReadPlan(
            Template.from_tree(found.tree), frozenset(found.reads), found.analytical, found.point_keys, decode, held,
            stored=stored, names=names,
        )  # fmt: skip
    return PassThrough(Template.from_tree(tree))


def _with_inside(tree: exp.Expression, lookup: Lookup) -> exp.Expression:
    """A WITH before a write of a tique table, which tique plans only inside the write: ``WITH x AS (...) INSERT
    INTO t SELECT ... FROM x`` as ``INSERT INTO t WITH x AS (...) SELECT ...`` (the same statement to MonetDB);
    before an UPDATE or DELETE, each reference to a CTE becomes its query as a subquery (MonetDB runs both forms;
    a non-recursive CTE is that query). WITH RECURSIVE there is refused, naming what to write instead."""
    if not isinstance(tree, (exp.Insert, exp.Update, exp.Delete)) or tree.args.get("with_") is None:
        return tree
    target = tree.this if isinstance(tree.this, exp.Table) else tree.this.find(exp.Table)
    if target is None or not _managed(lookup, target):
        return tree  # a write to MonetDB's own table
    with_ = tree.args["with_"]
    query = tree.expression if isinstance(tree, exp.Insert) else None
    if isinstance(query, exp.Query) and query.args.get("with_") is None:
        tree.set("with_", None)
        query.set("with_", with_)
        return tree
    if isinstance(tree, (exp.Update, exp.Delete)) and not with_.args.get("recursive"):
        return _ctes_inlined(tree, target, with_)
    raise NotSupportedError(
        f"WITH {'RECURSIVE ' if with_.args.get('recursive') else ''}before {tree.key.upper()} on a tique table is not "
        "supported by tique: put the WITH's query where it is used (a subquery in the WHERE or FROM), or for INSERT "
        "after INSERT INTO t (INSERT INTO t WITH x AS (...) SELECT ...)"
    )


def _ctes_inlined(tree: exp.Expression, target: exp.Table, with_: exp.With) -> exp.Expression:
    """``tree`` without its WITH, each reference to a CTE (an unqualified name, not the write's target) replaced
    by the CTE's query, a later CTE's references to earlier ones first. A nested WITH that defines one of the
    names again would shadow it in its scope: refused rather than guessed."""
    tree.set("with_", None)
    bodies: dict[str, tuple[exp.Expression, list[exp.Identifier]]] = {}

    def inlined(node: exp.Expression) -> exp.Expression:
        for table in list(node.find_all(exp.Table)):
            name = ident(table)
            if table is target or table.args.get("db") or name not in bodies:
                continue
            body, columns = bodies[name]
            alias = table.args.get("alias")
            # the reference's own name, quoted as written ("T" is not t, which may be the write's target)
            alias_name = alias.this if alias is not None and alias.this else table.this
            table.replace(
                exp.Subquery(
                    this=body.copy(),
                    alias=exp.TableAlias(this=alias_name.copy(), columns=[c.copy() for c in columns]),
                )
            )
        return node

    for cte in with_.expressions:
        alias = cte.args["alias"]
        body = inlined(cte.this.copy())
        bodies[ident(alias.this)] = (body, list(alias.args.get("columns") or []))
    if any(ident(cte.args["alias"].this) in bodies for cte in tree.find_all(exp.CTE)):
        raise NotSupportedError(
            f"WITH before {tree.key.upper()} on a tique table, whose subquery defines one of its names again, is "
            "not supported by tique: give the inner WITH's query another name"
        )
    return inlined(tree)


_COLUMN_LIST = re.compile(r"\s*\(([^()]*)\)")


def _plan_copy(
    sql: str,
    copied: re.Match[str],
    info: TableInfo,
    lookup: Lookup,
    options: ReadOptions,
) -> CopyPlan:
    """COPY [n RECORDS] INTO t [(columns)] FROM ...: the engine reads the source as it would for t (file, STDIN
    data, delimiters, NULL marker unchanged), into a staging table with t's column types."""
    listed = _COLUMN_LIST.match(sql, copied.end())
    names = (
        [n.strip()[1:-1] if n.strip().startswith('"') else n.strip().lower() for n in listed.group(1).split(",")]
        if listed
        else list(info.column_names)
    )
    columns = [info.column(n) for n in names]  # an unknown column says which
    staging = f"tq_copy_{info.table_id}"
    typed = ", ".join(f"{quote(c.name)} {c.sql_type}" for c in columns)
    cols = ", ".join(quote(c.name) for c in columns)
    create = f"CREATE LOCAL TEMPORARY TABLE {staging} ({typed}) ON COMMIT PRESERVE ROWS"
    copy = sql[: copied.start(1)] + f"tmp.{staging}" + sql[copied.end(1) :]
    insert_sql = f"INSERT INTO {quote(info.schema)}.{quote(info.name)} ({cols}) SELECT {cols} FROM tmp.{staging}"
    tree = parse(insert_sql, False)[0]
    assert isinstance(tree, exp.Insert)
    return CopyPlan(f"tmp.{staging}", create, copy, plan_insert(tree, lookup, options))


def _refuse_unreadable_strings(tree: exp.Expression) -> None:
    """A DataError for a string literal whose escapes make bytes that are not UTF-8 (values.monetdb_string): tique
    reads the literals of a row it stores itself, but a literal in an expression (UPDATE SET s = '\\xe9' || s, a
    WHERE) goes to the engine, which would store or compare a value it cannot read back consistently."""
    for node in tree.find_all(exp.Literal):
        if node.is_string and "\\" in node.this:
            monetdb_string(node.this)


def tables_named(tree: exp.Expression) -> tuple[tuple[str | None, str], ...]:
    """The tables a query names, as MonetDB resolves them ((schema or None, name)); a WITH query's own names are
    not tables."""
    ctes = {ident(c.args["alias"].this) for c in tree.find_all(exp.CTE) if c.args.get("alias")}
    found = ((ident(t.args.get("db")) or None, ident(t)) for t in tree.find_all(exp.Table))
    return tuple(dict.fromkeys(n for n in found if n[0] is not None or n[1] not in ctes))


def _managed(lookup: Lookup, table: exp.Table) -> bool:
    """Is ``table`` one of tique's (a transactional table or a view of tique's)?"""
    info = lookup(ident(table.args.get("db")) or None, ident(table))
    return info is not None and info.kind != "plain"


def truncate_as_delete(tree: exp.TruncateTable, lookup: Lookup) -> exp.Delete | None:
    """TRUNCATE of a transactional table is a DELETE of every row the transaction sees (tique/ddl_views.py);
    None when it names no table of tique's."""
    tables = list(tree.expressions)
    infos = [lookup(ident(t.args.get("db")) or None, ident(t)) for t in tables]
    if not any(i is not None and i.kind in ("tx", "view") for i in infos):
        return None
    if len(tables) != 1 or infos[0] is None or infos[0].kind != "tx":
        raise NotSupportedError(
            "TRUNCATE of several tables, or of a view, is not supported by tique: TRUNCATE one table at a time"
        )
    if any(tree.args.get(option) for option in ("identity", "option", "cluster", "partition")):
        raise NotSupportedError(
            "TRUNCATE options (RESTART IDENTITY, CASCADE) are not supported by tique: TRUNCATE resets no counter"
        )
    return exp.Delete(this=tables[0].copy())


def sent_text(sql: str, with_params: bool) -> tuple[str, list[int]]:
    """The statement as PREPARE gets it (each placeholder a ``?``, ``%%`` a ``%``, as pymonetdb formats them), and
    for each of its characters (and its end) the position in the user's text it came from."""
    if not with_params:
        return sql, list(range(len(sql) + 1))
    found = scan(sql)
    cuts = sorted([(p.start, p.end, "?") for p in found.placeholders] + [(i, i + 2, "%") for i in found.percents])
    out: list[str] = []
    origin: list[int] = []
    pos = 0
    for start, end, replacement in cuts:
        out.append(sql[pos:start])
        origin += range(pos, start)
        out.append(replacement)
        origin.append(start)
        pos = end
    out.append(sql[pos:])
    origin += range(pos, len(sql) + 1)
    return "".join(out), origin


def unclosed_quote(sql: str, at: int) -> ProgrammingError:
    what = "string literal" if sql[at] == "'" else "quoted identifier"
    return ProgrammingError(
        f"syntax error: unclosed quote: the {what} opened by {sql[at]} at character {at + 1} "
        f"({sql[at : at + 20]!r}) never ends; close it (a {sql[at]} inside it is written twice) in the statement "
        f"{sql!r}",
        "42000",
    )


def engine_verdict(
    conn: RawConnection,
    sql: str,
    with_params: bool,
    parse_error: Exception,
    managed: Callable[[str], bool] = lambda name: False,
) -> Exception:
    """sqlglot could not parse the statement: let MonetDB say what is wrong, in its own words and position,
    without running anything (PREPARE only compiles). A syntax error is restated for the user's statement; any
    other verdict means MonetDB can read what tique's parser cannot, so both are reported."""
    quote = scan(sql).unclosed
    if quote is not None:
        return unclosed_quote(sql, quote)
    text, origin = sent_text(sql, with_params)
    try:
        conn.execute(f"PREPARE {text}")
    except DatabaseError as engine_error:
        message = str(engine_error)
        if engine_syntax_error(engine_error):
            return syntax_error(sql, message, "prepare ", origin)
        missing = re.search(r"no such table '([^']+)'", message) if engine_error.sqlstate == "42S02" else None
        if missing and managed(missing.group(1)):  # MonetDB read it, but tique's tables exist only rewritten
            return NotSupportedError(
                f"tique's SQL parser cannot read this statement, so it cannot run it on tique's table "
                f"{missing.group(1)!r}; rephrase it without MonetDB-only syntax. Parser said: {parse_error}",
                "0A000",
            )
        return type(engine_error)(
            f"{message} (tique's SQL parser could not read the statement either: {parse_error})",
            engine_error.sqlstate,
        )
    except Exception as other:
        return other
    try:
        conn.execute("DEALLOCATE PREPARE ALL")
    except Exception:
        pass
    return NotSupportedError(
        f"tique's SQL parser cannot read this statement, though MonetDB can; rephrase it. Parser said: {parse_error}",
        "0A000",
    )
