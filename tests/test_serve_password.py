"""``tique serve`` takes its admin password from a file or the environment, so it never shows in ``ps``, and warns
when it runs with MonetDB's well-known default password (issue 16, item 5)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pymonetdb
import pytest

from tests.conftest import ROOT, ServeProcess, free_port, start_serve

SECRET = "s3cret-Ü-never-in-ps"


def _cmdline(server: ServeProcess) -> str:
    return Path(f"/proc/{server.proc.pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _logs_in(server: ServeProcess, password: str) -> bool:
    try:
        pymonetdb.connect("db", hostname="127.0.0.1", port=server.port, username="monetdb", password=password).close()
        return True
    except pymonetdb.exceptions.DatabaseError:
        return False


def _stderr(server: ServeProcess) -> str:
    server.stop()
    assert server.proc.stderr is not None
    return server.proc.stderr.read()


@pytest.mark.parametrize("via", ["file", "env"])
def test_password_from_file_or_environment_stays_out_of_ps(tmp_path: Path, via: str) -> None:
    server = start_serve(tmp_path / "db", password=SECRET, password_via=via)
    try:
        assert SECRET not in _cmdline(server)
        assert _logs_in(server, SECRET)
        assert not _logs_in(server, "monetdb")
    finally:
        assert "well-known" not in _stderr(server)


def test_default_password_is_warned_about(tmp_path: Path) -> None:
    server = start_serve(tmp_path / "db", password="monetdb")
    assert _logs_in(server, "monetdb")
    warning = _stderr(server)
    assert "well-known" in warning and "--password-file" in warning, warning


def test_no_password_at_all_falls_back_to_the_default_with_a_warning(tmp_path: Path) -> None:
    server = start_serve(tmp_path / "db", password="monetdb", password_via="env")  # $TIQUE_PASSWORD=monetdb
    assert "well-known" in _stderr(server)


@pytest.mark.parametrize("content", ["", None])
def test_an_empty_or_missing_password_file_is_refused(tmp_path: Path, content: str | None) -> None:
    secret = tmp_path / "pw"
    if content is not None:
        secret.write_text(content)
    command = [sys.executable, "-m", "tique.cli", "serve", str(tmp_path / "db"), "--port", str(free_port())]
    done = subprocess.run(
        [*command, "--password-file", str(secret)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--password-file" in done.stderr and str(secret) in done.stderr, done.stderr
    assert not (tmp_path / "db").exists()  # refused before anything was created
