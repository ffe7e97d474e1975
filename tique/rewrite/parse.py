"""From the application's SQL text to a sqlglot tree whose parameters are slots."""

from __future__ import annotations

import logging
import sys

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from tique.errors import ProgrammingError
from tique.params import scan, slot_for_name
from tique.rewrite.dialect import MonetDB
from tique.rewrite.lists import lift
from tique.rewrite.template import slot


class _QuietInsideTique(logging.Filter):
    """sqlglot logs a warning when it falls back to passing a statement through as a command (COPY INTO,
    CREATE FUNCTION...) or cannot render a construct: for tique these are expected, and a statement that then
    fails reports MonetDB's own error. Records from calls made by tique are dropped; the application's own use of
    sqlglot still logs."""

    def filter(self, record: logging.LogRecord) -> bool:
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_globals.get("__name__", "").startswith("tique."):
                return False
            frame = frame.f_back  # type: ignore[assignment]
        return True


logging.getLogger("sqlglot").addFilter(_QuietInsideTique())


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


class Unparsed(ProgrammingError):
    """sqlglot could not read the statement (MonetDB may still: ``statements.engine_verdict`` asks it)."""


def _parser_said(exc: Exception) -> str:
    details = getattr(exc, "errors", None)
    if not details:
        return str(exc)
    first = details[0]
    near = f"{first.get('start_context', '')}{first.get('highlight', '')}"
    return f"{first.get('description')} at line {first.get('line')}, column {first.get('col')} (near {near!r})"


def parse(sql: str, with_params: bool) -> list[exp.Expression]:
    """Parse one or more statements; parameters become slots (``pN`` positional, ``n_HEX`` named)."""
    text = lift(number_placeholders(sql) if with_params else sql)
    try:
        # a comment after the last ';' (``SELECT 1; -- note``) comes back as a statement of its own, an
        # exp.Semicolon holding the comment: it is no statement, to MonetDB nor to tique
        trees = [t for t in sqlglot.parse(text, read=MonetDB) if t is not None and not isinstance(t, exp.Semicolon)]
    except (ParseError, TokenError) as exc:
        raise Unparsed(f"syntax error: {_parser_said(exc)}", "42000") from None
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
