"""Writes outside the commit protocol find a table by its name (Storage and Cache are named by schema and table):
the checkpointer's move and a bulk load. Another session's DROP and CREATE of that name between the lookup and the
write gave the write the new table (found by a review): the checkpointer copied the dropped table's versions into
the new table's Storage, bringing a dropped row back and overwriting a loaded one; a load racing it went into the
new table, whatever its columns. Each such write now first checks, in its own engine transaction, that the table
is the one it looked up (catalog.still_current), and otherwise writes nothing."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import tique
from tique.catalog import TableInfo, TableReplaced
from tique.checkpoint import Checkpointer
from tique.engine import open_engine

Connect = Callable[..., tique.Connection]


def _rows(conn: tique.Connection, table: str) -> list[tuple[int, ...]]:
    rows = conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
    conn.commit()
    return rows


class _Watched(Checkpointer):
    """A checkpointer that tells which table it is moving."""

    current = ""

    def _table(self, info: TableInfo, *args: Any, **kwargs: Any) -> Any:
        self.current = info.name
        return super()._table(info, *args, **kwargs)


@pytest.mark.parametrize("successor", ["insert", "bulk_load"])
def test_the_checkpointer_never_writes_a_dropped_tables_versions_into_its_successor(
    connect: Connect, unique_name: Callable[[str], str], url: str, successor: str
) -> None:
    main, other = connect(), connect()
    t = unique_name("rec")
    main.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT)")
    main.execute(f"INSERT INTO {t} VALUES (1, 10), (2, 20)")
    main.commit()
    fired: list[str] = []

    def recreate() -> None:
        other.execute(f"DROP TABLE {t}")
        other.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT)")
        if successor == "insert":
            other.execute(f"INSERT INTO {t} VALUES (1, 111)")
            other.commit()
        else:
            other.bulk_load(t, [(1, 999), (3, 333)])

    def hook(step: str) -> None:
        if step == "read" and checkpointer.current == t and not fired:  # its versions read, not yet written
            fired.append(step)
            thread = threading.Thread(target=recreate)  # another session, as another process would
            thread.start()
            thread.join()

    raw = open_engine(url).connect()
    try:
        checkpointer = _Watched(raw, step_hook=hook)  # the session's database holds other tests' tables too
        report = checkpointer.run_once()
        assert fired
        assert any("dropped, or dropped and created again" in e for e in report.errors), report.errors
        expected = [(1, 111)] if successor == "insert" else [(1, 999), (3, 333)]
        assert _rows(main, t) == expected
        Checkpointer(raw).run_once()  # a later run moves the new table's own versions, and only those
        assert _rows(main, t) == expected
    finally:
        raw.close()


def _drop_and_create_midway(
    other: tique.Connection, t: str, columns: str, at: int, n: int
) -> Iterator[tuple[int, int]]:
    for i in range(n):
        if i == at:
            other.execute(f"DROP TABLE {t}")
            other.execute(f"CREATE TABLE {t} ({columns})")
            other.execute(f"INSERT INTO {t} (k) VALUES (7)")
            other.commit()
        yield (100 + i, 2 * i)


@pytest.mark.parametrize(
    ("loaded", "successor"),
    [
        ("k INT PRIMARY KEY, v INT", "k INT PRIMARY KEY, v INT"),  # staged, then moved into Storage
        ("k INT PRIMARY KEY, v INT", "k INT, v INT"),  # into a table with hidden row ids: rows it could not key
        ("k INT PRIMARY KEY, v INT", "k INT PRIMARY KEY, v VARCHAR(20), w INT NOT NULL DEFAULT 5"),
        # a keyless table's rows go straight into Storage, in an engine transaction begun before the DROP: they
        # land in the dropped table (gone with it, as if the DROP came after the load), never in the new one
        ("k INT, v INT", "k INT, v INT"),
    ],
)
def test_a_bulk_load_racing_a_drop_and_create_loads_nothing_into_the_new_table(
    connect: Connect, unique_name: Callable[[str], str], loaded: str, successor: str
) -> None:
    conn, other = connect(), connect()
    t = unique_name("recl")
    conn.execute(f"CREATE TABLE {t} ({loaded})")
    conn.commit()
    staged = "PRIMARY KEY" in loaded  # moved into Storage after the DROP: refused
    try:
        conn.bulk_load(t, _drop_and_create_midway(other, t, successor, 500, 1000))
        assert not staged, "a staged load moved into a table created after it was looked up"
    except TableReplaced as exc:
        assert "dropped, or dropped and created again" in str(exc)
    conn.rollback()
    assert [r[0] for r in _rows(conn, t)] == [7]  # the new table holds its own row only
    cur = conn.cursor()
    cur.execute(f"UPDATE {t} SET k = 8 WHERE k = 7")  # and stays writable as a table of its own
    conn.commit()
    assert [r[0] for r in _rows(conn, t)] == [8]


def test_a_csv_load_racing_a_drop_and_create_loads_nothing_into_the_new_table(
    connect: Connect, unique_name: Callable[[str], str], tmp_path: pytest.TempPathFactory
) -> None:
    conn, other = connect(), connect()
    t = unique_name("recc")
    conn.execute(f"CREATE TABLE {t} (k INT, v INT)")  # keyless: copied, then numbered into Storage
    conn.commit()
    path = tmp_path / "rows.csv"  # type: ignore[operator]
    path.write_text("".join(f"{i},{i}\n" for i in range(100)))
    sent: list[str] = []

    def after_copy(sql: str, _seconds: float, _error: Exception | None) -> None:
        sent.append(sql)
        if sql.startswith("COPY INTO") and len(sent) < 50:
            other.execute(f"DROP TABLE {t}")
            other.execute(f"CREATE TABLE {t} (k INT, v INT)")
            other.commit()

    conn.statement_hooks.append(after_copy)
    try:
        with pytest.raises(TableReplaced):
            conn.bulk_load_csv(t, str(path))
    finally:
        conn.statement_hooks.remove(after_copy)
    conn.rollback()
    assert _rows(conn, t) == []
