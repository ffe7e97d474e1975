"""A user's PREPARE or EXEC never reaches the engine: MonetDB numbers a session's prepared statements from 0 and
tique prepares its own protocol statements (begin, certification, finish) on the same session, so a user's
``EXEC 0(...)`` ran tique's begin with the user's values (and ``EXEC 1(...)`` a certification, which publishes a
commit). tique refuses both, saying that cursor.execute with parameters is prepared by tique itself; the
transaction and the session's commits go on as before."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique
from tique.errors import NotSupportedError

Connect = Callable[..., tique.Connection]


@pytest.mark.parametrize(
    "statement", ["EXEC 0(5, 6000)", "exec 1(1)", "PREPARE SELECT 1", "/* mine */ EXECUTE 0(1, 2)", "Prepare select 2"]
)
def test_user_prepare_and_exec_are_refused(connect: Connect, unique_name: Callable[[str], str], statement: str) -> None:
    table = unique_name("userexec")
    conn = connect(write_mode="buffered", on_statement_error="continue")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {table} (k INT PRIMARY KEY, v INT)")
    conn.commit()
    for k in range(3):  # tique's protocol statements are prepared by now (ids 0, 1, 2...)
        cur.execute(f"INSERT INTO {table} VALUES (%s, %s)", (k, k))
        conn.commit()
    sent: list[str] = []
    conn.statement_hooks.append(lambda sql, _s, _e: sent.append(sql))
    cur.execute(f"UPDATE {table} SET v = 10 WHERE k = 0")
    with pytest.raises(NotSupportedError, match="parameters"):
        cur.execute(statement)
    assert statement not in sent, "the user's statement never reached the engine"
    conn.commit()  # the transaction went on: its update commits
    cur.execute(f"SELECT v FROM {table} WHERE k = %s", (0,))
    assert cur.fetchone() == (10,)
    conn.commit()
