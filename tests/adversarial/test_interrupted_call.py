"""An interrupted statement never answers the next one.

Ctrl-C (KeyboardInterrupt) while a statement runs in the embedded kernel interrupts the caller; the statement
itself runs to its end on its kernel thread. The next statement on the connection must get its own result, not
the interrupted one's (which, inside COMMIT, would mix up the protocol's answers). Run in a subprocess: the
interrupt would stop pytest itself.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, start_serve

SCRIPT = """
import os, signal, sys, threading, tique
# A process started in the background by a shell without job control inherits SIGINT ignored (CI runners may
# start the suite so): Python then installs no KeyboardInterrupt handler, and the test would prove nothing.
signal.signal(signal.SIGINT, signal.default_int_handler)
conn = tique.connect(sys.argv[1])
cur = conn.cursor()
cur.execute("CREATE FUNCTION pause_ms(ms INT) RETURNS INT EXTERNAL NAME alarm.sleep")
cur.execute("CREATE TABLE ten (x INT) -- tique: plain")
cur.execute("INSERT INTO ten VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9)")
conn.commit()
threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
try:
    cur.execute("SELECT pause_ms(2000)")
    print("not interrupted", cur.fetchall(), flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
try:
    cur.execute("SELECT 42")
    print(cur.fetchall(), flush=True)
    cur.execute("SELECT COUNT(*) FROM ten")
    print(cur.fetchall(), flush=True)
    conn.close()
except tique.Error as exc:  # over MAPI the interrupted exchange costs the connection
    print("error:", "interrupted mid-exchange" in str(exc), flush=True)
"""


def run(url: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", SCRIPT, url], capture_output=True, text=True, timeout=300, cwd=ROOT)
    lines = done.stdout.splitlines()
    assert lines[:1] == ["interrupted"], (done.stdout, done.stderr)  # the statement was still running
    assert done.returncode == 0, done.stderr
    return lines[1:]


def test_embedded_the_next_statement_gets_its_own_result(tmp_path: Path) -> None:
    assert run(f"monetdbe://{tmp_path / 'db'}") == ["[(42,)]", "[(10,)]"]


def test_mapi_the_next_statement_gets_its_own_result_or_an_error(tmp_path: Path) -> None:
    server = start_serve(tmp_path / "served")
    try:
        assert run(server.url) == ["error: True"]  # never the interrupted statement's answer
    finally:
        server.stop()
