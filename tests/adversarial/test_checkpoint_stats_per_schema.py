"""Checkpoint statistics name tables by schema and name: two schemas may hold tables of the same name."""

from __future__ import annotations

from collections.abc import Callable

import tique
from tique.checkpoint import Checkpointer, stats
from tique.database import Database


def test_same_table_name_in_two_schemas(embedded_url: str, unique_name: Callable[[str], str]) -> None:
    schema, table = unique_name("sch"), unique_name("dup")
    conn = tique.connect(embedded_url)
    cur = conn.cursor()
    cur.execute(f"CREATE SCHEMA {schema}")
    cur.execute(f"CREATE TABLE {table} (k INT PRIMARY KEY)")
    cur.execute(f"CREATE TABLE {schema}.{table} (k INT PRIMARY KEY)")
    conn.commit()
    cur.executemany(f"INSERT INTO {table} VALUES (%s)", [(1,), (2,), (3,)])
    conn.commit()  # (one transaction writing both tables confuses them too: Transaction.writes is keyed by name)
    cur.execute(f"INSERT INTO {schema}.{table} VALUES (1)")
    conn.commit()
    default = conn.db.default_schema
    raw = Database.get(embedded_url).connect_raw()
    try:
        counts = stats(raw)["cache_rows"]
        assert counts[f"{default}.{table}"] == 3 and counts[f"{schema}.{table}"] == 1, counts
        report = Checkpointer(raw).run_once()
        assert {f"{default}.{table}", f"{schema}.{table}"} <= set(report.tables), sorted(report.tables)
    finally:
        raw.close()
        conn.close()
