"""tique's engine functions are ready before any session uses them.

MonetDB 11.41 compiles a SQL function on its first use in a kernel run: sessions whose first transactions begin
at the same moment after the kernel opened failed now and then with "TypeException ... 'tique.begin_txn_as'
undefined" (found by the demo in CI: about one round in ten below failed before the fix).
"""

from __future__ import annotations

import threading
from pathlib import Path

import tique

THREADS = 6


def test_sessions_beginning_together_after_open_all_begin(tmp_path: Path) -> None:
    url = f"monetdbe://{tmp_path / 'db'}"
    setup = tique.connect(url)
    setup.cursor().execute("CREATE TABLE t (k INT PRIMARY KEY, v INT)")
    setup.commit()
    setup.close()  # the last connection: the kernel closes, so every round below starts a fresh kernel run
    errors: list[str] = []
    for _ in range(25):
        conns = [tique.connect(url) for _ in range(THREADS)]
        start = threading.Barrier(THREADS)

        def first_transaction(conn: tique.Connection, start: threading.Barrier = start) -> None:
            start.wait()
            try:
                conn.cursor().execute("SELECT v FROM t WHERE k = 1")
                conn.commit()
            except tique.Error as exc:
                errors.append(str(exc))

        threads = [threading.Thread(target=first_transaction, args=(c,)) for c in conns]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        for conn in conns:
            conn.close()
    assert errors == []
