"""ORDER BY ... NULLS FIRST / NULLS LAST under a LIMIT or OFFSET, in a form MonetDB 11.41 answers right.

MonetDB sorts NULL as the smallest value. Asked for the other placement (``DESC NULLS FIRST``, ``ASC NULLS LAST``)
together with a LIMIT or OFFSET, its top-N picks wrong rows: over a UNION ALL (every snapshot is one) it dropped the
NULL rows from ``ORDER BY d DESC NULLS FIRST, id LIMIT 5``, and on a plain table ``ORDER BY d ASC NULLS LAST, id
LIMIT 3 OFFSET 8`` returned rows of the NULL group before the last values (found by a differential review against
plain tables). The same order spelled with a leading key ``(d IS NULL)`` and the default placement comes back right,
so such an item becomes two: ``(d IS NULL) DESC, d DESC`` for ``d DESC NULLS FIRST``, ``(d IS NULL), d`` for ``d
NULLS LAST``. Without a LIMIT or OFFSET the order is left as written (a full sort is right).
"""

from __future__ import annotations

from sqlglot import exp


def _nulls_placed_otherwise(item: exp.Ordered) -> bool:
    """Is ``item``'s NULL placement the opposite of MonetDB's own (NULLs first ascending, last descending)?"""
    desc = bool(item.args.get("desc"))
    return bool(item.args.get("nulls_first")) == desc


def _tested(query: exp.Expression, key: exp.Expression) -> exp.Expression | None:
    """The expression whose NULLs ``key`` (an ORDER BY item of ``query``) sorts by, as it may stand inside another
    expression; None where it cannot be told (a position of ``*``, a window function)."""
    projections = query.expressions if isinstance(query, exp.Select) else []
    if isinstance(key, exp.Literal) and not key.is_string:  # ORDER BY 2: the second output column
        if not isinstance(query, exp.Select):
            return None
        at = int(key.name) - 1
        if not 0 <= at < len(projections) or isinstance(projections[at], exp.Star):
            return None
        key = projections[at]
    elif isinstance(key, exp.Column) and not key.table:
        # an output column's alias: MonetDB does not resolve it inside an expression ("identifier 'n' unknown")
        for projection in projections:
            if isinstance(projection, exp.Alias) and projection.alias == key.name:
                key = projection
                break
    if isinstance(key, exp.Alias):
        key = key.this
    if key.find(exp.Window) is not None:
        return None
    return key.copy()


def nulls_order_under_limits(tree: exp.Expression) -> exp.Expression:
    """``tree`` with each ORDER BY item that asks for the non-default NULL placement, in a query with a LIMIT or
    OFFSET, spelled as a leading ``IS NULL`` key and the item in the default placement (same order)."""
    for query in list(tree.find_all(exp.Select, exp.SetOperation)):
        order = query.args.get("order")
        if order is None or not (query.args.get("limit") or query.args.get("offset")):
            continue
        items: list[exp.Expression] = []
        for item in order.expressions:
            tested = _tested(query, item.this) if isinstance(item, exp.Ordered) else None
            if tested is None or not _nulls_placed_otherwise(item):
                items.append(item)
                continue
            desc, first = bool(item.args.get("desc")), bool(item.args.get("nulls_first"))
            # (x IS NULL) is TRUE for the NULLs, and TRUE sorts after FALSE: descending puts them first
            is_null = exp.Paren(this=exp.Is(this=tested, expression=exp.Null()))
            items.append(exp.Ordered(this=is_null, desc=first, nulls_first=not first))
            items.append(exp.Ordered(this=item.this, desc=desc, nulls_first=not desc))
        order.set("expressions", items)
    return tree
