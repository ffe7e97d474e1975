"""Closing the last tique connection to an embedded database releases its directory: another process can open
it at once, while this process keeps running (and can open it again later)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

HOLDER = """
import sys, tique
url = sys.argv[1]
first, second = tique.connect(url), tique.connect(url)
first.cursor().execute("CREATE TABLE t (k INT PRIMARY KEY, v INT)")
first.cursor().execute("INSERT INTO t VALUES (1, 1)")
first.commit()
first.close()
print("one open", flush=True)
sys.stdin.readline()
second.close()
print("all closed", flush=True)
sys.stdin.readline()
again = tique.connect(url)
cur = again.cursor()
cur.execute("SELECT k, v FROM t ORDER BY k")
print(cur.fetchall(), flush=True)
again.close()
"""

VISITOR = """
import sys, tique
conn = tique.connect(sys.argv[1])
cur = conn.cursor()
cur.execute("SELECT k, v FROM t ORDER BY k")
assert cur.fetchall() == [(1, 1)], "the other process's commit is missing"
cur.execute("INSERT INTO t VALUES (2, 2)")
conn.commit()
conn.close()
print("visited", flush=True)
"""


def visit(url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", VISITOR, url], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_closing_the_last_connection_releases_the_directory(tmp_path: Path) -> None:
    url = f"monetdbe://{tmp_path / 'db'}"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "one open"
        locked = visit(url)  # a connection is still open: the directory is the holder's
        assert locked.returncode != 0 and "locked by another process" in locked.stderr
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "all closed"
        visited = visit(url)
        assert visited.returncode == 0, visited.stderr
        assert visited.stdout.strip() == "visited"
        holder.stdin.write("\n")
        holder.stdin.flush()
        out, err = holder.communicate(timeout=120)
        assert holder.returncode == 0, err
        assert out.strip() == "[(1, 1), (2, 2)]"  # reopened in the same process, with the visitor's commit
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(30)
