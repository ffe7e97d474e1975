"""A server lost while a transaction's buffered rows are sent: the error says the connection was lost (a
ConnectionFailure, an OperationalError with SQLSTATE class 08), and nothing of the transaction is committed. The
catalog check made after a failed write ran on the dead connection and replaced that error with "connection is
closed", an InterfaceError that said nothing of the server (found by a review)."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import pytest

import tique
from tests.conftest import start_serve
from tique.errors import ConnectionFailure


@pytest.mark.parametrize("when", ["a read", "COMMIT"])
def test_a_server_killed_before_a_flush_is_reported_as_lost(
    tmp_path: Path, unique_name: Callable[[str], str], when: str
) -> None:
    served = start_serve(tmp_path / "lost")
    try:
        conn = tique.connect(served.url)
        t = unique_name("lost")
        conn.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT)")
        conn.execute(f"INSERT INTO {t} VALUES (1, 1)")
        conn.commit()
        assert conn.execute(f"SELECT v FROM {t} WHERE k = 1").fetchall() == [(1,)]
        conn.execute(f"UPDATE {t} SET v = 2")  # buffered: sent by the next read of the table, or by COMMIT
        served.stop(signal.SIGKILL)
        with pytest.raises(ConnectionFailure) as lost:
            if when == "COMMIT":
                conn.commit()
            else:
                conn.execute(f"SELECT * FROM {t} WHERE v > 0").fetchall()
        assert lost.value.sqlstate is not None and lost.value.sqlstate.startswith("08"), lost.value.sqlstate
    finally:
        served.stop(signal.SIGKILL)
    restarted = start_serve(tmp_path / "lost", password=served.password)
    try:
        again = tique.connect(restarted.url)
        assert again.execute(f"SELECT v FROM {t}").fetchall() == [(1,)]  # nothing of the transaction
        again.close()
    finally:
        restarted.stop()
