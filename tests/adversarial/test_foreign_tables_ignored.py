"""Tables that are not tique's never stop a database from opening: recovery finds tique's Cache tables through
tique's catalog (tique.tables), never by a name pattern.

Found by the security probe (issue 16, item 2): recovery listed every table whose name matched
``LIKE '%\\_\\_cache'`` (two characters and "cache": ``page_cache`` matches) and read ``MAX(tq_txid)`` from each,
so one plain MonetDB table called ``page_cache`` made the database impossible to open (``identifier 'tq_txid'
unknown``) and ``tique serve`` exited 2.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import tique
from tests.conftest import ROOT, start_serve
from tique.engine import open_engine

# Names a name pattern for "__cache" / "__storage" would take for tique's own tables
FOREIGN = ("page_cache", "x__cache", "x__storage", "tq__cache")


def _fill(url: str) -> None:
    """A tique table with committed rows, and foreign tables beside it: made by the engine directly (a plain
    MonetDB client) and by tique as a plain table."""
    conn = tique.connect(url)
    cur = conn.cursor()
    cur.execute("CREATE TABLE kv (k INT PRIMARY KEY, v INT)")
    cur.execute("INSERT INTO kv VALUES (1, 10), (2, 20)")
    conn.commit()
    cur.execute("CREATE TABLE web__cache (id INT) -- tique: plain")
    conn.commit()
    conn.close()
    raw = open_engine(url).connect()
    for name in FOREIGN:
        raw.execute(f'CREATE TABLE "{name}" (id INT, payload VARCHAR(10))')
        raw.execute(f"INSERT INTO \"{name}\" VALUES (1, 'x')")
    raw.execute("CREATE SCHEMA other")
    raw.execute('CREATE TABLE other."kv__cache" (id INT)')  # beside where an older tique kept Cache tables
    raw.close()


def _rows(url: str) -> list[tuple[int, int]]:
    conn = tique.connect(url)
    cur = conn.cursor()
    cur.execute("SELECT k, v FROM kv ORDER BY k")
    rows = [(int(k), int(v)) for k, v in cur.fetchall()]
    cur.execute("INSERT INTO kv VALUES (3, 30)")  # and writing goes on
    conn.commit()
    conn.close()
    return rows


def test_served_database_restarts_with_foreign_tables(tmp_path: Path) -> None:
    server = start_serve(tmp_path / "db")
    try:
        _fill(server.url)
        server.stop()
        server = start_serve(tmp_path / "db", port=server.port)  # recovery runs: it must not read page_cache
        assert _rows(server.url) == [(1, 10), (2, 20)]
        raw = open_engine(server.url).connect()
        for name in FOREIGN:  # and the foreign tables are untouched
            assert raw.execute(f'SELECT id, payload FROM "{name}"').rows == [(1, "x")]
        raw.close()
    finally:
        server.stop()


def test_embedded_database_opens_with_foreign_tables(tmp_path: Path) -> None:
    """The same directory opened embedded, in a process of its own (one embedded database per process)."""
    server = start_serve(tmp_path / "db")
    try:
        _fill(server.url)
    finally:
        server.stop()
    script = (
        "import sys, tique\n"
        "conn = tique.connect(sys.argv[1]); cur = conn.cursor()\n"
        "cur.execute('SELECT k, v FROM kv ORDER BY k'); print(cur.fetchall())\n"
        "cur.execute('INSERT INTO kv VALUES (3, 30)'); conn.commit(); conn.close()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, f"monetdbe://{tmp_path / 'db'}"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[(1, 10), (2, 20)]"


def test_foreign_tables_named_like_storage_and_cache_take_no_names(tmp_path: Path) -> None:
    """An application's own ``orders__storage`` / ``orders__cache`` do not make the name ``orders`` taken (tique's
    Storage and Cache live in tique_data, under names it keeps free itself)."""
    server = start_serve(tmp_path / "db")
    try:
        raw = open_engine(server.url).connect()
        for name in ("orders__storage", "orders__cache", "renamed__storage", "copied__cache"):
            raw.execute(f'CREATE TABLE "{name}" (id INT)')
        raw.close()
        conn = tique.connect(server.url)
        cur = conn.cursor()
        cur.execute("CREATE TABLE orders (k INT PRIMARY KEY, v INT)")
        cur.execute("INSERT INTO orders VALUES (1, 1)")
        conn.commit()
        cur.execute("CREATE TABLE other (k INT PRIMARY KEY)")
        cur.execute("ALTER TABLE other RENAME TO renamed")
        cur.execute("CREATE TABLE copied AS SELECT k, v FROM orders")
        conn.commit()
        cur.execute("SELECT k, v FROM copied")
        assert cur.fetchall() == [(1, 1)]
        conn.close()
    finally:
        server.stop()
