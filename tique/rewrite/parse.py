"""From the application's SQL text to a sqlglot tree whose parameters are slots."""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from tique.errors import ProgrammingError
from tique.params import scan, slot_for_name
from tique.rewrite.dialect import MonetDB
from tique.rewrite.template import slot


def number_placeholders(sql: str) -> str:
    """Turn pyformat placeholders into named ones sqlglot keeps apart: ``%s`` -> ``%(tqpN)s``, ``%(name)s`` ->
    ``%(tqn_HEX)s`` (any name becomes word characters); ``%%`` -> ``%``. Placeholders are found where
    pymonetdb's ``%`` formatting finds them (``params.scan``)."""
    found = scan(sql)
    cuts = sorted(
        [(p.start, p.end, False, p.name) for p in found.placeholders] + [(i, i + 2, True, None) for i in found.percents]
    )
    out: list[str] = []
    pos, positional = 0, 0
    for start, end, percent, name in cuts:
        out.append(sql[pos:start])
        if percent:
            out.append("%")
        elif name is None:
            out.append(f"%(tqp{positional})s")
            positional += 1
        else:
            out.append(f"%(tq{slot_for_name(name)})s")
        pos = end
    out.append(sql[pos:])
    return "".join(out)


def parse(sql: str, with_params: bool) -> list[exp.Expression]:
    """Parse one or more statements; parameters become slots (``pN`` positional, ``n_HEX`` named)."""
    text = number_placeholders(sql) if with_params else sql
    try:
        trees = [t for t in sqlglot.parse(text, read=MonetDB) if t is not None]
    except (ParseError, TokenError) as exc:
        raise ProgrammingError(f"syntax error: {exc}", "42000") from None
    for tree in trees:
        for node in list(tree.find_all(exp.Placeholder)):
            name = node.name or ""
            if not with_params or not (name.startswith("tqp") or name.startswith("tqn_")):
                raise ProgrammingError(
                    f"unexpected placeholder {node.sql(dialect=MonetDB)!r}: tique takes parameters as %s or %(name)s "
                    "(pyformat, as pymonetdb), with the values passed to execute()",
                    "42000",
                )
            node.replace(slot(name[2:]))
    return trees
