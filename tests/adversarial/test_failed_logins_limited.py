"""``tique serve`` limits failed logins per source address: after ``--max-failed-logins`` wrong passwords within
``--login-window`` seconds, that source's connections are refused with an error saying so (a server log line
records it), while sessions already open keep working, other sources still log in, and the same source logs in
again once its failures age out of the window."""

from __future__ import annotations

import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pymonetdb
import pytest

import tique
from tests.conftest import start_serve

LIMIT = 5
WINDOW_S = 4.0
_SOCKET = socket.socket  # unpatched, to subclass


def _login(port: int, password: str, database: str) -> Any:
    return pymonetdb.connect(hostname="127.0.0.1", port=port, username="monetdb", password=password, database=database)


def _error(port: int, password: str, database: str) -> str:
    with pytest.raises(pymonetdb.DatabaseError) as caught:
        _login(port, password, database).close()
    return str(caught.value)


def _from(source: str) -> type[_SOCKET]:
    """TCP sockets whose connections come from ``source`` (another address on the loopback network)."""

    class FromSource(_SOCKET):
        def connect(self, address: Any) -> None:
            if self.family == socket.AF_INET:
                self.bind((source, 0))
            super().connect(address)

    return FromSource


def test_wrong_passwords_are_cut_off_per_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = start_serve(tmp_path / "db", args=("--max-failed-logins", str(LIMIT), "--login-window", str(WINDOW_S)))
    name = server.directory.name
    try:
        conn = tique.connect(server.url)  # a session open before the attack: it must keep working
        cur = conn.cursor()
        cur.execute("CREATE TABLE kv (k INT PRIMARY KEY, v INT)")
        cur.execute("INSERT INTO kv VALUES (1, 10)")
        conn.commit()

        first_failure = time.monotonic()
        for attempt in range(LIMIT):
            message = _error(server.port, f"wrong{attempt}", name)
            assert "too many failed logins" not in message, f"attempt {attempt + 1} cut off early: {message}"
        for password in ("wrong-again", server.password):  # now even the right password is refused from here
            message = _error(server.port, password, name)
            assert "too many failed logins from 127.0.0.1" in message, message

        cur.execute("UPDATE kv SET v = 11 WHERE k = 1")
        conn.commit()
        cur.execute("SELECT v FROM kv WHERE k = 1")
        assert cur.fetchone() == (11,)

        with monkeypatch.context() as patch:
            patch.setattr(socket, "socket", _from("127.0.0.2"))
            other = _login(server.port, server.password, name)
            other_cur = other.cursor()
            other_cur.execute("SELECT COUNT(*) FROM sys.tables")
            assert other_cur.fetchone()[0] > 0
            other.close()
            # guesses sent in parallel are cut off at the limit too, not after all of them were checked
            patch.setattr(socket, "socket", _from("127.0.0.3"))
            with ThreadPoolExecutor(8) as pool:
                messages = list(pool.map(lambda i: _error(server.port, f"guess{i}", name), range(3 * LIMIT)))
            checked = [m for m in messages if "too many failed logins" not in m]
            assert len(checked) == LIMIT, messages

        time.sleep(max(0.0, first_failure + WINDOW_S + 0.5 - time.monotonic()))
        again = tique.connect(server.url)  # the failures aged out: the same source logs in
        again_cur = again.cursor()
        again_cur.execute("SELECT v FROM kv WHERE k = 1")
        assert again_cur.fetchone() == (11,)
        again.close()
        conn.close()
    finally:
        server.stop()
    assert server.proc.stderr is not None
    log = server.proc.stderr.read()
    assert f"{LIMIT} failed logins from 127.0.0.1" in log, log
