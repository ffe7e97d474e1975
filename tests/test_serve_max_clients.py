"""``tique serve --max-clients N``: the embedded kernel admits 64 client sessions by default (a few of them
tique's own) and monetdbe offers no option for it; with --max-clients the server admits N clients at once, and
refuses one more with MonetDB's own message (issue 16, item 7)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pymonetdb
import pytest

import tique
from tests.conftest import ROOT, ServeProcess, free_port, start_serve


def _open_until_refused(server: ServeProcess, most: int) -> tuple[list[pymonetdb.Connection], str]:
    opened: list[pymonetdb.Connection] = []
    refusal = ""
    while len(opened) < most:
        try:
            opened.append(
                pymonetdb.connect(
                    server.directory.name,
                    hostname="127.0.0.1",
                    port=server.port,
                    username="monetdb",
                    password=server.password,
                )
            )
        except pymonetdb.exceptions.Error as exc:
            refusal = str(exc)
            break
    return opened, refusal


def test_more_clients_than_the_kernels_default(tmp_path: Path) -> None:
    server = start_serve(tmp_path / "db", args=("--max-clients", "150"))
    try:
        opened, refusal = _open_until_refused(server, 150)
        assert len(opened) == 150, refusal
        conn = tique.connect(server.url)  # tique itself still gets in
        cur = conn.cursor()
        cur.execute("CREATE TABLE kv (k INT PRIMARY KEY)")
        cur.execute("INSERT INTO kv VALUES (1)")
        conn.commit()
        conn.close()
        for c in opened:
            c.close()
    finally:
        server.stop()


def test_fewer_clients_and_the_next_is_refused_clearly(tmp_path: Path) -> None:
    server = start_serve(tmp_path / "db", args=("--max-clients", "8"))
    try:
        opened, refusal = _open_until_refused(server, 30)
        # N clients get in; tique keeps a few sessions in reserve for itself, which idle clients may take
        assert 8 <= len(opened) <= 8 + 4, len(opened)
        assert "maximum concurrent client limit reached" in refusal, refusal
        for c in opened:
            c.close()
    finally:
        server.stop()


@pytest.mark.parametrize("value", ["0", "-3", "100000"])
def test_a_bad_value_is_refused(tmp_path: Path, value: str) -> None:
    command = [sys.executable, "-m", "tique.cli", "serve", str(tmp_path / "db"), "--port", str(free_port())]
    done = subprocess.run(
        [*command, "--password", "x", "--max-clients", value], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.returncode == 2 and "--max-clients must be between 1 and" in done.stderr, done.stderr
    assert not (tmp_path / "db").exists()
