"""A wheel built by `pip wheel .` installs into a fresh Python 3.10 venv and works with no source tree present:
a transaction on an embedded database, `tique --version`, and `tique serve` reached over MAPI.

Under `make test-long` the wheel's dependencies are installed from the package index (about 40 s of the test's
50: 200 MB of numpy, pandas and the rest); `make test` installs the wheel alone and lends the venv the test
environment's installed dependencies (tique itself still comes from the wheel: the venv's own site-packages
comes first, which the test checks)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

from tests.conftest import LONG, ROOT, free_port


def python310() -> str | None:
    """Python 3.10 found the way the Makefile finds it."""
    try:
        found = subprocess.run(
            ["pyenv", "which", "python3.10"],
            capture_output=True,
            text=True,
            env={**os.environ, "PYENV_VERSION": "3.10.13"},
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        found = ""
    return found or shutil.which("python3.10")


PYTHON310 = python310()

pytestmark = pytest.mark.skipif(
    PYTHON310 is None, reason="needs Python 3.10 (the embedded MonetDB wheel exists only for it) to build a venv"
)

TRANSACTION = """
import sys
import tique
from tique.engine import udf

conn = tique.connect(sys.argv[1])
cur = conn.cursor()
cur.execute("CREATE TABLE acct (id INT PRIMARY KEY, balance INT)")
cur.execute("INSERT INTO acct VALUES (%s, %s), (%s, %s)", (1, 100, 2, 0))
conn.commit()
cur.execute("UPDATE acct SET balance = balance - 30 WHERE id = %(id)s", {"id": 1})
cur.execute("UPDATE acct SET balance = balance + 30 WHERE id = %(id)s", {"id": 2})
conn.commit()
cur.execute("SELECT id, balance FROM acct ORDER BY id")
print(cur.fetchall())
print(tique.__file__)
print(udf.library_path())
"""

CLIENT = """
import sys
import tique

conn = tique.connect(sys.argv[1])
print(conn.execute("SELECT 6 * 7").fetchall())
"""


def run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.mark.timeout(600)
def test_wheel_installs_and_runs_without_the_source_tree(tmp_path: Path) -> None:
    assert PYTHON310 is not None
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    wheels = tmp_path / "wheels"
    run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(wheels)], ROOT, env)
    (wheel,) = wheels.glob("tique-*.whl")

    venv = tmp_path / "venv"
    run([PYTHON310, "-m", "venv", str(venv)], tmp_path, env)
    python, tique_cmd = venv / "bin" / "python", venv / "bin" / "tique"
    if LONG:
        run([str(python), "-m", "pip", "install", "-q", str(wheel)], tmp_path, env)
    else:
        run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], tmp_path, env)
        # written after the install, so pip never saw this environment's editable tique as installed
        (site,) = (venv / "lib").glob("python3.10/site-packages")
        (site / "test_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")

    work = tmp_path / "elsewhere"  # no source tree here or above it
    work.mkdir()
    (work / "transaction.py").write_text(TRANSACTION)
    out = run([str(python), "transaction.py", f"monetdbe://{work / 'db'}"], work, env).splitlines()
    assert out[0] == "[(1, 70), (2, 30)]"
    assert out[1].startswith(str(venv)), "tique was imported from the source tree, not the wheel"
    assert out[2].startswith(str(tmp_path / "cache" / "tique")), "the C module was not compiled into the cache"
    assert Path(out[2]).is_file()

    version = run([str(tique_cmd), "--version"], work, env).strip()
    assert version.startswith("tique ") and version.split()[1][0].isdigit()

    port = free_port()
    directory = work / "data" / "nested" / "db"  # parents are created by `tique serve`
    serve = subprocess.Popen(
        [str(tique_cmd), "serve", str(directory), "--port", str(port)],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert serve.stdout is not None
        deadline = time.monotonic() + 120
        line = ""
        while time.monotonic() < deadline and "ready on" not in line:
            line = serve.stdout.readline()
            if not line and serve.poll() is not None:
                pytest.fail(f"tique serve exited {serve.returncode}: {serve.stderr.read() if serve.stderr else ''}")
        assert "ready on" in line and str(directory) in line
        (work / "client.py").write_text(CLIENT)
        url = f"monetdb://monetdb:monetdb@127.0.0.1:{port}/db"
        assert run([str(python), "client.py", url], work, env).strip() == "[(42,)]"
    finally:
        serve.terminate()
        serve.wait(60)
