"""From the application's SQL text to a sqlglot tree whose parameters are slots."""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from tique.errors import ProgrammingError
from tique.rewrite.dialect import MonetDB
from tique.rewrite.template import slot


def number_placeholders(sql: str) -> str:
    """Turn pyformat placeholders into named ones sqlglot keeps apart: ``%s`` -> ``%(tqpN)s``; ``%%`` -> ``%``.

    Quoted strings and identifiers are left alone (a ``%s`` inside quotes is text, not a parameter).
    """
    out: list[str] = []
    i, n, positional = 0, len(sql), 0
    quote: str | None = None
    while i < n:
        ch = sql[i]
        if quote:
            if ch == "%" and sql.startswith("%%", i):  # pymonetdb formats the whole text, quotes included
                out.append("%")
                i += 2
                continue
            out.append(ch)
            if ch == "\\" and quote == "'" and i + 1 < n:
                out.append(sql[i + 1])
                i += 2
                continue
            if ch == quote:
                if i + 1 < n and sql[i + 1] == quote:
                    out.append(quote)
                    i += 2
                    continue
                quote = None
            i += 1
            continue
        if ch in ("'", '"'):
            quote = ch
            out.append(ch)
        elif ch == "%" and sql.startswith("%s", i):
            out.append(f"%(tqp{positional})s")
            positional += 1
            i += 2
            continue
        elif ch == "%" and sql.startswith("%%", i):
            out.append("%")
            i += 2
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def parse(sql: str, with_params: bool) -> list[exp.Expression]:
    """Parse one or more statements; parameters become slots (``pN`` positional, ``n_NAME`` named)."""
    text = number_placeholders(sql) if with_params else sql
    try:
        trees = [t for t in sqlglot.parse(text, read=MonetDB) if t is not None]
    except (ParseError, TokenError) as exc:
        raise ProgrammingError(f"syntax error: {exc}", "42000") from None
    for tree in trees:
        for node in list(tree.find_all(exp.Placeholder)):
            name = node.name
            if not name:
                raise ProgrammingError("use %s or %(name)s for parameters (pyformat, as pymonetdb)")
            node.replace(slot(f"p{name[3:]}" if name.startswith("tqp") else f"n_{name}"))
    return trees
