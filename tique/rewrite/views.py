"""tique's views in a statement: each becomes its SELECT, read like any query (tique/ddl_views.py makes them)."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from tique.catalog import Lookup
from tique.errors import NotSupportedError
from tique.names import cte_names, ident, names_cte, source_name
from tique.rewrite.dialect import MonetDB

VIEW = "view"  # TableInfo.kind of a tique view
MAX_DEPTH = 32  # views over views: deeper than this is a cycle


def expand_views(tree: exp.Expression, lookup: Lookup) -> exp.Expression:
    """Replace every reference to a tique view by its SELECT, under the view's name (or alias)."""
    for _ in range(MAX_DEPTH):
        ctes = cte_names(tree)
        replaced = False
        for table in list(tree.find_all(exp.Table)):
            if not table.name or names_cte(table, ctes):
                continue
            info = lookup(ident(table.args.get("db")) or None, ident(table))
            if info is None or info.kind != VIEW:
                continue
            body = sqlglot.parse_one(info.storage_ddl, read=MonetDB)
            alias = table.args.get("alias") or exp.TableAlias(this=source_name(table))
            subquery = exp.Subquery(this=body, alias=alias.copy())
            if table is tree:
                return subquery
            table.replace(subquery)
            replaced = True
        if not replaced:
            return tree
    raise NotSupportedError(f"views nested deeper than {MAX_DEPTH} levels (a cycle?) are not supported by tique")
