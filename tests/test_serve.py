"""``tique serve`` as a real subprocess: logins, restarts, refusals, shutdown."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, free_port, start_serve
from tique.engine import open_engine
from tique.errors import OperationalError


def test_restart_keeps_data_and_logins(tmp_path: Path) -> None:
    directory = tmp_path / "keep"
    first = start_serve(directory, password="s3cret")
    conn = open_engine(first.url).connect()
    conn.execute("CREATE TABLE kept (k INT, v VARCHAR(10))")
    conn.execute("INSERT INTO kept VALUES (1, 'a'), (2, 'b')")
    conn.close()
    assert first.stop(signal.SIGTERM) == 0
    second = start_serve(directory, password="s3cret")
    try:
        conn = open_engine(second.url).connect()
        assert conn.execute("SELECT k, v FROM kept ORDER BY k").rows == [(1, "a"), (2, "b")]
        conn.close()
        with pytest.raises(OperationalError, match="wrong user name or password"):
            open_engine(second.url.replace("s3cret", "wrong")).connect()
    finally:
        second.stop()


def test_second_serve_on_same_directory_or_port_fails_clearly(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    same_dir = subprocess.run(
        [sys.executable, "-m", "tique.cli", "serve", str(server.directory), "--port", str(free_port())],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert same_dir.returncode != 0
    assert "locked by another process" in same_dir.stderr
    assert "Traceback" not in same_dir.stderr
    same_port = subprocess.run(
        [sys.executable, "-m", "tique.cli", "serve", str(tmp_path / "other"), "--port", str(server.port)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert same_port.returncode != 0
    assert f"port {server.port} is already in use" in same_port.stderr
    assert not (tmp_path / "other").exists()  # nothing written


def test_missing_parent_directories_are_created(tmp_path: Path) -> None:
    directory = tmp_path / "no" / "such" / "db"
    proc = start_serve(directory)
    try:
        assert directory.is_dir()
    finally:
        assert proc.stop() == 0


def test_a_parent_that_cannot_be_created_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    proc = subprocess.run(
        [sys.executable, "-m", "tique.cli", "serve", str(tmp_path / "file" / "db"), "--port", str(free_port())],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode == 2 and "cannot create the parent directory" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_sigint_stops_cleanly(tmp_path: Path) -> None:
    proc = start_serve(tmp_path / "int")
    assert proc.stop(signal.SIGINT) == 0
    assert proc.proc.stdout is not None and "stopped" in proc.proc.stdout.read()


def test_listens_on_loopback_only(server) -> None:  # type: ignore[no-untyped-def]
    out = subprocess.run(["ss", "-ltnH", f"sport = :{server.port}"], capture_output=True, text=True).stdout
    addresses = {line.split()[3].rsplit(":", 1)[0] for line in out.splitlines() if line.strip()}
    assert addresses and addresses <= {"127.0.0.1", "[::1]"}
