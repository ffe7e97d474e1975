"""A COMMIT whose Cache writes fail part way leaves none of its rows in any Cache table: the rows of every table
and the commit record go to the engine as one MonetDB transaction. (Rows left behind were invisible, having no
outcome, but stayed in Cache until the checkpointer found them.)"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique
from tests.physical import cache
from tique.errors import DatabaseError


def test_a_table_dropped_before_commit_leaves_no_rows_of_the_others(
    embedded_url: str, unique_name: Callable[[str], str]
) -> None:
    first, second = unique_name("first"), unique_name("second")
    writer = tique.connect(embedded_url, write_mode="buffered")  # rows go to the engine at COMMIT
    ddl = tique.connect(embedded_url)
    try:
        cur = ddl.cursor()
        cur.execute(f"CREATE TABLE {first} (k INT PRIMARY KEY, v INT)")
        cur.execute(f"CREATE TABLE {second} (k INT PRIMARY KEY, v INT)")
        ddl.commit()
        w = writer.cursor()
        w.execute(f"INSERT INTO {first} VALUES (1, 1), (2, 2)")
        w.execute(f"INSERT INTO {second} VALUES (1, 1)")
        txid = writer._txn.txid  # type: ignore[union-attr]
        cur.execute(f"DROP TABLE {second}")
        ddl.commit()
        with pytest.raises(DatabaseError, match="dropped"):
            writer.commit()
        raw = writer.db.connect_raw()
        try:
            left = raw.execute(f"SELECT COUNT(*) FROM {cache(raw, first)} WHERE tq_txid = {txid}").scalar()
            records = raw.execute(f"SELECT COUNT(*) FROM tique.commits WHERE txid = {txid}").scalar()
        finally:
            raw.close()
        assert (left, records) == (0, 0)
        w.execute(f"SELECT COUNT(*) FROM {first}")
        assert w.fetchall() == [(0,)]
    finally:
        writer.close()
        ddl.close()
