"""Statements committed at once, for attacks that interleave sessions (an open transaction would pin the
checkpointer's horizon and hold a snapshot the test does not mean to hold)."""

from __future__ import annotations

from typing import Any

from tique.connection import Connection


def rows(conn: Connection, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
    """A read, committed at once."""
    cur = conn.cursor()
    cur.execute(sql, params)
    found = [tuple(r) for r in cur.fetchall()]
    conn.commit()
    return found


def run(conn: Connection, sql: str, params: Any = None) -> None:
    """A statement, committed at once."""
    conn.cursor().execute(sql, params)
    conn.commit()
