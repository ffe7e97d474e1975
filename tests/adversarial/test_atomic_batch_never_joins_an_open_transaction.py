"""execute_atomically (COMMIT's rows and record) is a transaction of its own or fails: on a session some statement
left inside an engine transaction it neither joins that transaction (over MAPI its statements went into it and
were never committed, though the call returned) nor leaves the session stuck (embedded, the failed START
TRANSACTION left the transaction open and aborted: every later statement failed). Afterwards the session is in
autocommit and nothing of the open transaction or the batch is visible."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tique.engine.base import RawConnection
from tique.errors import DatabaseError

Names = Callable[[str], str]


def _seen_by_another(raw: RawConnection, sql: str) -> object:
    other = raw.engine.connect()  # type: ignore[attr-defined]
    try:
        return other.execute(sql).scalar()
    finally:
        other.close()


@pytest.mark.parametrize("limit", [None, 10])
def test_a_batch_on_a_session_inside_a_transaction_fails_and_ends_it(
    raw: RawConnection, unique_name: Names, monkeypatch: pytest.MonkeyPatch, limit: int | None
) -> None:
    if limit is not None:  # over MAPI, a batch over ONE_TEXT_LIMIT goes statement by statement
        monkeypatch.setattr("tique.engine.server.ONE_TEXT_LIMIT", limit)
    table = unique_name("open")
    raw.execute(f"CREATE TABLE {table} (v INT)")
    raw.execute("START TRANSACTION")
    raw.execute(f"INSERT INTO {table} VALUES (1)")
    with pytest.raises(DatabaseError, match="transaction"):
        raw.execute_atomically([f"INSERT INTO {table} VALUES (2)", f"INSERT INTO {table} VALUES (3)"])
    assert _seen_by_another(raw, f"SELECT COUNT(*) FROM {table}") == 0, "neither the batch nor the open one"
    raw.execute(f"INSERT INTO {table} VALUES (4)")  # autocommit again: commits on its own
    assert _seen_by_another(raw, f"SELECT COUNT(*) FROM {table}") == 1
    raw.execute_atomically([f"INSERT INTO {table} VALUES (5)", f"INSERT INTO {table} VALUES (6)"])
    assert _seen_by_another(raw, f"SELECT SUM(v) FROM {table}") == 15


@pytest.mark.parametrize("limit", [None, 10])
def test_a_batch_failing_at_its_last_statement_leaves_nothing(
    raw: RawConnection, unique_name: Names, monkeypatch: pytest.MonkeyPatch, limit: int | None
) -> None:
    if limit is not None:
        monkeypatch.setattr("tique.engine.server.ONE_TEXT_LIMIT", limit)
    table = unique_name("last")
    raw.execute(f"CREATE TABLE {table} (v INT)")
    batch = [f"INSERT INTO {table} VALUES ({v})" for v in range(1, 4)] + [f"INSERT INTO {table} VALUES (1 / 0)"]
    with pytest.raises(DatabaseError):
        raw.execute_atomically(batch)
    assert _seen_by_another(raw, f"SELECT COUNT(*) FROM {table}") == 0
    raw.execute(f"INSERT INTO {table} VALUES (9)")
    assert _seen_by_another(raw, f"SELECT COUNT(*) FROM {table}") == 1
