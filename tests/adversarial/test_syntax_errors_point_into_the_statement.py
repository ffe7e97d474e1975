"""A syntax error names the problem and its position in the statement the user wrote, on both engines; never
tique's internal text ("prepare ...", placeholders turned into '?') and never a misleading cause.

Found by the security probe (issue 16, item 7): an unclosed quote was reported as "NULL byte in string"
(embedded) or "unexpected end of input" (MAPI), and syntax errors showed tique's internal "prepare ..." text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

import tique

UNCLOSED = [
    ("SELECT 'abc FROM t", 8, "string literal"),
    ("SELECT k FROM t WHERE v = 'it''s", 27, "string literal"),
    ("INSERT INTO t VALUES (1, 'x)", 26, "string literal"),
    ('SELECT "abc FROM t', 8, "quoted identifier"),
    ("SELECT k FROM t WHERE v = %s AND v = 'x", 38, "string literal"),
]

# (statement, parameters, the text the error must be found right after)
MISPLACED = [
    ("SELEC 1", None, "SELEC"),
    ("SELECT k FROM t WHERE k = = 1", None, "SELECT k FROM t WHERE k = ="),
    ("SELECT k\nFROM t\nWHERE k = = 1", None, "SELECT k\nFROM t\nWHERE k = ="),
    ("SELECT k FROM t WHERE k = %s AND", (1,), "SELECT k FROM t WHERE k = %s AND"),
    ("SELECT k FROM t WHERE k = %(key)s AND v = %(v)s GROUP", {"key": 1, "v": "a"}, "%(v)s GROUP"),
    ("DELETE FROM t WHERE", None, "DELETE FROM t WHERE"),
]

LONG = "SELECT " + ", ".join(f"k AS c{i}" for i in range(40)) + " FROM t WHERE k = = 1"


@pytest.fixture
def cursor(connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]) -> Any:
    conn = connect(autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE TABLE IF NOT EXISTS t (k INT PRIMARY KEY, v VARCHAR(10))")
    return cur


def _error(cursor: Any, statement: str, params: Any = None) -> str:
    with pytest.raises(tique.ProgrammingError) as caught:
        cursor.execute(statement, params)
    message = str(caught.value)
    assert caught.value.sqlstate == "42000", message
    assert "prepare" not in message.lower() and "NULL byte" not in message and "end of input" not in message
    assert f"in the statement {statement!r}" in message, message
    return message


@pytest.mark.parametrize(("statement", "opened", "what"), UNCLOSED)
def test_an_unclosed_quote_is_named(cursor: Any, statement: str, opened: int, what: str) -> None:
    params = (1,) if "%s" in statement else None
    message = _error(cursor, statement, params)
    assert f"unclosed quote: the {what}" in message and f"at character {opened} " in message, message


@pytest.mark.parametrize(("statement", "params", "before"), MISPLACED)
def test_the_position_is_in_the_users_statement(cursor: Any, statement: str, params: Any, before: str) -> None:
    message = _error(cursor, statement, params)
    found = re.search(r"at character (\d+) \(after (.*)\) in the statement", message, re.S)
    assert found, message
    at = int(found.group(1))
    assert statement[:at].endswith(before), (at, message)
    assert eval(found.group(2)) == statement[:at][-30:]


def test_a_long_statement_gets_no_wrong_position(cursor: Any) -> None:
    message = _error(cursor, LONG)
    found = re.search(r"at character (\d+)", message)
    assert found is None or LONG[: int(found.group(1))].endswith("= ="), message
