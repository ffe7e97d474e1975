"""What every benchmark shares: timing, percentiles, machine info, result files, a server subprocess."""

from __future__ import annotations

import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def percentiles_ms(samples_s: list[float]) -> dict[str, float]:
    """p50/p95/p99 in milliseconds of samples in seconds."""
    if not samples_s:
        return {"p50": float("nan"), "p95": float("nan"), "p99": float("nan"), "n": 0}
    ordered = sorted(samples_s)

    def pick(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 4)

    return {
        "p50": pick(0.50),
        "p95": pick(0.95),
        "p99": pick(0.99),
        "mean": round(statistics.fmean(ordered) * 1000, 4),
        "n": len(ordered),
    }


def time_calls(fn: Callable[[int], Any], n: int, warmup: int = 50) -> list[float]:
    for i in range(warmup):
        fn(-1 - i)
    samples = []
    for i in range(n):
        t0 = time.perf_counter()
        fn(i)
        samples.append(time.perf_counter() - t0)
    return samples


def machine_info() -> dict[str, Any]:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout)
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "git_commit": commit or None,
        "git_dirty": dirty,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def write_json(path: str | Path, payload: dict[str, Any]) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return out


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def served_database(password: str = "monetdb") -> Iterator[str]:
    """A ``tique serve`` subprocess on a throw-away directory; yields its URL."""
    with tempfile.TemporaryDirectory(prefix="tique-bench-") as tmp:
        directory = Path(tmp) / "bench"
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "tique.cli", "serve", str(directory), "--port", str(port), "--password", password],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if "ready on" not in line:
                raise RuntimeError(f"tique serve did not start: {line}{proc.stderr.read() if proc.stderr else ''}")
            yield f"monetdb://monetdb:{password}@127.0.0.1:{port}/{directory.name}"
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
