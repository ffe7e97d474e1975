"""The checkpointer deletes a version from the Cache only once Storage holds it as the Cache does. MonetDB 11.41 can
answer a scan of a table others are writing with '' for a stored string (README, engine facts); the checkpointer
read versions so, copied the '' into Storage and deleted the Cache row, the one right copy: a soak run found a
committed row whose string had become '' for good. Here the checkpointer's read is made to return '' once (as the
engine did), and then tells the truth."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tique
from tique.checkpoint import Checkpointer
from tique.database import Database
from tique.engine.base import Result

TEXT = "ü'\\\"文\t😀 the stored string"


def _lying_once(raw: Any, name: str) -> list[int]:
    """Make the next checkpoint read of table ``name``'s moved versions return '' for TEXT; returns a counter of
    the reads it changed."""
    inner, changed = raw.execute, [0]

    def execute(sql: str) -> Any:
        result = inner(sql)
        if not changed[0] and sql.startswith("SELECT CAST(") and f"__{name}__cache" in sql:
            rows = [tuple("" if v == TEXT else v for v in row) for row in result.rows]
            changed[0] += rows != [tuple(row) for row in result.rows]
            return Result(columns=result.columns, rows=rows, rowcount=result.rowcount)
        return result

    raw.execute = execute
    return changed


def test_a_misread_version_stays_in_the_cache_until_storage_holds_it(
    embedded_url: str, unique_name: Callable[[str], str]
) -> None:
    name = unique_name("ckmis")
    conn = tique.connect(embedded_url)
    cur = conn.cursor()
    raw = Database.get(embedded_url).connect_raw()
    try:
        cur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, s VARCHAR(40), d DOUBLE)")
        conn.commit()
        cur.execute(f"INSERT INTO {name} VALUES (1, %s, -0.0), (2, NULL, 1.5), (3, '', NULL)", (TEXT,))
        conn.commit()
        changed = _lying_once(raw, name)
        report = Checkpointer(raw).run_once()
        assert changed[0] == 1
        table = report.tables[f"sys.{name}"]
        assert table.mismatched == 1 and table.cleaned == 0, table
        assert f"sys.{name}" in report.line() and report.metadata_trimmed == 0  # its outcomes keep it visible
        cur.execute(f"SELECT k, s, d FROM {name} ORDER BY k")
        assert cur.fetchall() == [(1, TEXT, -0.0), (2, None, 1.5), (3, "", None)]  # the Cache version wins
        conn.rollback()

        report = Checkpointer(raw).run_once()  # an honest read: Storage is rewritten, then the Cache cleaned
        table = report.tables[f"sys.{name}"]
        assert table.mismatched == 0 and table.cleaned == 3, table
        stored = raw.execute(f'SELECT k, s, d FROM "tique_data"."sys__{name}__storage" ORDER BY k').rows
        assert stored == [(1, TEXT, -0.0), (2, None, 1.5), (3, "", None)]
        cur.execute(f"DELETE FROM {name} WHERE k = 2")
        cur.execute(f"UPDATE {name} SET s = NULL WHERE k = 1")
        conn.commit()
        report = Checkpointer(raw).run_once()  # a tombstone and a NULL where a string was: no false mismatch
        table = report.tables[f"sys.{name}"]
        assert table.mismatched == 0 and table.removed == 1 and table.cleaned == 2, table
        cur.execute(f"SELECT k, s, d FROM {name} ORDER BY k")
        assert cur.fetchall() == [(1, None, -0.0), (3, "", None)]
        conn.rollback()
    finally:
        raw.close()
        conn.close()
