"""An uncontended COMMIT is 4 engine calls over MAPI and 3 embedded: the Cache rows with the commit record (one
MonetDB transaction: one text over MAPI, START TRANSACTION ... COMMIT inside one call embedded), publish with
certification, outcome; then the advance, a statement over MAPI and a direct C call in the process that loaded the
module (tique/engine/local_calls.py). That the merged publish stays exact (a record written while an earlier commit
had not published waits for it and loses on a shared key) is
tests/test_commit_races.py::test_later_committer_waits_for_an_earlier_one_that_has_not_published."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import tique
from tests.conftest import start_serve
from tique.prepared import preparing

ROWS = 10


@pytest.fixture(params=["embedded", "mapi"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "embedded":
        yield request.getfixturevalue("embedded_url")  # one embedded database per process: the session's
        return
    server = start_serve(tmp_path / "db")
    try:
        yield server.url
    finally:
        server.stop()


def _table(url: str, name: str) -> None:
    conn = tique.connect(url)
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT)")
    cur.executemany(f"INSERT INTO {name} VALUES (%s, 0)", [(k,) for k in range(ROWS)])
    conn.commit()
    conn.close()


def _commit_statements(conn: tique.Connection, name: str, k: int) -> list[str]:
    sent: list[str] = []
    hook = conn.statement_hooks
    cur = conn.cursor()
    cur.execute(f"UPDATE {name} SET v = v + 1 WHERE k = %s", (k,))
    hook.append(lambda sql, _seconds, _error: sent.append(sql))
    try:
        conn.commit()
    finally:
        hook.pop()
    return [sql for sql in sent if not preparing(sql)]  # once per session and statement shape


def test_an_uncontended_commit_is_four_engine_calls_or_three_embedded(
    url: str, unique_name: Callable[[str], str]
) -> None:
    name = unique_name("kv")
    _table(url, name)
    conn = tique.connect(url)
    try:
        for k in range(3):
            sent = _commit_statements(conn, name, k)
            assert len(sent) == (3 if url.startswith("monetdbe:") else 4), sent
            assert not any("tique.advance" in sql for sql in sent) or not url.startswith("monetdbe:"), sent
            rows_and_record = sent[0].split(";\n")
            assert len(rows_and_record) == 2 and "__cache" in rows_and_record[0], sent
            assert "tique.record_cts" in rows_and_record[1], sent
        cur = conn.cursor()
        cur.execute(f"SELECT k, v FROM {name} WHERE k < 4 ORDER BY k")
        assert cur.fetchall() == [(0, 1), (1, 1), (2, 1), (3, 0)]
    finally:
        conn.close()
