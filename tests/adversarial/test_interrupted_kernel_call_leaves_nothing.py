"""A kernel call interrupted by Ctrl-C leaves nothing behind: no result held in the kernel, no session open.

On a session stack the embedded kernel's C call runs on the calling thread, so KeyboardInterrupt is raised there
as the call returns, between the call and the code that would free what it made: a SELECT's result (its BATs,
held until the session closes) or, for monetdbe_open, a session no connection knows of (which kept the kernel up
and the directory locked after every connection was closed). The interrupt is sent once the main thread is
inside the C call. Run in subprocesses: the interrupt would stop pytest itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tique.engine import session_stack

# with worker threads the interrupt arrives while the call goes on on its worker (tests/adversarial/
# test_interrupted_call.py), and the main thread is never inside the C call these tests wait for
pytestmark = pytest.mark.skipif(
    os.environ.get("TIQUE_SESSION_STACKS") == "0" or session_stack._load() is None,
    reason="embedded sessions use worker threads here",
)

# Sends SIGINT to the process once the main thread is inside the kernel call ``name`` (its frame is
# OnSessionStack.c, which releases the GIL for the call), or in a frame of the function ``name`` for which
# ``where(frame)`` holds.
INTERRUPTER = """
import os, signal, sys, threading, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # a shell without job control may leave it ignored

def interrupt_inside(name, where=None):
    main = threading.main_thread().ident
    if where is None:
        where = lambda frame: frame.f_code.co_name == "c" and frame.f_locals.get("name") == name
    def watch():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            frame = sys._current_frames().get(main)
            if frame is not None and where(frame):
                time.sleep(0.05)  # well inside the call
                os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.001)
    threading.Thread(target=watch, daemon=True).start()
"""

SELECT = (
    INTERRUPTER
    + """
import tique
conn = tique.connect(sys.argv[1])
cur = conn.cursor()
cur.execute("CREATE FUNCTION pause_ms(ms INT) RETURNS INT EXTERNAL NAME alarm.sleep")
conn.commit()

def bats():
    cur.execute("SELECT COUNT(*) FROM sys.bbp()")
    return cur.fetchall()[0][0]

before = bats()
for _ in range(3):
    interrupt_inside("monetdbe_query")
    try:
        cur.execute("SELECT pause_ms(300) AS a, 'x' AS b")
        print("not interrupted", flush=True)
    except KeyboardInterrupt:
        pass
    conn.rollback()
print(bats() - before, flush=True)
cur.execute("SELECT 42")
print(cur.fetchall(), flush=True)
conn.close()
"""
)

OPEN = (
    INTERRUPTER
    + """
from tique.engine import open_engine, session_stack
session_stack.lowlevel()  # the imports, out of the interrupted time
engine = open_engine(sys.argv[1])
interrupt_inside("monetdbe_open")
try:
    engine.connect().close()
    print("not interrupted", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
conn = engine.connect()
print(conn.execute("SELECT 1").rows, flush=True)
engine.close()  # every connection this process knows of: the kernel must go down, the directory be free
visitor = "import sys, tique; tique.connect(sys.argv[1]).close(); print('visited')"
done = subprocess.run([sys.executable, "-c", visitor, sys.argv[1]], capture_output=True, text=True, timeout=120)
print(done.stdout.strip() or done.stderr.strip().splitlines()[-1], flush=True)
"""
)


CLOSE = (
    INTERRUPTER
    + """
from tique.engine import open_engine
engine = open_engine(sys.argv[1])
conn = engine.connect()
conn.execute("CREATE TABLE t (x INT)")
conn.execute("INSERT INTO t VALUES (1)")
# the last session's close waits for the kernel's store manager to leave its loop (a sleep), then closes
interrupt_inside("", lambda frame: frame.f_code.co_name == "_close_session" and frame.f_locals.get("last"))
try:
    engine.close()
    print("not interrupted", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
visitor = "import sys, tique; tique.connect(sys.argv[1]).close(); print('visited')"

def visit():
    done = subprocess.run([sys.executable, "-c", visitor, sys.argv[1]], capture_output=True, text=True, timeout=120)
    print(done.stdout.strip() or done.stderr.strip().splitlines()[-1], flush=True)

visit()
again = open_engine(sys.argv[1])
print(again.connect().execute("SELECT COUNT(*) FROM t").rows, flush=True)
again.close()
visit()  # closed again: the interrupted close left no count behind either
"""
)


def run(script: str, url: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", "import subprocess\n" + script, url],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_an_interrupted_select_leaves_no_result_in_the_kernel(tmp_path: Path) -> None:
    # before: each interrupted SELECT left its result's BATs (3 here) held until the session closed
    assert run(SELECT, f"monetdbe://{tmp_path / 'db'}") == ["0", "[(42,)]"]


def test_an_interrupted_open_leaves_no_session(tmp_path: Path) -> None:
    # before: the session opened by the interrupted call stayed open, uncounted; closing every connection left the
    # kernel up and the directory locked ("locked by another process")
    assert run(OPEN, f"monetdbe://{tmp_path / 'db'}") == ["interrupted", "[(1,)]", "visited"]


def test_an_interrupted_close_of_the_last_session_still_closes_the_kernel(tmp_path: Path) -> None:
    # before: interrupted in its wait for the store manager, the last session was never closed: the kernel stayed
    # up, the directory locked, and the process counted the session as open for good
    assert run(CLOSE, f"monetdbe://{tmp_path / 'db'}") == ["interrupted", "visited", "[(1,)]", "visited"]
