"""Golden SQL of the rewriter, without an engine: tique.rewrite's functions over a catalog built in memory.

Each case rewrites one statement and compares the SQL tique would send (parameter and snapshot slots shown as
``:p0``, ``:sts``, ``:txid``; pretty-printed through sqlglot, so only a change of meaning or shape shows) with
tests/golden/rewrite/<case>.sql. After an intended change of the rewriter, regenerate the files and read the diff:

    TIQUE_UPDATE_GOLDEN=1 python -m pytest tests/test_rewrite_golden.py
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlglot

from tique.catalog import ROWID, ColumnSpec, TableInfo
from tique.rewrite.dialect import MonetDB
from tique.rewrite.exact import exact_read
from tique.rewrite.parse import parse
from tique.rewrite.reads import ReadOptions, snapshot_reads
from tique.rewrite.template import STS, TXID, Template
from tique.rewrite.writes import DeletePlan, InsertPlan, UpdatePlan, plan_delete, plan_insert, plan_update

GOLDEN = Path(__file__).resolve().parent / "golden" / "rewrite"
UPDATE = os.environ.get("TIQUE_UPDATE_GOLDEN") == "1"


def table(
    table_id: int, name: str, columns: list[tuple[str, str]], key: tuple[str, ...], kind: str = "tx"
) -> TableInfo:
    return TableInfo(
        table_id,
        "sys",
        name,
        kind,
        tuple(ColumnSpec(n, t, n in key) for n, t in columns),
        key,
        data_schema="tique_data",
        data_base=f"sys__{name}",
    )


TABLES = {
    "accounts": table(1, "accounts", [("id", "INT"), ("owner", "VARCHAR(20)"), ("bal", "INT")], ("id",)),
    "orders": table(2, "orders", [("o_id", "INT"), ("o_acc", "INT"), ("amount", "DECIMAL(10,2)")], ("o_id",)),
    "stock": table(3, "stock", [("w", "INT"), ("i", "INT"), ("qty", "INT")], ("w", "i")),
    "notes": table(4, "notes", [("body", "VARCHAR(100)")], (ROWID,), kind="plain"),  # '-- tique: plain'
}


def lookup(schema: str | None, name: str) -> TableInfo | None:
    """What Catalog.lookup answers for the session's schema ``sys``; MonetDB's own tables are not tique's."""
    return TABLES.get(name) if schema in (None, "sys") else None


def shown(template: Template) -> str:
    """The statement as sent, slots shown as named parameters, normalised by sqlglot."""
    sql = template.render({s: f"%({s})s" for s in template.slots})
    return sqlglot.transpile(sql, read=MonetDB, write=MonetDB, pretty=True)[0] + "\n"


def check_golden(case: str, sql: str) -> None:
    path = GOLDEN / f"{case}.sql"
    if UPDATE:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        path.write_text(sql, encoding="utf-8")
    assert path.exists(), f"no golden file {path}: run with TIQUE_UPDATE_GOLDEN=1 to write it"
    assert sql == path.read_text(encoding="utf-8"), f"{case}: rewritten SQL differs from {path}"


def read(sql: str) -> tuple[Template, frozenset[str], tuple[object, ...]]:
    tree = parse(sql, True)[0]
    exact_read(tree, lookup)  # as statements.py plans a query: typed from the catalog before the rewrite
    found = snapshot_reads(tree, lookup, ReadOptions())
    return Template.from_tree(found.tree), frozenset(found.reads), found.point_keys


def test_point_read_by_full_key() -> None:
    """A read by the whole key reads Storage, committed Cache versions and the transaction's own versions of
    that key only, and says which parameters pin it (a pending write of another key need not be flushed)."""
    template, reads, point = read("SELECT qty FROM stock WHERE w = %s AND i = %s")
    assert reads == {"sys.stock"}
    assert point == (("sys.stock", ("p0", "p1")),)
    assert {STS, TXID, "p0", "p1"} <= set(template.slots)
    check_golden("point_read", shown(template))


def test_range_read() -> None:
    template, reads, point = read("SELECT id, bal FROM accounts WHERE bal BETWEEN %s AND %s ORDER BY id")
    assert reads == {"sys.accounts"} and point == ()
    assert STS in template.slots
    check_golden("range_read", shown(template))


def test_join_of_two_tique_tables() -> None:
    template, reads, _ = read("SELECT a.owner, o.amount FROM accounts AS a JOIN orders AS o ON o.o_acc = a.id")
    assert reads == {"sys.accounts", "sys.orders"}
    check_golden("join", shown(template))


def test_not_in_subquery() -> None:
    """NOT IN over a tique table: both tables become snapshots, the subquery's in the LEFT JOIN anti-join form."""
    template, reads, _ = read("SELECT id FROM accounts WHERE id NOT IN (SELECT o_acc FROM orders)")
    assert reads == {"sys.accounts", "sys.orders"}
    sql = shown(template)
    assert sql.count("LEFT JOIN") == 2 and "NOT EXISTS" not in sql  # both snapshots, as docs/INTERNALS.md says why
    check_golden("not_in_subquery", sql)


def test_exists_subquery() -> None:
    template, reads, _ = read(
        "SELECT a.id FROM accounts AS a WHERE EXISTS (SELECT 1 FROM orders AS o WHERE o.o_acc = a.id)"
    )
    assert reads == {"sys.accounts", "sys.orders"}
    sql = shown(template)
    assert sql.count("LEFT JOIN") == 2 and "NOT EXISTS" not in sql
    check_golden("exists_subquery", sql)


def test_semi_join_pushed_into_the_storage_scan() -> None:
    """``col IN (SELECT ...)`` filters the Storage rows of the table before the anti-join, its subquery reading a
    snapshot of its own (tags _2 in the query, _3 in the copy); a correlated subquery stays in the query only."""
    template, reads, _ = read("SELECT o_id, amount FROM orders WHERE o_acc IN (SELECT id FROM accounts WHERE bal > %s)")
    assert reads == {"sys.orders", "sys.accounts"}
    sql = shown(template)
    storage_scan = sql[sql.index("sys__orders__storage") : sql.index("UNION ALL", sql.index("tq_s_1.o_acc IN"))]
    assert "sys__accounts__storage" in storage_scan and "tq_s_3" in storage_scan
    assert "NOT EXISTS" not in sql  # an IN subquery: every snapshot in the LEFT JOIN form (MonetDB 11.41)
    check_golden("semi_join", sql)
    correlated, _, _ = read("SELECT o_id FROM orders AS o WHERE o_acc IN (SELECT id FROM accounts WHERE bal = amount)")
    assert shown(correlated).count("sys__accounts__storage") == 1


def test_aggregate() -> None:
    template, reads, _ = read("SELECT o_acc, SUM(amount), COUNT(*) FROM orders GROUP BY o_acc HAVING SUM(amount) > %s")
    assert reads == {"sys.orders"}
    sql = shown(template)
    assert "LIMIT" not in sql  # a lone table: no join to keep out of its snapshot (see snapshot_reads)
    check_golden("aggregate", sql)


def test_only_a_statement_of_several_tables_keeps_the_limit_barrier() -> None:
    """The never-reached LIMIT around an analytical snapshot keeps MonetDB from pushing joins into its union; a
    statement reading one table has none, and the LIMIT only costs it (CH Q6)."""
    alone, _, _ = read("SELECT SUM(amount) FROM orders WHERE amount > 1")
    joined, _, _ = read("SELECT SUM(amount) FROM orders, accounts WHERE o_acc = id AND amount > 1")
    subquery, _, _ = read("SELECT SUM(amount) FROM orders WHERE o_acc IN (SELECT id FROM accounts WHERE bal > 1)")
    assert "LIMIT" not in shown(alone)
    assert shown(joined).count("LIMIT") == 2 and shown(subquery).count("LIMIT") >= 2


def test_update_plan() -> None:
    """An UPDATE is a read of the old key values and every stored column's new value, from the snapshot."""
    plan = plan_update(parse("UPDATE accounts SET bal = bal + %s WHERE id = %s", True)[0], lookup, ReadOptions())
    assert isinstance(plan, UpdatePlan)
    assert plan.table is TABLES["accounts"] and plan.assigned == ("bal",) and not plan.key_changes
    assert plan.point_keys == (("sys.accounts", ("p1",)),)
    check_golden("update", shown(plan.select))


def test_delete_plan() -> None:
    plan = plan_delete(parse("DELETE FROM orders WHERE o_acc = %s", True)[0], lookup, ReadOptions())
    assert isinstance(plan, DeletePlan)
    assert plan.table is TABLES["orders"] and plan.reads == {"sys.orders"}
    check_golden("delete", shown(plan.select))


def test_insert_select_plan() -> None:
    plan = plan_insert(parse("INSERT INTO orders SELECT id, id, bal FROM accounts", True)[0], lookup, ReadOptions())
    assert isinstance(plan, InsertPlan) and plan.select is not None and plan.rows is None
    assert plan.columns == ("o_id", "o_acc", "amount") and plan.reads == {"sys.accounts"}
    check_golden("insert_select", shown(plan.select))


def test_insert_values_plan_has_no_sql() -> None:
    """INSERT ... VALUES is planned as rows (literals and parameter slots), written as VALUES at flush."""
    plan = plan_insert(parse("INSERT INTO orders VALUES (%s, 7, 2.5)", True)[0], lookup, ReadOptions())
    assert plan.select is None and plan.columns == ("o_id", "o_acc", "amount")
    assert plan.rows is not None and [kind for kind, _ in plan.rows[0]] == ["s", "v", "v"]


@pytest.mark.parametrize(
    "sql", ["SELECT name FROM sys.tables WHERE system = FALSE", "SELECT body FROM notes WHERE body LIKE 'a%%'"]
)
def test_other_tables_pass_through_unchanged(sql: str) -> None:
    """MonetDB's own tables and a plain table are not tique's to version: the statement stays as written."""
    template, reads, _ = read(sql)
    assert reads == frozenset()
    normal: Callable[[str], str] = lambda s: sqlglot.transpile(s, read=MonetDB, write=MonetDB)[0]  # noqa: E731
    assert normal(template.render({s: f"%({s})s" for s in template.slots})) == normal(sql.replace("%%", "%"))


def test_golden_files_parse_and_are_used() -> None:
    """Every golden file is one statement sqlglot reads, and belongs to a case above (none left stale)."""
    cases = {"point_read", "range_read", "join", "not_in_subquery", "exists_subquery", "aggregate"}
    cases |= {"update", "delete", "insert_select", "semi_join"}
    files = {p.stem: p for p in GOLDEN.glob("*.sql")}
    assert set(files) == cases
    for path in files.values():
        trees = sqlglot.parse(path.read_text(encoding="utf-8"), read=MonetDB)
        assert len(trees) == 1 and trees[0] is not None, path
