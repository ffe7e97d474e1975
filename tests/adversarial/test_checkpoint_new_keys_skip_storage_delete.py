"""The checkpointer deletes from Storage only the moved keys Storage holds: a DELETE on Storage joins its keys
over the whole table, so inserted rows (new keys, most of what an OLTP workload moves) must move with an INSERT
alone. Storage ends exactly as the committed rows say, updates and deletes included."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import tique
from tique.checkpoint import Checkpointer
from tique.database import Database

ROWS = 20_000


def _checkpoint(url: str, storage_name: str) -> list[str]:
    """One checkpoint; the statements that deleted from this table's Storage."""
    raw = Database.get(url).connect_raw()
    seen: list[str] = []
    inner = raw.execute

    def execute(sql: str) -> Any:
        if sql.startswith("DELETE FROM") and storage_name in sql.split(" WHERE")[0]:
            seen.append(sql)
        return inner(sql)

    raw.execute = execute  # type: ignore[method-assign]
    try:
        Checkpointer(raw).run_once()
    finally:
        raw.close()
    return seen


def test_only_stored_keys_are_deleted(embedded_url: str, tmp_path: Path, unique_name: Callable[[str], str]) -> None:
    name = unique_name("ckdel")
    conn = tique.connect(embedded_url)
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} (a INT, b INT, v INT, PRIMARY KEY (a, b))")
    conn.commit()
    path = tmp_path / "rows.csv"
    path.write_text("".join(f"{i // 100},{i % 100},{i}\n" for i in range(ROWS)))
    conn.bulk_load_csv(name, path)
    storage_name = f"{name}__storage"

    cur.executemany(f"INSERT INTO {name} VALUES (%s, %s, %s)", [(1000 + i, i, -i) for i in range(50)])
    conn.commit()
    assert _checkpoint(embedded_url, storage_name) == []  # new keys only: no DELETE

    cur.execute(f"UPDATE {name} SET v = 7 WHERE a = 3 AND b = 4")
    cur.execute(f"DELETE FROM {name} WHERE a = 5 AND b = 6")
    cur.execute(f"INSERT INTO {name} VALUES (2000, 1, 1)")
    conn.commit()
    deletes = _checkpoint(embedded_url, storage_name)
    assert len(deletes) == 1 and "2000" not in deletes[0], deletes

    raw = Database.get(embedded_url).connect_raw()
    try:
        rows = raw.execute(f'SELECT a, b, v FROM "tique_data"."sys__{storage_name}"').rows
    finally:
        raw.close()
    got = {(int(a), int(b)): int(v) for a, b, v in rows}
    expected = {(i // 100, i % 100): i for i in range(ROWS)}
    expected.update({(1000 + i, i): -i for i in range(50)})
    expected[(3, 4)] = 7
    del expected[(5, 6)]
    expected[(2000, 1)] = 1
    assert len(rows) == len(expected) and got == expected
    cur.execute(f"DROP TABLE {name}")
    conn.commit()
    conn.close()
