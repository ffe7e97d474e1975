"""From statement text to a plan, once per distinct text: what kind of statement, and its rewritten SQL."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from tique.catalog import TableInfo
from tique.database import Database
from tique.engine.base import RawConnection
from tique.errors import NotSupportedError, ProgrammingError
from tique.rewrite.exact import NOTHING, Decode, exact_read
from tique.rewrite.parse import parse
from tique.rewrite.reads import PointKeys, ReadOptions, snapshot_reads
from tique.rewrite.template import Template
from tique.rewrite.writes import DeletePlan, InsertPlan, UpdatePlan, plan_delete, plan_insert, plan_update


@dataclass(frozen=True)
class ReadPlan:
    template: Template
    reads: frozenset[str]
    analytical: bool = False  # some table is read with the analytical formulation: the default optimizer
    point_keys: PointKeys = ()
    decode: Decode = NOTHING  # outputs rewritten to be read exactly (see exact.py)


@dataclass(frozen=True)
class PassThrough:
    """A statement that touches no table of tique's: sent as it is (parameters filled in)."""

    template: Template
    decode: Decode = NOTHING


@dataclass(frozen=True)
class Control:
    action: str  # begin | commit | rollback


@dataclass(frozen=True)
class DDL:
    tree: exp.Expression
    sql: str


Plan = ReadPlan | PassThrough | Control | DDL | InsertPlan | UpdatePlan | DeletePlan

_TX_WORDS = {
    "START": "begin",
    "BEGIN": "begin",
    "COMMIT": "commit",
    "END": "commit",
    "ROLLBACK": "rollback",
    "ABORT": "rollback",
}


def control_action(sql: str) -> str | None:
    words = sql.strip().rstrip(";").split()
    if not words:
        return None
    first = words[0].upper()
    if first in _TX_WORDS and (len(words) == 1 or words[1].upper() in ("TRANSACTION", "WORK")):
        return _TX_WORDS[first]
    return None


def plan_statement(db: Database, conn: RawConnection, sql: str, with_params: bool, options: ReadOptions) -> Plan:
    key = (sql, with_params, options, db.catalog.version)
    plan = db.plans.get(key)
    if plan is None:
        plan = _plan(db, conn, sql, with_params, options)
        if not isinstance(plan, (DDL, Control)):
            db.plans.put((sql, with_params, options, db.catalog.version), plan)
    return plan


def _plan(db: Database, conn: RawConnection, sql: str, with_params: bool, options: ReadOptions) -> Plan:
    action = control_action(sql)
    if action:
        return Control(action)
    try:
        trees = parse(sql, with_params)
    except ProgrammingError as exc:
        raise engine_verdict(conn, sql, with_params, exc) from None
    if len(trees) != 1:
        raise ProgrammingError(f"execute() takes one statement, got {len(trees)}; send them one by one")
    tree = trees[0]

    def lookup(schema: str | None, name: str) -> TableInfo | None:
        return db.catalog.lookup(conn, schema or db.default_schema, name)

    if isinstance(tree, (exp.Create, exp.Drop, exp.Alter, exp.TruncateTable)) or (
        isinstance(tree, exp.Command) and str(tree.this).upper() in ("CREATE", "DROP", "ALTER", "TRUNCATE")
    ):
        return DDL(tree, sql)
    try:
        if isinstance(tree, exp.Insert):
            return plan_insert(tree, lookup, options)
        if isinstance(tree, exp.Update):
            return plan_update(tree, lookup, options)
        if isinstance(tree, exp.Delete):
            return plan_delete(tree, lookup, options)
    except LookupError:
        return PassThrough(Template.from_tree(tree))  # a write to a table tique does not manage
    if isinstance(tree, exp.Merge):
        raise NotSupportedError("MERGE is not supported by tique")
    if isinstance(tree, (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.With)) or tree.find(exp.Select):
        decode = exact_read(tree, lookup)  # typed from the catalog before tables become snapshots
        found = snapshot_reads(tree, lookup, options)
        if not found.reads:
            return PassThrough(Template.from_tree(tree), decode)
        return ReadPlan(
            Template.from_tree(found.tree), frozenset(found.reads), found.analytical, found.point_keys, decode
        )
    return PassThrough(Template.from_tree(tree))


def engine_verdict(conn: RawConnection, sql: str, with_params: bool, parse_error: Exception) -> Exception:
    """sqlglot could not parse the statement: let MonetDB say what is wrong, in its own words and position,
    without running anything (PREPARE only compiles)."""
    import re

    from tique.rewrite.parse import number_placeholders

    text = re.sub(r"%\((\w+)\)s", "?", number_placeholders(sql)) if with_params else sql
    try:
        conn.execute(f"PREPARE {text}")
    except ProgrammingError as engine_error:
        return engine_error
    except Exception as other:
        return other
    try:
        conn.execute("DEALLOCATE PREPARE ALL")
    except Exception:
        pass
    return NotSupportedError(
        f"tique's SQL parser cannot read this statement, though MonetDB can; rephrase it. Parser said: {parse_error}"
    )
