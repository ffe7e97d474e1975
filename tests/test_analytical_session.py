"""Analytical reads run on a second engine session of the connection (Connection._reader), so that the session of
its short statements keeps its pipeline and the statements MonetDB prepared on it: a pipeline switch drops them
all, and at TPC-C's mix the statements compiled again after each Stock-Level cost 0.8 PREPAREs per transaction.
What must hold: the read sees the transaction's snapshot (its own writes, not later commits of others); the short
statements are not prepared again; a session whose state another would not share runs its reads itself."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique

Connect = Callable[..., tique.Connection]
ANALYTICAL = "SELECT g, COUNT(*), SUM(v) FROM {t} GROUP BY g ORDER BY g"
POINT = "SELECT v FROM {t} WHERE k = %s"


@pytest.fixture
def table(connect: Connect, unique_name: Callable[[str], str]) -> str:
    name = unique_name("an")
    conn = connect()
    conn.cursor().execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, g INT, v INT)")
    conn.commit()
    conn.bulk_load(name, [(k, k % 3, k) for k in range(1, 101)])
    return name


def groups(rows: dict[int, tuple[int, int]]) -> list[tuple[int, int, int]]:
    out: dict[int, list[int]] = {}
    for g, v in rows.values():
        out.setdefault(g, []).append(v)
    return [(g, len(vs), sum(vs)) for g, vs in sorted(out.items())]


def test_point_statements_stay_prepared_across_analytical_reads(connect: Connect, table: str) -> None:
    conn = connect(analytical_yield=False)  # a yielding read switches the second session's pipeline to and fro
    if not conn.settings.short_pipeline or not conn.settings.prepare:
        pytest.skip("one pipeline for every read, or nothing prepared")
    sent: list[str] = []
    conn.statement_hooks.append(lambda sql, _s, _e: sent.append(sql))
    cur = conn.cursor()
    for k in range(1, 10):  # the first 3: every statement is prepared (on its second use)
        if k == 4:
            sent.clear()
        cur.execute(ANALYTICAL.format(t=table))
        assert cur.fetchall() == groups({i: (i % 3, i) for i in range(1, 101)})
        cur.execute(POINT.format(t=table), (k,))
        assert cur.fetchall() == [(k,)]
        conn.commit()
    prepared = [s for s in sent if s.startswith("PREPARE")]
    assert prepared == [], prepared  # before: the point read was compiled again after every analytical one
    assert conn._raw.pipeline == conn.settings.short_pipeline
    assert not any(s.startswith("SET optimizer") for s in sent), sent


def test_an_analytical_read_on_the_second_session_reads_the_transactions_snapshot(connect: Connect, table: str) -> None:
    reader, writer = connect(), connect()
    cur, wcur = reader.cursor(), writer.cursor()
    rows = {k: (k % 3, k) for k in range(1, 101)}
    cur.execute(POINT.format(t=table), (1,))  # the snapshot starts here
    wcur.execute(f"UPDATE {table} SET v = v + 1000 WHERE k <= 50")  # committed after it: not seen
    wcur.execute(f"INSERT INTO {table} VALUES (500, 0, 7)")
    writer.commit()
    cur.execute(f"UPDATE {table} SET v = -1 WHERE k = 70")  # its own writes, still in the client: seen
    cur.execute(f"DELETE FROM {table} WHERE k = 80")
    cur.execute(f"INSERT INTO {table} VALUES (900, 0, 9)")
    rows[70] = (1, -1)
    del rows[80]
    rows[900] = (0, 9)
    cur.execute(ANALYTICAL.format(t=table))
    assert cur.fetchall() == groups(rows)
    reader.commit()
    committed = {**rows, **{k: (k % 3, k + 1000) for k in range(1, 51)}, 500: (0, 7)}
    cur.execute(ANALYTICAL.format(t=table))
    assert cur.fetchall() == groups(committed)
    reader.commit()


@pytest.mark.parametrize(
    "state",
    [
        "CREATE TEMPORARY TABLE {tmp} (g INT) ON COMMIT PRESERVE ROWS",
        "SET TIME ZONE INTERVAL '+03:00' HOUR TO MINUTE",
        "SET SCHEMA sys",
    ],
)
def test_a_session_with_state_of_its_own_runs_its_analytical_reads_itself(
    connect: Connect, table: str, unique_name: Callable[[str], str], state: str
) -> None:
    conn = connect()
    cur = conn.cursor()
    tmp = unique_name("tmp")
    cur.execute(state.format(tmp=tmp))
    conn.commit()
    sent: list[str] = []
    conn.statement_hooks.append(lambda sql, _s, _e: sent.append(sql))
    if "TEMPORARY" in state:
        cur.execute(f"INSERT INTO {tmp} VALUES (1), (2)")
        cur.execute(f"SELECT t.g, COUNT(*) FROM {table} AS t JOIN {tmp} AS x ON x.g = t.g GROUP BY t.g ORDER BY t.g")
        assert cur.fetchall() == [(1, 34), (2, 33)]
    else:
        cur.execute(ANALYTICAL.format(t=table))
        assert cur.fetchall() == groups({k: (k % 3, k) for k in range(1, 101)})
    assert conn._analytical is None  # no second session was opened
    conn.commit()
