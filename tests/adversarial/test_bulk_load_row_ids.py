"""Guarantee: every row bulk-loaded into a table without a primary key gets a hidden row id of its own, even
beside another load of the same table, so no later write of one row touches another.

Found by a review: a load counted its ids down from the lowest stored one, read before its engine transaction,
so two loads at once gave their rows the same ids; an UPDATE of one such row, once checkpointed, deleted the
other, and the zero-sign check of a load (matched on the id) wrote one load's zeros into the other's rows. Loads
now number their rows from fresh transaction ids (tique/bulk_load.py, ``_rowids``).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import tique
import tique.bulk_load as bulk_load_module
from tique.checkpoint import Checkpointer
from tique.engine import open_engine

Connect = Callable[..., tique.Connection]
Names = Callable[[str], str]


def _stored_ids(url: str, conn: tique.Connection, table: str) -> list[int]:
    info = conn.db.catalog.get(conn.db.default_schema, table)
    assert info is not None
    raw = open_engine(url).connect()
    try:
        return [int(r[0]) for r in raw.execute(f"SELECT tq_rowid FROM {info.storage}").rows]
    finally:
        raw.close()


def test_loads_at_once_give_every_row_its_own_id(url: str, connect: Connect, unique_name: Names) -> None:
    t = unique_name("lr")
    conn = connect()
    conn.execute(f"CREATE TABLE {t} (who INT, n INT, f DOUBLE)")
    conn.commit()
    stop = time.monotonic() + 3.0
    loaded: dict[int, list[tuple[int, int, float]]] = {0: [], 1: []}
    failures: list[BaseException] = []

    def loader(who: int) -> None:
        mine = connect()
        n = 0
        try:
            while time.monotonic() < stop:
                row = (who, n, 0.0 if n % 2 else float(n + 1))  # zeros beside non-zeros: the sign check runs
                mine.bulk_load(t, [row])
                loaded[who].append(row)
                n += 1
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=loader, args=(w,)) for w in (0, 1)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not failures, failures
    ids = _stored_ids(url, conn, t)
    assert len(ids) == len(set(ids)) == len(loaded[0]) + len(loaded[1])
    got = sorted(conn.execute(f"SELECT who, n, f FROM {t}").fetchall())
    conn.rollback()
    assert got == sorted(loaded[0] + loaded[1])
    conn.execute(f"UPDATE {t} SET f = f + 1 WHERE who = 0 AND n = 0")  # then checkpointed: its old row deleted
    conn.commit()
    checkpointer = Checkpointer(open_engine(url).connect())
    assert not checkpointer.run_once().errors
    count = conn.execute(f"SELECT COUNT(*) FROM {t}").fetchall()
    assert count == [(len(got),)]


@pytest.mark.parametrize("how", ["rows", "csv"])
def test_a_load_past_one_ids_block_numbers_every_row_apart(
    monkeypatch: pytest.MonkeyPatch, connect: Connect, unique_name: Names, tmp_path: Path, url: str, how: str
) -> None:
    """A load takes a fresh transaction id for every 2**24 rows (here every 2): the ids of its blocks never
    meet, in either way of numbering (rows in Python, a CSV's in the engine)."""
    monkeypatch.setattr(bulk_load_module, "ROWS_PER_ID", 2)
    t = unique_name("lb")
    conn = connect()
    conn.execute(f"CREATE TABLE {t} (n INT, f DOUBLE)")
    conn.commit()
    rows = [(n, -0.0 if n % 3 else 1.5) for n in range(7)]
    for _ in range(2):
        if how == "csv":
            path = tmp_path / "rows.csv"
            path.write_text("".join(f"{n},{f!r}\n" for n, f in rows))
            assert conn.bulk_load_csv(t, path) == len(rows)
        else:
            assert conn.bulk_load(t, rows, batch=3) == len(rows)
    ids = _stored_ids(url, conn, t)
    assert len(set(ids)) == 2 * len(rows) and all(i < 0 for i in ids)
    assert len({-i >> 24 for i in ids}) == 8  # 4 blocks of 2 ids a load
    got = sorted(conn.execute(f"SELECT n, f FROM {t}").fetchall())
    assert [(n, math.copysign(1, f)) for n, f in got] == sorted([(n, math.copysign(1, f)) for n, f in rows] * 2)


def test_a_csv_keys_negative_zero_is_stored_as_zero(
    connect: Connect, unique_name: Names, tmp_path: Path, url: str
) -> None:
    """As bulk_load and the Cache store a DOUBLE key's -0.0: 0.0 (before, a CSV's came back as -0.0)."""
    t = unique_name("lz")
    conn = connect()
    conn.execute(f"CREATE TABLE {t} (k DOUBLE PRIMARY KEY, v INT)")
    conn.commit()
    path = tmp_path / "keys.csv"
    path.write_text("-0.0,1\n2.5,2\n")
    assert conn.bulk_load_csv(t, path) == 2
    got = conn.execute(f"SELECT k, v FROM {t} ORDER BY v").fetchall()
    assert [(math.copysign(1, k), k, v) for k, v in got] == [(1.0, 0.0, 1), (1.0, 2.5, 2)]


@pytest.mark.parametrize("column", ["INT", "DOUBLE"], ids=["straight", "staged"])
def test_loads_in_processes_one_after_another_never_share_an_id(tmp_path: Path, column: str) -> None:
    """Found by a second review: a load's transaction id was recorded nowhere, so the counter a restart restores
    (recovery) went back below it, and the next process's load numbered its rows with the same ids. Recovery now
    counts the ids keyless Storage tables hold. Each load runs in a fresh process, whose C module starts from
    what recovery restores."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    url = f"monetdbe://{tmp_path / 'db'}"
    for first in (0, 100):
        load = (
            "import tique\n"
            f"c = tique.connect({url!r})\n"
            f"c.execute('CREATE TABLE IF NOT EXISTS k (a INT, f {column})')\n"
            "c.commit()\n"
            f"c.bulk_load('k', [({first} + i, 1) for i in range(3)])\n"
        )
        ran = subprocess.run([sys.executable, "-c", load], capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert ran.returncode == 0, ran.stderr
    check = (
        "import json, tique\n"
        "from tique.checkpoint import Checkpointer\n"
        "from tique.engine import open_engine\n"
        f"c = tique.connect({url!r})\n"
        "raw = open_engine(" + repr(url) + ").connect()\n"
        "info = c.db.catalog.get(c.db.default_schema, 'k')\n"
        "ids = [int(r[0]) for r in raw.execute(f'SELECT tq_rowid FROM {info.storage}').rows]\n"
        "c.execute('UPDATE k SET f = 2 WHERE a = 0')\n"  # then checkpointed: its old row deleted, no other
        "c.commit()\n"
        "errors = Checkpointer(raw).run_once().errors\n"
        "rows = sorted(c.execute('SELECT a, f FROM k').fetchall())\n"
        "print(json.dumps({'ids': ids, 'errors': errors, 'rows': rows}))\n"
    )
    ran = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert ran.returncode == 0, ran.stderr
    got = json.loads(ran.stdout.strip().splitlines()[-1])
    assert len(got["ids"]) == len(set(got["ids"])) == 6, got["ids"]
    assert not got["errors"]
    assert got["rows"] == [[0, 2], [1, 1], [2, 1], [100, 1], [101, 1], [102, 1]]
