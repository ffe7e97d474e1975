"""CREATE [OR REPLACE] FUNCTION / PROCEDURE / TRIGGER with a body of several statements (BEGIN ... ; ... END, or
a LANGUAGE body in braces): one statement to MonetDB, though its body holds semicolons, which tique's parser
takes for statement ends. Such DDL is MonetDB's own and goes to the engine as written - unless its text names a
tique table: the body would run on MonetDB's view of the table (its latest committed state, read-only), outside
the calling transaction's snapshot and writes, so tique refuses it."""

from __future__ import annotations

import re
from collections.abc import Iterable

from tique.errors import NotSupportedError, SeveralStatements
from tique.names import read_names

COMPOUND = re.compile(
    r"\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMPORARY\s+)?(FUNCTION|PROCEDURE|TRIGGER|AGGREGATE|FILTER\s+FUNCTION|"
    r"LOADER)\b",
    re.I,
)
# MonetDB's lexer: a raw string (R'...') reads no backslash escapes, R'a\' ends at its second quote; a comment
# /* ... */ nests, so /* a /* b */ ; c */ is one comment (its ';' ends nothing). "/*" is a token of its own here,
# its comment's end found by counting (tokens).
_TOKEN = re.compile(
    r"""[Rr]'(?:[^']|'')*'?|'(?:[^'\\]|\\.|'')*'?|"(?:[^"]|"")*"?|--[^\n]*|\#[^\n]*|/\*|[A-Za-z_][A-Za-z0-9_]*"""
    r"""|\s+|.""",
    re.S,
)
_NAME = re.compile(r"""[A-Za-z_][A-Za-z0-9_]*|"(?:[^"]|"")*\"""")
# after END, a word that closes a statement of the body (END IF), not a BEGIN or CASE
_CLOSES = {"IF", "WHILE", "LOOP", "REPEAT", "FOR"}


def tokens(sql: str) -> list[tuple[int, str]]:
    """The statement's tokens (position, text): strings, quoted names, comments, words, blanks, other characters."""
    if "/*" not in sql:
        return [(m.start(), m.group(0)) for m in _TOKEN.finditer(sql)]
    out: list[tuple[int, str]] = []
    at = 0
    while at < len(sql):
        found = _TOKEN.match(sql, at)
        assert found is not None  # '.' matches any character
        end = comment_end(sql, at) if found.group(0) == "/*" else found.end()
        out.append((at, sql[at:end]))
        at = end
    return out


def comment_end(sql: str, start: int) -> int:
    """Where the comment opened by the "/*" at ``start`` ends (after its "*/"), comments nested in it included;
    the text's end if it is not closed."""
    depth, at = 1, start + 2
    while True:
        opens, closes = sql.find("/*", at), sql.find("*/", at)
        if closes < 0:
            return len(sql)
        if 0 <= opens < closes:
            depth, at = depth + 1, opens + 2
            continue
        depth, at = depth - 1, closes + 2
        if depth == 0:
            return at


def significant(text: str) -> bool:
    return not (text.isspace() or text.startswith(("--", "#", "/*")))


def statement_end(sql: str) -> int:
    """Where the compound statement ``sql`` begins with ends (after its body's END or closing brace); anything
    after it but blanks, comments and semicolons is a second statement."""
    depth = braces = 0
    found = [(at, text) for at, text in tokens(sql) if significant(text)]
    closing = False  # the word after an END that closes a statement (END IF, END CASE): no block of its own
    for i, (at, text) in enumerate(found):
        word = text.upper()
        if closing:
            closing = False
            continue
        if text == "{":
            braces += 1
        elif text == "}":
            braces = max(braces - 1, 0)
        elif braces:
            continue
        elif word in ("BEGIN", "CASE"):
            depth += 1
        elif word == "END":
            following = found[i + 1][1].upper() if i + 1 < len(found) else ""
            closing = following in _CLOSES or following == "CASE"
            if following not in _CLOSES:  # END, or END CASE of a CASE statement, which opened a level as CASE
                depth = max(depth - 1, 0)
        elif text == ";" and depth == 0:
            return at
    return len(sql)


def check_one(sql: str, at: int) -> None:
    """A compound statement (beginning at ``at``, compound_start) followed by another raises SeveralStatements: the
    cursor runs them one by one."""
    rest = sql[at + statement_end(sql[at:]) :]
    if any(significant(text) and text != ";" for _, text in tokens(rest)):
        raise SeveralStatements("execute() takes one statement, got 2; send them one by one", "42000")


_FROM_STDIN = re.compile(r"(?:\s+|--[^\n]*\n|#[^\n]*\n|/\*.*?\*/)*COPY\b.*\bFROM\s+STDIN\b", re.I | re.S)


def compound_start(sql: str) -> re.Match[str] | None:
    """COMPOUND matched after the comments the statement may begin with."""
    start = next((at for at, text in tokens(sql) if significant(text)), len(sql))
    return COMPOUND.match(sql, start)


def statements_of(sql: str) -> list[str]:
    """The statements of a text, in order, each as written with the comments before it (without its ';'): split at
    each ';' outside strings, quoted names and comments, after a compound statement's body (statement_end), and not
    in a COPY ... FROM STDIN's data, which run to the end of the text. One pass over the text's tokens."""
    found = tokens(sql)
    out: list[str] = []
    start = i = 0
    while i < len(found):
        at, text = found[i]
        if text == ";":  # an empty statement, or the end of one: the next begins after it
            start, i = at + 1, i + 1
            continue
        if not significant(text):
            i += 1
            continue
        if COMPOUND.match(sql, at):
            end = at + statement_end(sql[at:])
        else:
            j = i
            while j < len(found) and found[j][1] != ";":
                j += 1
            end = found[j][0] if j < len(found) else len(sql)
            if _FROM_STDIN.match(sql, start, end):
                end = len(sql)
        out.append(sql[start:end])
        while i < len(found) and found[i][0] < end:
            i += 1
    return out


def names_used(sql: str) -> Iterable[list[str]]:
    """Every name and dotted name of the statement outside strings and comments, as MonetDB stores them."""
    words = [text for _, text in tokens(sql) if significant(text)]
    for i, text in enumerate(words):
        if not _NAME.fullmatch(text):
            continue
        yield read_names(text)
        if i + 2 < len(words) and words[i + 1] == "." and _NAME.fullmatch(words[i + 2]):
            yield read_names(f"{text}.{words[i + 2]}")


def refuse_tique_tables(sql: str, kind: str, tique_tables: set[tuple[str, str]], schema: str) -> None:
    """``tique_tables``: (schema, name) of every tique table and view; ``schema``: where bare names resolve."""
    for parts in names_used(sql):
        at = (parts[0], parts[1]) if len(parts) == 2 else (schema, parts[0])
        if at in tique_tables:
            raise NotSupportedError(
                f"CREATE {kind.upper()} naming tique's table {at[1]!r} is not supported by tique: its body would run "
                f"on MonetDB's view {at[1]!r} (the latest committed state, read-only), bypassing the transaction's "
                "snapshot isolation and its own writes. Run the body's statements from the application, in a tique "
                "transaction"
            )
