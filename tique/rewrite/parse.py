"""From the application's SQL text to a sqlglot tree whose parameters are slots."""

from __future__ import annotations

import logging
import re
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


def _prefix(text: str, quote: int) -> str:
    """The letter right before the quote at ``quote`` when it prefixes the literal (E'..', R'..'; "&" for U&'..'),
    else ""."""
    if quote >= 2 and text[quote - 2 : quote].upper() == "U&":
        return "&"
    if quote == 0 or not text[quote - 1].isalpha():
        return ""
    if quote >= 2 and (text[quote - 2].isalnum() or text[quote - 2] in "_\"'"):
        return ""  # the end of a name (a column, CHAR'...'), not a prefix
    return text[quote - 1].upper()


_RAW_LITERAL = re.compile(r"(?<![\w\"'])[Rr]'")  # a raw literal's opening, which needs rewriting without a backslash


def monetdb_quotes(text: str) -> str:
    """String literals as MonetDB reads them, written so the PostgreSQL reader reads the same: MonetDB reads
    backslash escapes in every '...' literal, so ``'It\\'s'`` (as pymonetdb quotes a value) is one literal, which
    PostgreSQL's reader ends at the escaped quote; it becomes ``'It''s'`` (the other escapes stay, read later by
    values.monetdb_string). E'...' is left as it is (the reader knows its escapes); a raw R'...' reads no escapes,
    so it becomes a plain literal with each backslash written twice. Quoted names and comments are skipped."""
    if "\\" not in text and not _RAW_LITERAL.search(text):
        return text
    out: list[str] = []
    i, n, pos = 0, len(text), 0
    while i < n:
        ch = text[i]
        if ch == "'":
            prefix = _prefix(text, i)
            raw = prefix == "R"
            if raw:
                out.append(text[pos : i - 1])  # the R goes: the literal is rewritten as a plain one
                out.append("'")
            else:
                out.append(text[pos : i + 1])
            i += 1
            while i < n:
                c = text[i]
                if c == "\\" and not raw and i + 1 < n:
                    if text[i + 1] == "'" and prefix not in ("E", "&"):  # MonetDB reads U&'..' without escapes
                        out.append("''")
                    else:
                        out.append(text[i : i + 2])
                    i += 2
                    continue
                if c == "'" and text[i + 1 : i + 2] == "'":
                    out.append("''")
                    i += 2
                    continue
                if c == "'":
                    break
                out.append("\\\\" if raw and c == "\\" else c)
                i += 1
            pos = i  # the closing quote (or the end of an unclosed literal) is copied with what follows
            i += 1
            continue
        if ch == '"':
            end = text.find('"', i + 1)
            while end > 0 and text[end + 1 : end + 2] == '"':
                end = text.find('"', end + 2)
            i = n if end < 0 else end + 1
            continue
        if text.startswith("--", i) or ch == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        i += 1
    out.append(text[pos:])
    return "".join(out)


def parse(sql: str, with_params: bool) -> list[exp.Expression]:
    """Parse one or more statements; parameters become slots (``pN`` positional, ``n_HEX`` named)."""
    text = monetdb_quotes(lift(number_placeholders(sql) if with_params else sql))
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
