"""The snapshot is built as a tree: planning a read parses the user's statement once and nothing tique generates,
and the text form constraints.py sends (key lists as text, printed per shape) says what the tree says."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot.parser import Parser

from tique.catalog import ColumnSpec, TableInfo
from tique.rewrite.dialect import MonetDB
from tique.rewrite.parse import parse
from tique.rewrite.reads import ReadOptions, snapshot_reads
from tique.rewrite.snapshot import snapshot_sql, snapshot_tree

HOSTILE = TableInfo(
    7,
    'S"x',
    'a b"c',
    "tx",
    (ColumnSpec('k"1', "INT", True), ColumnSpec("k{t}2", "INT", True), ColumnSpec("Select", "INT", False)),
    ('k"1', "k{t}2"),
    data_schema="tique_data",
    data_base='S"x__a b"c',
    probe="k{t}2",
)


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def test_planning_a_read_parses_only_the_statement(monkeypatch: pytest.MonkeyPatch) -> None:
    """One parse per statement: the snapshots of both tables are trees, not SQL text read back."""
    calls: list[int] = []
    real = Parser.parse

    def counted(self: Parser, *args: object, **kw: object) -> object:
        calls.append(1)
        return real(self, *args, **kw)  # type: ignore[arg-type]

    def lookup(schema: str | None, name: str) -> TableInfo | None:
        return HOSTILE if name == 'a b"c' else None

    monkeypatch.setattr(Parser, "parse", counted)
    tree = parse(
        'SELECT x."Select" FROM "a b""c" AS x JOIN "a b""c" AS y ON y."k""1" = x."Select" WHERE x."k{t}2" = %s', True
    )[0]
    assert len(calls) == 1
    found = snapshot_reads(tree, lookup, ReadOptions())
    assert len(calls) == 1, "the rewriter parsed SQL it generated"
    assert found.reads == {HOSTILE.qualified} == {'"S""x"."a b""c"'}  # quoted: its names hold a double quote
    assert found.tree.sql(dialect=MonetDB).count("ROW_NUMBER()") == 2


@pytest.mark.parametrize("values", ["1, 2", "3, 'a{t}\"'')'", "5, 'tq_values_0'"])
def test_key_list_text_matches_the_tree(values: str) -> None:
    """snapshot_sql prints each key-list shape once and puts the values in; the text must read back as the tree
    built with the values in place, for any name and any literal text (braces, quotes, marker-like words)."""
    preds = ["{t}" + quoted("k{t}2") + f" IN ({values})", "{t}" + quoted('k"1') + " IN (9)"]
    for _ in range(2):  # printed, then from the kept shape
        text = snapshot_sql(HOSTILE, "point", preds, own=False, columns=HOSTILE.key, tag="_1")
        tree = snapshot_tree(HOSTILE, "point", preds, own=False, columns=HOSTILE.key, tag="_1")
        assert sqlglot.parse_one(text, read=MonetDB) == sqlglot.parse_one(tree.sql(dialect=MonetDB), read=MonetDB)
        assert f"IN ({values})" in text and "LIMIT" in text  # the probe column's subquery (composite key)


def test_row_filter_text_matches_the_tree() -> None:
    """An analytical snapshot's row filter (constraints.py's UNIQUE check) is qualified per branch in the text
    as in the tree: Storage's alias below the anti-join, none above the ranking."""
    for values in ("1, 2", "3"):
        where = sqlglot.parse_one(f"{quoted('Select')} IN ({values}) OR {quoted('k{t}2')} = 5", read=MonetDB)
        text = snapshot_sql(HOSTILE, "analytical", row_preds=[where], columns=["Select"], expose_rowid=True)
        tree = snapshot_tree(HOSTILE, "analytical", row_preds=[where], columns=["Select"], expose_rowid=True)
        assert sqlglot.parse_one(text, read=MonetDB) == sqlglot.parse_one(tree.sql(dialect=MonetDB), read=MonetDB)
        assert f'tq_s."Select" IN ({values})' in text and f'("Select" IN ({values})' in text
