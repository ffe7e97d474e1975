"""Connection.statement_hooks: every statement a tique connection sends to the engine, with its time and error,
for tracing, logging and counting round trips (the benchmarks count them this way)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique
from tique.prepared import preparing


@pytest.mark.parametrize("local", [True, False], ids=["local-calls", "statements"])
def test_hooks_see_every_statement_of_a_transaction(
    embedded_url: str, unique_name: Callable[[str], str], local: bool
) -> None:
    name = unique_name("hooked")
    conn = tique.connect(embedded_url)
    calls = conn.db.sequencer.local
    assert calls is not None  # embedded, as tique's owner: the begin and the finish are C calls, no statements
    try:
        if not local:
            conn.db.sequencer.local = None
        conn.cursor().execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT)")
        conn.cursor().execute(f"INSERT INTO {name} VALUES (1, 0)")
        conn.commit()
        sent: list[tuple[str, float, Exception | None]] = []
        conn.statement_hooks.append(lambda sql, seconds, error: sent.append((sql, seconds, error)))
        conn.cursor().execute(f"UPDATE {name} SET v = v + 1 WHERE k = 1")
        conn.commit()
        texts = [sql for sql, _, _ in sent]
        steps = ["tique.begin_txn", "tique.record_cts", "tique.publish_own", "tique.decide", "tique.advance"]
        if local:
            assert not any("tique.begin_txn" in t or "tique.advance" in t for t in texts), texts
            steps = steps[1:-1]
        for step in steps:  # begin and the commit protocol, in order
            assert sum(step in t for t in texts) == 1, (step, texts)
        assert [next(i for i, t in enumerate(texts) if s in t) for s in steps] == sorted(
            next(i for i, t in enumerate(texts) if s in t) for s in steps
        )
        assert all(seconds >= 0 and error is None for _, seconds, error in sent)
        # begin, the UPDATE's read, the flush, certification and the commit's steps; and, once per session, the
        # preparing of a statement run a second time (its PREPARE and the query of its parameters' types)
        assert len([t for t in texts if not preparing(t)]) <= (7 if local else 9)
    finally:
        conn.db.sequencer.local = calls
        conn.close()


def test_hooks_see_a_failing_statement_with_its_error(embedded_url: str) -> None:
    conn = tique.connect(embedded_url)
    try:
        sent: list[tuple[str, Exception | None]] = []
        conn.statement_hooks.append(lambda sql, _seconds, error: sent.append((sql, error)))
        with pytest.raises(tique.DatabaseError):
            conn.cursor().execute("SELECT * FROM no_such_table_here")
        # (a failed statement is followed by a catalog read: did DDL change its tables meanwhile?)
        failed = [(sql, error) for sql, error in sent if error is not None]
        assert len(failed) == 1 and "no_such_table_here" in failed[0][0]
        assert isinstance(failed[0][1], tique.DatabaseError)
        conn.rollback()
    finally:
        conn.close()
