"""VALUES lists used as a table, written as a UNION ALL of one-row SELECTs. MonetDB 11.41 merges the columns of
such a list whose values are the same up to order: ``SELECT * FROM (VALUES (1, 2), (2, 1)) AS v(a, b)`` returns
(1, 1), (2, 2), and ``INSERT INTO t SELECT * FROM (VALUES ...)`` stores those (README, engine facts). The UNION
ALL of the same rows reads right, with the same column names and types (both take each column's common type).
An ``INSERT ... VALUES`` list is not a table (MonetDB reads it right, and tique plans its rows itself)."""

from __future__ import annotations

from functools import reduce

from sqlglot import exp

MAX_ROWS = 1000  # a longer list stays as written: each UNION ALL branch is one more level for MonetDB's parser


def values_as_unions(tree: exp.Expression) -> exp.Expression:
    """``tree`` with each VALUES table of two or more rows and two or more named columns replaced by the UNION
    ALL of its rows under the same alias (a list of one row or column cannot be misread so)."""
    for values in list(tree.find_all(exp.Values)):
        if isinstance(values.parent, exp.Insert):
            continue
        alias = values.args.get("alias")
        columns = list(alias.columns) if isinstance(alias, exp.TableAlias) else []
        rows = values.expressions
        if len(rows) < 2 or len(columns) < 2 or len(rows) > MAX_ROWS:
            continue
        if any(not isinstance(row, exp.Tuple) or len(row.expressions) != len(columns) for row in rows):
            continue  # not a list this pass understands: MonetDB says what is wrong with it
        first, *rest = rows
        selects = [exp.select(*(exp.alias_(v.copy(), c.copy()) for v, c in zip(first.expressions, columns)))]
        selects += [exp.select(*(v.copy() for v in row.expressions)) for row in rest]
        union = reduce(lambda left, right: exp.union(left, right, distinct=False), selects)
        values.replace(exp.Subquery(this=union, alias=exp.TableAlias(this=alias.this.copy())))
    return tree
