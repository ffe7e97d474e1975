"""Every ```python block of the README runs as written (the path placeholder /abs/path/to becomes a temporary
directory), each in its own process, and prints what its `# ...` comments say."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
PRINTED = re.compile(r"^\s*print\(.*\)\s*#\s*(.+?)\s*$", re.M)


def blocks() -> list[str]:
    return BLOCK.findall((ROOT / "README.md").read_text())


def test_the_readme_has_python_examples() -> None:
    assert blocks(), "README.md has no ```python block: this test would check nothing"


@pytest.mark.parametrize("index", range(len(blocks())))
def test_readme_python_block_runs(tmp_path: Path, index: int) -> None:
    code = blocks()[index].replace("/abs/path/to", str(tmp_path))
    script = tmp_path / f"readme_{index}.py"
    script.write_text(code)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, f"README block {index} failed:\n{code}\n{proc.stderr}"
    expected = PRINTED.findall(code)
    assert proc.stdout.splitlines() == expected, proc.stdout
