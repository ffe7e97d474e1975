"""A COMMIT whose rows-and-record transaction fails (a table dropped meanwhile) costs that commit only: the
session's next commits still run their protocol statements as prepared EXECs, and none of their statements
fails. (MonetDB drops every prepared statement of a session on any error; the failed one-transaction flush
did not tell the session's prepared-statement bookkeeping, so the next EXEC found no statement and the session
stopped preparing for good.)"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique
from tique.errors import SerializationFailure

Connect = Callable[..., tique.Connection]


def test_commits_after_a_failed_flush_still_run_prepared(connect: Connect, unique_name: Callable[[str], str]) -> None:
    kept, dropped = unique_name("kept"), unique_name("dropped")
    conn, ddl = connect(write_mode="buffered"), connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {kept} (k INT PRIMARY KEY, v INT)")
    cur.execute(f"CREATE TABLE {dropped} (k INT PRIMARY KEY, v INT)")
    conn.commit()
    for k in range(3):  # the protocol statements are prepared by now
        cur.execute(f"INSERT INTO {kept} VALUES (%s, 1)", (k,))
        conn.commit()
    cur.execute(f"INSERT INTO {kept} VALUES (100, 1)")
    cur.execute(f"INSERT INTO {dropped} VALUES (100, 1)")
    ddl.cursor().execute(f"DROP TABLE {dropped}")
    ddl.commit()
    with pytest.raises(SerializationFailure, match="dropped"):
        conn.commit()
    sent: list[tuple[str, Exception | None]] = []
    conn.statement_hooks.append(lambda sql, _s, error: sent.append((sql, error)))
    for k in range(200, 205):
        cur.execute(f"INSERT INTO {kept} VALUES (%s, 1)", (k,))
        conn.commit()
    failed = [(sql[:60], str(e)) for sql, e in sent if e is not None]
    assert not failed, f"no statement fails after the failed flush: {failed}"
    # each commit's begin, certification and finish; embedded, the begin and the finish are C calls (no statement)
    execs = sum(sql.startswith("EXEC") for sql, _ in sent)
    assert execs >= (5 if conn.db.sequencer.local is not None else 15), ("protocol statements still run as EXEC", sent)
    cur.execute(f"SELECT COUNT(*) FROM {kept}")
    assert cur.fetchone() == (8,)
    conn.commit()
