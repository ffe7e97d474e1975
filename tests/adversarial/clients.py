"""Drive tique clients running in other processes (sql_client.py), one statement at a time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
SCRIPT = Path(__file__).resolve().parent / "sql_client.py"


class Client:
    """One process with one tique connection."""

    def __init__(self, url: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(SCRIPT), url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        self._read()

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"client process exited with {self.proc.wait(10)}")
        return json.loads(line)

    def send(self, op: str, sql: str = "", params: Any = None) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps([op, sql, params]) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def ok(self, sql: str, params: Any = None) -> list[list[Any]]:
        """Run a statement that must succeed; its rows."""
        reply = self.send("exec", sql, params)
        assert "error" not in reply, f"{sql}: {reply}"
        return reply["rows"]

    def commit(self) -> dict[str, Any]:
        return self.send("commit")

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
