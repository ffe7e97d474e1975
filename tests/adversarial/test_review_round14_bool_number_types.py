"""MonetDB 11.41 refuses a DECIMAL or DOUBLE value for a BOOLEAN column, and a BOOLEAN for a DOUBLE or DECIMAL
column ("types decimal(2,1) and boolean(1,0) are not equal"), as literals and as pymonetdb's parameters; tique
converted them (0.0 stored FALSE, TRUE stored 1.0). An integer into BOOLEAN and a BOOLEAN into INT MonetDB
converts, and so does tique. Each case runs on a plain twin too."""

from __future__ import annotations

import decimal
from collections.abc import Callable
from typing import Any

import pytest
from pymonetdb.sql.monetize import convert

import tique
from tique.database import Database

DDL = "CREATE TABLE {t} (k INT PRIMARY KEY, b BOOLEAN, d DOUBLE, m DECIMAL(10,2), i INT)"

CASES: list[tuple[str, Any, bool]] = [
    # column, value (a literal's text, or a parameter), does MonetDB store it
    ("b", "0.0", False),
    ("b", "1e0", False),
    ("b", 0.0, False),
    ("b", decimal.Decimal("1.0"), False),
    ("b", decimal.Decimal("1"), True),  # pymonetdb (and tique) send it as the integer 1
    ("b", "1", True),
    ("b", 0, True),
    ("d", "TRUE", False),
    ("d", True, False),
    ("m", "FALSE", False),
    ("m", False, False),
    ("i", "TRUE", True),
    ("i", True, True),
]


@pytest.mark.parametrize(("column", "given", "stored"), CASES, ids=[f"{c}-{g!r}" for c, g, _ in CASES])
def test_refused_as_monetdb_refuses(
    embedded_url: str, unique_name: Callable[[str], str], column: str, given: Any, stored: bool
) -> None:
    conn = tique.connect(embedded_url)
    raw = Database.get(embedded_url).connect_raw()
    t, p = unique_name("r14bt_t"), unique_name("r14bt_p")
    try:
        cur = conn.cursor()
        cur.execute(DDL.format(t=t))
        conn.commit()
        raw.execute(DDL.format(t=p) + " -- tique: plain")
        text = given if isinstance(given, str) else str(convert(given))
        if stored:
            raw.execute(f"INSERT INTO {p} (k, {column}) VALUES (1, {text})")
        else:
            with pytest.raises(tique.Error):
                raw.execute(f"INSERT INTO {p} (k, {column}) VALUES (1, {text})")
        statement = f"INSERT INTO {t} (k, {column}) VALUES (1, " + (
            "%s)" if not isinstance(given, str) else f"{given})"
        )
        params = (given,) if not isinstance(given, str) else None
        if not stored:
            with pytest.raises(tique.DataError):
                cur.execute(statement, params)
            return
        cur.execute(statement, params)
        conn.commit()
        cur.execute(f"SELECT k, {column} FROM {t}")
        assert cur.fetchall() == [tuple(r) for r in raw.execute(f"SELECT k, {column} FROM {p}").rows]
    finally:
        conn.rollback()
        conn.close()
        raw.close()
