"""Identifiers in the SQL tique writes: every name goes through ``quote`` (text) or ``identifier`` (a sqlglot
node), both sqlglot's quoting in MonetDB's spelling - double quotes, an embedded double quote doubled - so a
table or column may be called anything (``"x"" INT"``, ``"order"``, ``"o'brien"``, ``"MixedCase"``) and no name
can end the identifier early and inject SQL. ``ident`` reads a name the user wrote as MonetDB stores it."""

from __future__ import annotations

import re
from functools import lru_cache

from sqlglot import exp

from tique.rewrite.dialect import MonetDB


def identifier(name: str) -> exp.Identifier:
    """A name as a quoted sqlglot identifier: kept exactly as given (case, spaces, quotes, reserved words)."""
    return exp.to_identifier(name, quoted=True)


@lru_cache(maxsize=8192)  # on hot paths (every write's column list): sqlglot's printer costs tens of microseconds
def quote(name: str) -> str:
    """A name as a quoted MonetDB identifier, for SQL text."""
    return identifier(name).sql(dialect=MonetDB)


def qualified(schema: str, name: str) -> str:
    """schema.name, both quoted."""
    return f"{quote(schema)}.{quote(name)}"


def table_key(schema: str, name: str) -> str:
    """How tique names a table within a process (TableInfo.qualified: a transaction's reads, writes and own
    versions, a plan's tables): schema.name, or both quoted when either holds a dot or a double quote, so that no
    two tables share one ("a"."b.c" and "a.b"."c" would both be a.b.c)."""
    if any(c in part for part in (schema, name) for c in '."'):
        return qualified(schema, name)
    return f"{schema}.{name}"


def column_ref(name: str, table: str | exp.Identifier | None = None) -> exp.Column:
    """A column reference by its exact name; ``table`` an exact name or the user's own identifier node (kept as
    the user quoted it, so an alias ``Q`` still folds to q)."""
    if isinstance(table, str):
        table = identifier(table)
    return exp.Column(this=identifier(name), table=table.copy() if table is not None else None)


def source_name(table: exp.Table) -> exp.Identifier:
    """What the rest of a statement calls a table it reads: its alias, or else its name, as the user wrote it
    (a quoted "MixedCase" stays quoted, an unquoted MixedCase folds), ready to name the subquery replacing it."""
    given = table.args.get("alias")
    node = given.this if given is not None and isinstance(given.this, exp.Identifier) else table.this
    return node.copy() if isinstance(node, exp.Identifier) else exp.to_identifier(table.alias_or_name)


def cte_names(tree: exp.Expression) -> frozenset[str]:
    """The names of the CTEs a statement defines, as MonetDB folds them: ``WITH T AS (...)`` is what ``FROM t``
    reads, not a table t (compare with ``ident`` of the table)."""
    return frozenset(ident(cte.args["alias"].this) for cte in tree.find_all(exp.CTE) if cte.args.get("alias"))


def names_cte(table: exp.Table, ctes: frozenset[str]) -> bool:
    """Does ``table`` (an unqualified name) name one of ``ctes`` (see cte_names)?"""
    return not table.args.get("db") and ident(table) in ctes


def ident(node: exp.Expression | str | None) -> str:
    """An identifier as MonetDB stores it: unquoted names fold to lower case."""
    if node is None:
        return ""
    if isinstance(node, str):
        return node.lower()
    if isinstance(node, exp.Identifier):
        return node.name if node.quoted else node.name.lower()
    inner = node.this if isinstance(node, (exp.Table, exp.Column)) else None
    if isinstance(inner, exp.Identifier):
        return ident(inner)
    return node.name.lower()


# One identifier as SQL text: quoted (a doubled quote inside stands for one) or a bare word; for the few
# statements tique reads with a regular expression because its parser cannot (COPY INTO, ALTER ... SET READ ONLY)
NAME = r'(?:"(?:[^"]|"")+"|\w+)'
_ONE_NAME = re.compile(NAME)


def read_names(text: str) -> list[str]:
    """The names of a dotted SQL reference (``s."T"``) as MonetDB stores them: quoted kept exactly, bare folded."""
    return [n[1:-1].replace('""', '"') if n.startswith('"') else n.lower() for n in _ONE_NAME.findall(text)]
