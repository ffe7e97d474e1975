"""Long IN lists of plain values are lifted out of a statement before it is parsed and put back when it is printed.

sqlglot parses, copies, walks and prints every value of an IN list as a node: a 200,000-value list took 30 s
to plan (issue 16, item 7). tique never looks inside such a list: one longer than ``MAX_PUSHED_VALUES`` stays in
the statement's own WHERE (it is not copied into a snapshot's branches nor used as point keys; reads.py). So
``lift`` replaces the list's values by one marker call, ``tq<nonce>_in_list(i)``, before parsing, and
``put_back`` puts the values, as written, back into the printed SQL, with parameters turned into slots. Planning
is then linear in the text's length and cheap per value (a regex step).

Lifted only: a list after IN whose items are all numbers, '...' strings, NULL, TRUE, FALSE or parameters, in a
statement that reads or writes rows (not DDL), outside strings, quoted names and comments. A statement with a
backslash anywhere is left alone (MonetDB's escapes in strings would make the scan guess string ends).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from sqlglot import exp

MAX_PUSHED_VALUES = 1000  # an IN list longer than this stays in the query's WHERE only (reads._long_list)

_NONCE = secrets.token_hex(3)
MARKER = f"tq{_NONCE}_in_list"
_MARKER_CALL = re.compile(MARKER + r"\((\d+)\)", re.I)
_VALUE = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|'(?:[^']|'')*'|NULL\b|TRUE\b|FALSE\b|%\(tq(?:p\d+|n_\w+)\)s"
_ITEM = re.compile(r"\s*(?:" + _VALUE + r")\s*([,)])", re.I)
# a string, a quoted name or a comment (skipped whole), or the opening of an IN list
_SCAN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/|(\bIN\s*\()", re.I | re.S)
_ROW_STATEMENT = re.compile(r"\s*(?:\(\s*)*(?:SELECT|WITH|INSERT|UPDATE|DELETE|VALUES)\b", re.I)
_PARAMETER = re.compile(r"%\(tq(p\d+|n_\w+)\)s")

_lifted: ContextVar[list[str] | None] = ContextVar("tique_lifted_in_lists", default=None)


@contextmanager
def lifting() -> Iterator[None]:
    """Lists lifted while planning one statement are put back while printing its templates."""
    token = _lifted.set([])
    try:
        yield
    finally:
        _lifted.reset(token)


def lift(text: str) -> str:
    """``text`` with each long IN list of plain values replaced by a marker call (inside ``lifting`` only)."""
    lists = _lifted.get()
    if lists is None or len(text) < 2 * MAX_PUSHED_VALUES or "\\" in text or not _ROW_STATEMENT.match(text):
        return text
    out: list[str] = []
    pos = 0
    scan_from = 0
    while True:
        found = _SCAN.search(text, scan_from)
        if found is None:
            break
        scan_from = found.end()
        if found.group(1) is None:
            continue
        end = _list_end(text, found.end())
        if end is None:
            continue
        out.append(text[pos : found.end()])
        out.append(f"{MARKER}({len(lists)}))")
        lists.append(text[found.end() : end - 1])
        pos = scan_from = end
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _list_end(text: str, start: int) -> int | None:
    """The position after the ')' closing a list of more than MAX_PUSHED_VALUES plain values from ``start``."""
    count, pos = 0, start
    while True:
        item = _ITEM.match(text, pos)
        if item is None:
            return None
        count += 1
        pos = item.end()
        if item.group(1) == ")":
            return pos if count > MAX_PUSHED_VALUES else None


def is_lifted(node: exp.In) -> bool:
    """Is this IN's list a lifted one (long, so never pushed into a snapshot)?"""
    first = node.expressions[0] if len(node.expressions) == 1 else None
    return isinstance(first, exp.Anonymous) and str(first.this).lower() == MARKER


def put_back(sql: str, slot_prefix: str) -> str:
    """The printed ``sql`` with the lifted lists in place of their markers; parameters become slots."""
    lists = _lifted.get()
    if not lists or MARKER not in sql.lower():
        return sql

    def values(match: re.Match[str]) -> str:
        return _PARAMETER.sub(lambda p: f":{slot_prefix}{p.group(1)}", lists[int(match.group(1))])

    return _MARKER_CALL.sub(values, sql)
