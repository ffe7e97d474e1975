"""The same statements through tique embedded and through tique over MAPI (`tique serve`), whose values and type
names pymonetdb gives: the twins the result-type tests compare."""

from __future__ import annotations

from typing import Any

import tique

Answer = Any


def answer(conn: tique.Connection, sql: str, params: Any = None) -> Answer:
    """The rows and type names of ``sql``, or the exception's class (a non-DB-API one, ValueError or
    JSONDecodeError, is a finding too); rolled back after."""
    cur = conn.cursor()
    try:
        cur.execute(sql, params)
        rows = [tuple(r) for r in cur.fetchall()] if cur.description else []
        got = (rows, [d.type_code for d in cur.description or []])
    except Exception as exc:
        got = ("error", type(exc).__name__)
    conn.rollback()
    return got


def run_on_both(conns: dict[str, tique.Connection], statements: list[str]) -> None:
    for conn in conns.values():
        for sql in statements:
            conn.cursor().execute(sql)
            conn.commit()


def same(conns: dict[str, tique.Connection], sql: str, params: Any = None) -> Answer:
    embedded, served = (answer(conns[k], sql, params) for k in ("embedded", "server"))
    assert embedded == served, sql
    return embedded
