"""tique's SQL templates (tique/sql/, shipped as package data), read once and split into statements."""

from __future__ import annotations

import functools
from pathlib import Path

SQL_DIR = Path(__file__).resolve().parent / "sql"


@functools.cache
def statements(name: str) -> tuple[str, ...]:
    """The statements of tique/sql/NAME.sql, without comments, each without its trailing semicolon."""
    text = (SQL_DIR / f"{name}.sql").read_text()
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("--")]
    return tuple(s.strip() for s in "\n".join(lines).split(";") if s.strip())
