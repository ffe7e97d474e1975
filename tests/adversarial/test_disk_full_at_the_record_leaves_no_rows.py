"""The disk filling between tique's free-space check and the commit record (the C module refuses the record,
SQLSTATE 53100, inside the engine transaction that also writes the Cache rows) fails the COMMIT with StorageFull
and leaves no row of any table and no record; once space returns, the same connection commits again without
stalling. (Here the module's minimum is raised for a moment: tique's own check before the flush still passes.)"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

import tique
from tests.physical import cache
from tique.engine import udf
from tique.errors import StorageFull
from tique.storage import min_free_bytes


def _fill_disk_then_commit(conn: tique.Connection, directory: str) -> None:
    udf.watch_storage(directory, 1 << 60)
    try:
        conn.commit()
    finally:
        udf.watch_storage(directory, min_free_bytes())


def test_a_refused_record_takes_the_rows_with_it(embedded_url: str, unique_name: Callable[[str], str]) -> None:
    first, second = unique_name("full1"), unique_name("full2")
    directory = embedded_url.removeprefix("monetdbe://")
    conn = tique.connect(embedded_url, write_mode="buffered")
    try:
        cur = conn.cursor()
        cur.execute(f"CREATE TABLE {first} (k INT PRIMARY KEY, v INT)")
        cur.execute(f"CREATE TABLE {second} (k INT PRIMARY KEY, v INT)")
        conn.commit()
        cur.execute(f"INSERT INTO {first} VALUES (1, 1), (2, 2)")
        cur.execute(f"INSERT INTO {second} VALUES (1, 1)")
        txid = conn._txn.txid  # type: ignore[union-attr]
        with pytest.raises(StorageFull):
            _fill_disk_then_commit(conn, directory)
        raw = conn.db.connect_raw()
        try:
            for table in (first, second):
                left = raw.execute(f"SELECT COUNT(*) FROM {cache(raw, table)} WHERE tq_txid = {txid}").scalar()
                assert left == 0, f"rows of {table} stayed after the refused record"
            assert raw.execute(f"SELECT COUNT(*) FROM tique.commits WHERE txid = {txid}").scalar() == 0
        finally:
            raw.close()
        conn.rollback()
        cur.execute(f"INSERT INTO {first} VALUES (1, 1), (2, 2)")
        cur.execute(f"INSERT INTO {second} VALUES (1, 1)")
        started = time.monotonic()
        conn.commit()
        assert time.monotonic() - started < 0.5, "no timestamp of the refused commit holds this one back"
        cur.execute(f"SELECT COUNT(*) FROM {first}")
        assert cur.fetchone() == (2,)
        conn.commit()
    finally:
        conn.close()
