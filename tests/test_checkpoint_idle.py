"""An idle checkpointer writes nothing.

MonetDB 11.41 moves its write-ahead log into the tables' own files only once the database has been left
unchanged for a while: a statement that inserts a row every second (the checkpointer's log row) kept 290 MB of
loaded TPC-C data in the log for as long as it ran, and data that only the log holds is not persistent to the
kernel, which then never builds a hash for an equality on it (a point read of Storage scanned: 3-5 ms instead of
0.3 ms). So a run that would find the same counters as a run that did nothing does nothing, not even log itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import tique
from tests.conftest import ServeProcess
from tique.checkpoint import Checkpointer, stats
from tique.engine import open_engine
from tique.engine.base import RawConnection

Db = tuple[tique.Connection, RawConnection, str]


@pytest.fixture
def db(served: ServeProcess, unique_name: Callable[[str], str]) -> Iterator[Db]:
    conn = tique.connect(served.url)
    table = unique_name("idle")
    conn.cursor().execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, v INT)")
    conn.commit()
    raw = open_engine(served.url).connect()
    yield conn, raw, table
    raw.close()
    conn.close()


def checkpointer(url: str) -> Checkpointer:
    return Checkpointer(open_engine(url).connect())


def write(conn: tique.Connection, table: str, key: int) -> None:
    conn.cursor().execute(f"INSERT INTO {table} VALUES (%s, %s)", (key, key))
    conn.commit()


def test_a_run_after_an_idle_one_writes_nothing(served: ServeProcess, db: Db) -> None:
    conn, raw, table = db
    ckpt = checkpointer(served.url)
    write(conn, table, 1)
    before = stats(raw)["runs_logged"]
    first = ckpt.run_once()
    assert first.moved == 1 and stats(raw)["runs_logged"] == before + 1
    ckpt.run_once()  # same counters, but the run before it did work: it may find more (it logs)
    assert stats(raw)["runs_logged"] == before + 2
    for _ in range(3):
        idle = ckpt.run_once()
        assert idle.moved == 0 and idle.idle
    assert stats(raw)["runs_logged"] == before + 2, "an idle run wrote its log row"
    ckpt.conn.close()


@pytest.mark.parametrize("change", ["commit", "open_snapshot_ends", "read_only_transaction"])
def test_anything_that_can_give_it_work_makes_it_run_again(served: ServeProcess, db: Db, change: str) -> None:
    conn, _, table = db
    ckpt = checkpointer(served.url)
    reader = tique.connect(served.url)
    if change == "open_snapshot_ends":
        cur = reader.cursor()
        cur.execute(f"SELECT COUNT(*) FROM {table}")  # an open snapshot holds the horizon back
        cur.fetchall()
    write(conn, table, 2)
    for _ in range(4):
        ckpt.run_once()
    idle = ckpt.run_once()
    assert idle.idle
    if change == "commit":
        write(conn, table, 3)
    elif change == "open_snapshot_ends":
        reader.commit()
        reader.close()  # its snapshot's pin ends at its next begin or at close
    else:
        cur = reader.cursor()
        cur.execute(f"SELECT COUNT(*) FROM {table}")
        cur.fetchall()
        reader.commit()
    after = ckpt.run_once()
    if change == "read_only_transaction":
        # a transaction that began and ended takes an id: the run looks (and finds nothing to move)
        assert not after.idle and after.moved == 0
    else:
        assert not after.idle and after.moved == 1, (change, after)
    if not reader.closed:
        reader.close()
    ckpt.conn.close()


def test_stats_show_how_much_the_engine_log_holds(served: ServeProcess, db: Db) -> None:
    """The operator's sign of a log MonetDB stopped flushing (README "Engine facts"): its size, when the database
    directory is on this machine."""
    conn, raw, table = db
    directory = Path(str(raw.execute("SELECT value FROM sys.env() WHERE name = 'gdk_dbpath'").scalar()))
    on_disk = sum(f.stat().st_size for f in (directory / "sql_logs").rglob("*") if f.is_file())
    shown = stats(raw)["write_ahead_log_mb"]
    assert shown is not None and abs(shown - on_disk / 2**20) < 1.0, (shown, on_disk)
    conn.cursor().executemany(f"INSERT INTO {table} VALUES (%s, %s)", [(k, k) for k in range(100, 2100)])
    conn.commit()
    assert stats(raw)["write_ahead_log_mb"] >= shown


def test_a_run_skips_the_tables_whose_cache_is_empty(
    served: ServeProcess, db: Db, unique_name: Callable[[str], str]
) -> None:
    """A table whose Cache holds no row costs the run no statement of its own (its steps cost two to three
    statements each, half a second a run at 200 tables): only the count shared with every other table. A table
    that has rows is still moved, and one written again after being skipped is moved by the next run."""
    conn, _raw, table = db
    quiet = unique_name("quiet")
    conn.cursor().execute(f"CREATE TABLE {quiet} (id INT PRIMARY KEY, v INT)")
    conn.commit()
    write(conn, quiet, 1)
    ckpt = checkpointer(served.url)
    sent: list[str] = []
    execute = ckpt.conn.execute

    def counted(sql: str, *args: object, **kwargs: object) -> object:
        sent.append(sql)
        return execute(sql, *args, **kwargs)

    ckpt.conn.execute = counted  # type: ignore[method-assign]
    try:
        ckpt.run_once()  # moves quiet's row and empties its Cache
        write(conn, table, 1)
        sent.clear()
        report = ckpt.run_once()
        assert report.tables[f"sys.{table}"].moved == 1
        assert report.tables[f"sys.{quiet}"].moved == 0
        own = [s for s in sent if f"{quiet}__" in s and "UNION ALL" not in s]
        assert not own, own
        write(conn, quiet, 2)
        report = ckpt.run_once()
        assert report.tables[f"sys.{quiet}"].moved == 1
        cur = conn.cursor()
        cur.execute(f"SELECT id FROM {quiet} ORDER BY id")
        assert cur.fetchall() == [(1,), (2,)]
        conn.rollback()
    finally:
        ckpt.conn.close()
