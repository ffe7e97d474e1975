"""A user's ``DEALLOCATE PREPARE ALL`` drops the session's prepared statements, tique's own among them: tique
prepares its statements again afterwards (it used to stop preparing for the rest of the session), and every
answer stays right."""

from __future__ import annotations

from collections.abc import Callable

import tique

Connect = Callable[..., tique.Connection]


def test_statements_are_prepared_again_after_deallocate_all(
    connect: Connect, unique_name: Callable[[str], str]
) -> None:
    table = unique_name("dealloc")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {table} (k INT PRIMARY KEY, v INT)")
    cur.executemany(f"INSERT INTO {table} VALUES (%s, %s)", [(k, k * 10) for k in range(10)])
    conn.commit()
    sent: list[tuple[str, Exception | None]] = []
    conn.statement_hooks.append(lambda sql, _s, error: sent.append((sql, error)))

    def read(k: int) -> list[tuple[object, ...]]:
        cur.execute(f"SELECT v FROM {table} WHERE k = %s", (k,))
        return cur.fetchall()

    for k in range(3):
        assert read(k) == [(k * 10,)]
    assert any(sql.startswith("EXEC") for sql, _ in sent), "a read seen again runs as EXEC"
    cur.execute("DEALLOCATE PREPARE ALL")
    conn.commit()
    sent.clear()
    for k in range(3, 10):
        assert read(k) == [(k * 10,)]
    assert not [e for _, e in sent if e is not None], "no statement failed (no EXEC of a deallocated id)"
    assert any(sql.startswith("PREPARE") for sql, _ in sent), "prepared again after DEALLOCATE PREPARE ALL"
    assert sum(sql.startswith("EXEC") for sql, _ in sent) >= 5, "and run as EXEC from then on"
