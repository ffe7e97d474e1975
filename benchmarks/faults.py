"""Fault injection: ``python -m benchmarks faults`` (results/faults.json, benchmarks/FAULTS_RESULTS.md).

Each scenario counts acknowledged commits (COMMIT returned) and checks every one of them is still there at the
end, after a SIGKILL of the server and a restart:

- ``dead``: two clients commit in a loop through ``tique serve`` (checkpointer every 50 ms) while client
  processes are SIGKILLed at every step of their COMMIT; the steady clients' commit latencies show how long a
  dead committer holds the others back;
- ``connections``: 200 connections at once, each committing one row (``tique serve --max-clients``);
- ``disk_full``: an embedded writer fills a 30 MB tmpfs with 100 KB rows (root only: it mounts one).

Server kills under load are the soak's job (``python -m benchmarks soak``, benchmarks/SOAK_RESULTS.md).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import tique
from benchmarks.common import free_port
from benchmarks.soak import Server

ROOT = Path(__file__).resolve().parent.parent
STEPS = ["recorded", "published", "decided", "advanced"]

VICTIM = """
import os, signal, sys
import tique
from tique import transaction
conn = tique.connect(sys.argv[1])
cur = conn.cursor()
cur.execute("INSERT INTO journal VALUES (%s)", (int(sys.argv[3]),))
cur.execute("UPDATE kv SET v = v + 1 WHERE k = 0")
transaction.step_hooks.append(lambda s, _t: os.kill(os.getpid(), signal.SIGKILL) if s == sys.argv[2] else None)
conn.commit()
"""


def _journal(url: str) -> set[int]:
    conn = tique.connect(url)
    try:
        cur = conn.cursor()
        cur.execute("SELECT id FROM journal")
        found = {int(r[0]) for r in cur.fetchall()}
        conn.commit()
        return found
    finally:
        conn.close()


def _restart(server: Server) -> None:
    server.kill()
    server.start()


def _setup(url: str) -> None:
    conn = tique.connect(url)
    cur = conn.cursor()
    cur.execute("CREATE TABLE journal (id INT PRIMARY KEY)")
    cur.execute("CREATE TABLE kv (k INT PRIMARY KEY, v INT)")
    cur.executemany("INSERT INTO kv VALUES (%s, 0)", [(k,) for k in range(3)])
    conn.commit()
    conn.close()


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def dead_committers(workdir: Path, victims: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    server = Server(workdir / "dead", free_port(), workdir / "dead.log", 0.05)
    server.start()
    _setup(server.url)
    acked: set[int] = set()
    latencies: list[float] = []
    errors: list[str] = []
    stop = threading.Event()

    def steady(k: int) -> None:
        conn = tique.connect(server.url)
        cur = conn.cursor()
        n = 0
        while not stop.is_set():
            n += 1
            row = k * 1_000_000 + n
            try:
                cur.execute("INSERT INTO journal VALUES (%s)", (row,))
                cur.execute("UPDATE kv SET v = v + 1 WHERE k = %s", (k,))
                began = time.monotonic()
                conn.commit()
                latencies.append(time.monotonic() - began)
                acked.add(row)
            except tique.Error as exc:
                errors.append(f"{type(exc).__name__}: {str(exc)[:160]}")
                conn.rollback()
        conn.close()

    threads = [threading.Thread(target=steady, args=(k,)) for k in (1, 2)]
    for th in threads:
        th.start()
    killed: dict[str, int] = {}
    applied: list[int] = []
    for i in range(victims):
        step = STEPS[i % len(STEPS)] if i < len(STEPS) else rng.choice(STEPS)
        row = -(i + 1)
        done = subprocess.run(
            [sys.executable, "-c", VICTIM, server.url, step, str(row)], capture_output=True, cwd=ROOT, timeout=120
        )
        if done.returncode == -signal.SIGKILL:
            killed[step] = killed.get(step, 0) + 1
            applied.append(row)
        time.sleep(rng.uniform(0.2, 1.0))
    stop.set()
    for th in threads:
        th.join(120)
    running = _journal(server.url)
    _restart(server)
    after = _journal(server.url)
    server.kill(signal.SIGTERM)
    return {
        "victims_killed_at": killed,
        "victim_commits_present": sum(1 for r in applied if r in after),
        "steady_commits_acknowledged": len(acked),
        "lost_while_running": len(acked - running),
        "lost_after_server_kill": len(acked - after),
        "commit_latency_ms": {
            "p50": round(statistics.median(latencies) * 1000, 1) if latencies else None,
            "p99": round(_percentile(latencies, 0.99) * 1000, 1),
            "max": round(max(latencies, default=0) * 1000, 1),
        },
        "steady_errors": len(errors),
        "steady_error_kinds": sorted({e.split(":")[0] for e in errors}),
    }


def many_connections(workdir: Path, clients: int) -> dict[str, Any]:
    help_text = subprocess.run(
        [sys.executable, "-m", "tique.cli", "serve", "--help"], capture_output=True, text=True, cwd=ROOT
    ).stdout
    args: tuple[str, ...] = ("--max-clients", str(clients + 16)) if "--max-clients" in help_text else ()
    server = Server(workdir / "conns", free_port(), workdir / "conns.log", 0.05, args=args)
    server.start()
    _setup(server.url)
    acked: set[int] = set()
    errors: list[str] = []
    barrier = threading.Barrier(clients, timeout=300)

    def one(i: int) -> None:
        try:
            conn = tique.connect(server.url)
        except tique.Error as exc:
            errors.append(f"connect: {type(exc).__name__}: {str(exc)[:160]}")
            barrier.abort()
            return
        try:
            barrier.wait()  # every connection open at once
            conn.cursor().execute("INSERT INTO journal VALUES (%s)", (i,))
            conn.commit()
            acked.add(i)
        except (tique.Error, threading.BrokenBarrierError) as exc:
            errors.append(f"{type(exc).__name__}: {str(exc)[:160]}")
        finally:
            conn.close()

    began = time.monotonic()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(1, clients + 1)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(600)
    seconds = time.monotonic() - began
    _restart(server)
    after = _journal(server.url)
    server.kill(signal.SIGTERM)
    return {
        "connections": clients,
        "max_clients_option": bool(args),
        "acknowledged": len(acked),
        "lost_after_server_kill": len(acked - after),
        "errors": len(errors),
        "first_errors": errors[:3],
        "seconds": round(seconds, 1),
    }


def disk_full(workdir: Path) -> dict[str, Any]:
    mount = workdir / "tmpfs"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=30m", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        return {"skipped": f"cannot mount a tmpfs here: {made.stderr.decode().strip()[:200]}"}
    try:
        url = f"monetdbe://{mount / 'db'}"
        client = ROOT / "tests" / "adversarial" / "disk_full_client.py"
        ballast = mount / "ballast"  # deleted by the writer once the disk is full: space returns
        ballast.write_bytes(b"\1" * (2 << 20))
        command = [sys.executable, str(client), "fill", url, str(ballast)]
        # a 30 MB disk: keep 8 MB free (the default minimum, 64 MB, would refuse every write at once)
        env = {**os.environ, "TIQUE_MIN_FREE_MB": "8"}
        filled = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600, env=env)
        result = json.loads(filled.stdout.strip().splitlines()[-1])
        reread = subprocess.run(
            [sys.executable, str(client), "read", url], capture_output=True, text=True, cwd=ROOT, timeout=300
        )
        after = json.loads(reread.stdout.strip().splitlines()[-1])
        acked = set(result["acked"])
        kinds = sorted({e.split(":")[0] for e in result["errors"]})
        return {
            "acknowledged": len(acked),
            "lost_after_reopen": len(acked - set(after)) if isinstance(after, list) else f"unreadable: {after}",
            "error_kinds": kinds,
            "write_after_space_returned": result["after_space"] or "committed",
        }
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def markdown(result: dict[str, Any]) -> str:
    d, c, f = result["dead"], result["connections"], result["disk_full"]
    lines = [
        "# Fault injection",
        "",
        f"`python -m benchmarks faults` on {result['at']} (commit {result['commit']}).",
        "",
        "| scenario | acknowledged commits | lost | notes |",
        "| --- | --- | --- | --- |",
        f"| clients SIGKILLed at every COMMIT step ({sum(d['victims_killed_at'].values())} kills: "
        f"{', '.join(f'{k} {v}' for k, v in sorted(d['victims_killed_at'].items()))}) | "
        f"{d['steady_commits_acknowledged']} | {d['lost_while_running']} running, {d['lost_after_server_kill']} after "
        f"a server SIGKILL | other clients' COMMIT p50 {d['commit_latency_ms']['p50']} ms, p99 "
        f"{d['commit_latency_ms']['p99']} ms, max {d['commit_latency_ms']['max']} ms; "
        f"{d['victim_commits_present']} killed commits present (killed after deciding to commit) |",
        f"| {c['connections']} connections at once | {c['acknowledged']} | {c['lost_after_server_kill']} after a "
        f"server SIGKILL | {c['errors']} errors{' (' + '; '.join(c['first_errors']) + ')' if c['errors'] else ''}; "
        f"{c['seconds']} s |",
    ]
    if "skipped" in f:
        lines.append(f"| disk full (30 MB tmpfs) | - | - | skipped: {f['skipped']} |")
    else:
        lines.append(
            f"| disk full (30 MB tmpfs, 100 KB rows) | {f['acknowledged']} | {f['lost_after_reopen']} after reopen | "
            f"errors raised: {', '.join(f['error_kinds']) or 'none'} |"
        )
    lines += ["", "Server kills under load: see SOAK_RESULTS.md.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks faults", description=__doc__.splitlines()[0])
    parser.add_argument("--victims", type=int, default=12, help="clients killed in the middle of COMMIT")
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="results/faults.json")
    args = parser.parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    with tempfile.TemporaryDirectory(prefix="tique-faults-") as tmp:
        work = Path(tmp)
        result: dict[str, Any] = {
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "commit": commit.stdout.strip() or "unknown",
        }
        print("dead committers ...", flush=True)
        result["dead"] = dead_committers(work, args.victims, args.seed)
        print(json.dumps(result["dead"]), flush=True)
        print(f"{args.connections} connections ...", flush=True)
        result["connections"] = many_connections(work, args.connections)
        print(json.dumps(result["connections"]), flush=True)
        print("disk full ...", flush=True)
        result["disk_full"] = disk_full(work)
        print(json.dumps(result["disk_full"]), flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    out.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))
    lost = (
        result["dead"]["lost_while_running"]
        + result["dead"]["lost_after_server_kill"]
        + result["connections"]["lost_after_server_kill"]
        + int(result["disk_full"].get("lost_after_reopen") or 0)
    )
    return 1 if lost else 0
