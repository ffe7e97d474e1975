"""A randomized soak: several client processes through ``tique serve``, the checkpointer every 50 ms, random
SIGKILLs of clients and of the server; after every step the committed state must equal the model of
acknowledged commits.

    python -m benchmarks soak --minutes 30 --clients 3 --seed 1 --out results/soak.json

Each step runs the clients for ``--step-seconds``; at a random moment of most steps a client, the server or
both are killed with SIGKILL and started again (the clients reconnect by themselves). Then every client is
paused between two transactions and the checker reads every table through tique in one snapshot and compares
it with the model (``benchmarks/soak_model.py``) built from the clients' logs: an acknowledged transaction
must be there exactly (Decimals, microseconds, bytes compared exactly), a failed one must not, one in doubt
(CommitOutcomeUnknown, or killed during COMMIT) either entirely or not at all - and once seen applied, forever.
Writes the figures to the JSON file and a markdown summary beside it; exit status 1 when any violation was found.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

import tique
from benchmarks.common import ROOT, free_port, machine_info, write_json
from benchmarks.soak_model import (
    ACCOUNTS,
    COUNTERS,
    INITIAL_BALANCE,
    KEYED,
    TABLES,
    TxId,
    apply,
    columns,
    create_statement,
    decode,
    encode,
    initial_state,
    same,
    same_row,
)
from tique.settings import SNAPSHOT_LEASE_MS

SERVER_DOWN_GRACE_S = 20.0  # errors this long after a server restart are the kill's, not findings
PAUSE_TIMEOUT_S = 120.0


# -- processes ---------------------------------------------------------------------------------------------
@dataclass
class Server:
    directory: Path
    port: int
    log: Path
    checkpoint_interval: float
    password: str = "monetdb"
    args: tuple[str, ...] = ()  # more options of tique serve
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"monetdb://monetdb:{self.password}@127.0.0.1:{self.port}/{self.directory.name}"

    def start(self, timeout: float = 120) -> float:
        """Start ``tique serve`` and wait for its readiness line; returns the seconds it took."""
        began = time.monotonic()
        offset = self.log.stat().st_size if self.log.exists() else 0
        command = [sys.executable, "-m", "tique.cli", "serve", str(self.directory), "--port", str(self.port)]
        command += ["--password", self.password, "--checkpoint-interval", str(self.checkpoint_interval), *self.args]
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
        while time.monotonic() - began < timeout:
            with open(self.log, "rb") as f:
                f.seek(offset)
                if b"ready on" in f.read():
                    return time.monotonic() - began
            if self.proc.poll() is not None:
                raise RuntimeError(f"tique serve exited {self.proc.returncode}; see {self.log}")
            time.sleep(0.05)
        raise RuntimeError(f"tique serve did not become ready in {timeout} s; see {self.log}")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)
        self.proc.wait(60)


class ClientProcess:
    """A soak client (benchmarks/soak_client.py) with a thread that collects its control answers."""

    def __init__(
        self, workdir: Path, client: int, incarnation: int, seed: int, skipped: list[str], negative: str = ""
    ) -> None:
        self.client = client
        self.incarnation = incarnation
        self.stderr_path = workdir / f"client{client}.{incarnation}.err"
        command = [sys.executable, "-m", "benchmarks.soak_client", str(workdir / "url"), str(log_path(workdir, client))]
        command += [str(client), str(incarnation), str(seed), ",".join(skipped), negative]
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, cwd=ROOT)
        self.answers: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.answers.put(line.decode().strip())

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(f"{command}\n".encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # it died; the driver notices at the next poll

    def wait_paused(self, deadline: float) -> bool:
        while time.monotonic() < deadline:
            try:
                if self.answers.get(timeout=0.2) == "paused":
                    return True
            except queue.Empty:
                if self.proc.poll() is not None:
                    return False
        return False

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)


def log_path(workdir: Path, client: int) -> Path:
    return workdir / f"client{client}.jsonl"


# -- the checker ---------------------------------------------------------------------------------------------
@dataclass
class Tx:
    tx: TxId
    kind: str
    ops: list[Any]
    at: float
    outcome: str | None = None  # ok, abort, unknown, error; None: the client died before it heard
    priority: bool = False  # run by conn.run(..., priority=True)
    err: str = ""


@dataclass
class History:
    """What the driver remembers between checks."""

    server_restarts: list[tuple[float, float]] = field(default_factory=list)  # (killed at, ready at)
    seen_applied: set[TxId] = field(default_factory=set)
    settled_absent: dict[TxId, int] = field(default_factory=dict)  # in doubt, absent after a restart: at step
    violations: dict[str, dict[str, Any]] = field(default_factory=dict)  # by signature, first seen
    checks: int = 0
    failed_checks: int = 0
    check_errors: list[str] = field(default_factory=list)

    def violation(self, step: int, kind: str, **details: Any) -> None:
        signature = json.dumps([kind, details.get("table"), details.get("key"), details.get("tx")], default=str)
        if signature in self.violations:
            self.violations[signature]["checks_seen"] += 1
        else:
            self.violations[signature] = {"kind": kind, "step": step, "checks_seen": 1, **details}


def read_logs(workdir: Path, clients: int) -> tuple[dict[TxId, Tx], list[dict[str, Any]]]:
    """Every logged write transaction by id, and every other record (checks, errors, starts)."""
    txs: dict[TxId, Tx] = {}
    others: list[dict[str, Any]] = []
    for client in range(clients):
        path = log_path(workdir, client)
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by SIGKILL
            tx_id = tuple(record["tx"]) if "tx" in record else None
            if record["t"] == "intent":
                ops = decode(record["ops"])
                txs[tx_id] = Tx(tx_id, record["kind"], ops, record["at"], priority=record.get("priority", False))  # type: ignore[index]
            elif tx_id is not None and tx_id in txs:
                txs[tx_id].outcome, txs[tx_id].err = record["t"], record.get("err", "")  # type: ignore[index]
            else:
                record["client"] = client
                others.append(record)
    return txs, others


def read_database(url: str, skipped: list[str]) -> dict[str, list[tuple[Any, ...]]]:
    """Every soak table, read through tique in one snapshot (one transaction)."""
    conn = tique.connect(url, snapshot_lease_ms=SNAPSHOT_LEASE_MS)
    try:
        cur = conn.cursor()
        tables: dict[str, list[tuple[Any, ...]]] = {}
        for table in TABLES:
            if table in skipped:
                continue
            cur.execute(f"SELECT {', '.join(columns(table))} FROM {table}")
            tables[table] = [tuple(row) for row in cur.fetchall()]
        conn.commit()
        return tables
    finally:
        conn.close()


def check(url: str, workdir: Path, clients: int, skipped: list[str], history: History, step: int) -> None:
    """Compare the committed state with the model of the logged transactions; record violations in history."""
    for attempt in range(5):
        try:
            db = read_database(url, skipped)
            break
        except Exception as exc:
            if attempt == 4:  # counted, not a violation: the checker could not read (the server may be down)
                history.check_errors.append(f"step {step}: {type(exc).__name__}: {exc}"[:500])
                return
            time.sleep(1 + attempt)
    txs, _ = read_logs(workdir, clients)
    history.checks += 1
    before = sum(v["checks_seen"] for v in history.violations.values())
    applied = check_journal(db["journal"], txs, history, step)
    expected = initial_state()
    writer: dict[tuple[str, Any], TxId] = {}
    for tx_id in sorted(applied):
        for op in txs[tx_id].ops:
            apply(expected, op)
            if op[0] in ("put", "del", "set", "incr"):
                writer[(op[1], op[2])] = tx_id
    for table in [*KEYED, "ctr", "acct"]:
        if table not in skipped:
            compare_keyed(table, db[table], expected[table], writer, history, step)
    compare_bag(db["bag"], expected["bag"], history, step)
    if sum(v["checks_seen"] for v in history.violations.values()) > before:
        history.failed_checks += 1


def check_journal(journal: list[tuple[Any, ...]], txs: dict[TxId, Tx], history: History, step: int) -> set[TxId]:
    """Which logged transactions are applied (their journal row is there), against what their clients heard."""
    rows = Counter(tuple(int(v) for v in row) for row in journal)
    for tx_id, n in rows.items():
        if n > 1:
            history.violation(step, "journal row duplicated", tx=list(tx_id), copies=n)
        if tx_id not in txs:
            history.violation(step, "applied but never committed by its client", tx=list(tx_id))
    applied = {tx_id for tx_id in rows if tx_id in txs}
    last_restart = history.server_restarts[-1][1] if history.server_restarts else 0.0
    for tx_id, tx in txs.items():
        is_applied = tx_id in applied
        if tx.outcome == "ok" and not is_applied:
            history.violation(step, "acknowledged commit missing", tx=list(tx_id), kind_of_tx=tx.kind)
        elif tx.outcome in ("abort", "error") and is_applied:
            history.violation(step, f"applied although COMMIT raised ({tx.outcome})", tx=list(tx_id), err=tx.err)
        elif tx.outcome in (None, "unknown"):
            if is_applied:
                history.seen_applied.add(tx_id)
                if tx_id in history.settled_absent:
                    history.violation(
                        step, "in-doubt commit appeared after recovery had settled it as absent", tx=list(tx_id)
                    )
            elif tx_id in history.seen_applied:
                history.violation(step, "in-doubt commit seen applied earlier, now gone", tx=list(tx_id))
            elif tx.at < last_restart:
                history.settled_absent.setdefault(tx_id, step)
    return applied


def compare_keyed(
    table: str,
    got_rows: list[tuple[Any, ...]],
    expected: dict[Any, tuple[Any, ...]],
    writer: dict[tuple[str, Any], TxId],
    history: History,
    step: int,
) -> None:
    got: dict[Any, tuple[Any, ...]] = {}
    for row in got_rows:
        if row[0] in got:
            history.violation(step, "duplicate key", table=table, key=encode(row[0]), rows=encode([got[row[0]], row]))
        got[row[0]] = row
    for key in set(got) | set(expected):
        want, have = expected.get(key), got.get(key)
        if want is not None and have is not None and same_row(want, have):
            continue
        if want is None:
            kind, differing = "row that no applied transaction wrote", None
        elif have is None:
            kind, differing = "committed row missing", None
        else:
            kind = "row differs from the model"
            differing = [name for name, a, b in zip(columns(table), want, have) if not same(a, b)]
        last = writer.get((table, key))
        history.violation(
            step,
            kind,
            table=table,
            columns=differing,
            key=encode(key),
            expected=encode(want),
            got=encode(have),
            last_writer=list(last) if last else None,
        )


def compare_bag(got_rows: list[tuple[Any, ...]], expected: dict[Any, list[str]], history: History, step: int) -> None:
    got: dict[tuple[int, int], list[str]] = {}
    for owner, tag, payload in got_rows:
        got.setdefault((owner, tag), []).append(payload)
    for key in set(got) | set(expected):
        want, have = sorted(expected.get(key, []), key=repr), sorted(got.get(key, []), key=repr)
        if want != have:
            history.violation(
                step, "no-key rows differ from the model", table="bag", key=list(key), expected=want, got=have
            )


# -- figures ------------------------------------------------------------------------------------------------------
def figures(txs: dict[TxId, Tx], others: list[dict[str, Any]], history: History) -> dict[str, Any]:
    outcomes = Counter(tx.outcome or "killed in commit" for tx in txs.values())
    in_doubt = [t for t in txs.values() if t.outcome in (None, "unknown")]
    checks = [r for r in others if r["t"] == "check"]
    return {
        "transactions": {
            "committed": outcomes["ok"],
            "aborted": outcomes["abort"],
            "in_doubt": len(in_doubt),
            "in_doubt_applied": sum(1 for t in in_doubt if t.tx in history.seen_applied),
            "failed_with_error": outcomes["error"],
            "priority_runs_committed": sum(1 for t in txs.values() if t.priority and t.outcome == "ok"),
        },
        "client_read_checks": len(checks),
        "client_read_aborts": sum(1 for r in others if r["t"] == "read_abort"),
        "ddl_cycles": sum(1 for r in others if r["t"] == "ddl"),
    }


def client_violations(others: list[dict[str, Any]], history: History) -> None:
    for record in others:
        for found in record.get("violations") or []:
            detail = {k: v for k, v in found.items() if k != "kind"}
            history.violation(-1, f"client {record['client']}: {found['kind']}", at=record["at"], **detail)


CONNECTION_LOST = (
    "lost the connection",
    "connection was lost",
    "Connection reset",
    "Server closed connection",
    "connection is closed",
    "Could not connect",
    "Broken pipe",
    "Connection refused",
    "not connected",
)


def unexpected_errors(others: list[dict[str, Any]], txs: dict[TxId, Tx], history: History) -> list[dict[str, Any]]:
    """Errors other than a lost connection, grouped by message (numbers masked), with how long after the last
    server kill the first one came (a kill explains lost connections, nothing else)."""
    errors = [(r["at"], r["t"], r.get("err", "")) for r in others if r["t"] in ("read_error", "ddl_error")]
    errors += [(t.at, f"{t.kind} transaction", t.err) for t in txs.values() if t.outcome == "error"]
    groups: dict[str, dict[str, Any]] = {}
    for at, where, err in sorted(errors):
        if any(marker in err for marker in CONNECTION_LOST):
            continue
        kills = [killed for killed, _ in history.server_restarts if killed <= at]
        since = round(at - kills[-1], 1) if kills else None
        group = groups.setdefault(
            re.sub(r"[-+.\dE]+", "N", err)[:100],
            {"message": err[:400], "where": where, "count": 0, "first_s_after_kill": since},
        )
        group["count"] += 1
    return sorted(groups.values(), key=lambda g: -g["count"])


def grouped(violations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Violations by kind, table and differing columns: how many, first step, one example."""
    groups: dict[str, dict[str, Any]] = {}
    for v in violations:
        label = f"{v['kind']} ({v.get('table') or '-'}{': ' + ','.join(v['columns']) if v.get('columns') else ''})"
        group = groups.setdefault(label, {"what": label, "count": 0, "first_step": v["step"], "example": v})
        group["count"] += 1
    return sorted(groups.values(), key=lambda g: -g["count"])


# -- the run ------------------------------------------------------------------------------------------------------
def setup(url: str, history: History, left_out: list[str]) -> list[str]:
    """Create the tables (but those left out) and the shared rows; returns the tables not created: those left
    out and those tique refused (a violation)."""
    conn = tique.connect(url)
    cur = conn.cursor()
    skipped = list(left_out)
    for table in TABLES:
        if table in left_out:
            continue
        try:
            cur.execute(create_statement(table))
        except Exception as exc:  # NotSupportedError is a documented refusal; anything else is a failure
            skipped.append(table)
            if not isinstance(exc, tique.NotSupportedError):
                history.violation(0, "CREATE TABLE failed", table=table, err=f"{type(exc).__name__}: {exc}"[:400])
            conn.rollback()
    cur.executemany("INSERT INTO ctr VALUES (%s, 0)", [(i,) for i in range(COUNTERS)])
    cur.executemany("INSERT INTO acct VALUES (%s, %s)", [(i, INITIAL_BALANCE) for i in range(ACCOUNTS)])
    conn.commit()
    conn.close()
    if {"ctr", "acct", "journal", "bag"} & set(skipped):
        raise RuntimeError(f"the soak's core tables could not be created: {skipped}")
    return skipped


class Soak:
    def __init__(self, args: argparse.Namespace, workdir: Path) -> None:
        self.args = args
        self.rng = random.Random(args.seed)
        self.workdir = workdir
        self.server = Server(workdir / "db", free_port(), workdir / "server.log", args.checkpoint_interval)
        self.history = History()
        self.clients: list[ClientProcess] = []
        self.incarnations = [0] * args.clients
        self.counts = Counter[str]()
        self.skipped: list[str] = []
        self.step = 0
        self.began = time.monotonic()
        self.events: list[dict[str, Any]] = []

    def event(self, what: str, **details: Any) -> None:
        at_s = round(time.monotonic() - self.began, 2)
        self.events.append({"step": self.step, "at_s": at_s, "unix": round(time.time(), 2), "what": what, **details})

    def write_url(self) -> None:
        (self.workdir / "url.tmp").write_text(self.server.url)
        os.replace(self.workdir / "url.tmp", self.workdir / "url")

    def spawn(self, client: int) -> ClientProcess:
        self.incarnations[client] += 1
        seed = self.args.seed * 1000 + client * 100 + self.incarnations[client]
        return ClientProcess(self.workdir, client, self.incarnations[client], seed, self.skipped, self.args.negative)

    def restart_server(self, sig: int = signal.SIGKILL) -> None:
        if self.args.connect_after_ready:  # clients find no URL until the server said it is ready
            (self.workdir / "url").unlink()
        killed = time.time()
        self.server.kill(sig)
        self.counts["server_kills" if sig == signal.SIGKILL else "server_stops"] += 1
        self.event("server killed" if sig == signal.SIGKILL else "server stopped")
        time.sleep(self.rng.uniform(0, 0.5))
        try:
            seconds = self.server.start()
        except RuntimeError:  # the old port may linger: take another one
            self.server.port = free_port()
            seconds = self.server.start()
        self.write_url()
        self.event("server ready", seconds=round(seconds, 2))
        self.counts["restarts"] += 1
        self.history.server_restarts.append((killed, time.time()))

    def kill_client(self) -> None:
        victim = self.rng.randrange(len(self.clients))
        self.clients[victim].kill()
        self.counts["client_kills"] += 1
        self.event("client killed", client=victim, incarnation=self.clients[victim].incarnation)
        self.clients[victim] = self.spawn(victim)

    def respawn_dead(self) -> None:
        for i, proc in enumerate(self.clients):
            if proc.proc.poll() is not None:
                tail = proc.stderr_path.read_text(errors="replace")[-600:]
                self.history.violation(
                    self.step, "client process exited by itself", client=i, rc=proc.proc.returncode, stderr=tail
                )
                self.clients[i] = self.spawn(i)

    def pause_and_check(self) -> None:
        for proc in self.clients:
            proc.send("pause")
        deadline = time.monotonic() + PAUSE_TIMEOUT_S
        stalled = [i for i, proc in enumerate(self.clients) if not proc.wait_paused(deadline)]
        for i in stalled:  # killed: its transaction, if any, is in doubt like any other killed client's
            if self.clients[i].proc.poll() is None:
                self.history.violation(self.step, "client did not reach a pause", client=i, seconds=PAUSE_TIMEOUT_S)
            self.clients[i].kill()
        self.respawn_dead_after(stalled)
        check(self.server.url, self.workdir, self.args.clients, self.skipped, self.history, self.step)
        for proc in self.clients:
            proc.send("resume")

    def respawn_dead_after(self, stalled: list[int]) -> None:
        for i in stalled:
            self.clients[i] = self.spawn(i)
            if not self.clients[i].wait_paused(time.monotonic() + 1e-3):
                self.clients[i].send("pause")
                self.clients[i].wait_paused(time.monotonic() + PAUSE_TIMEOUT_S)

    def one_step(self, seconds: float) -> None:
        self.step += 1
        if self.step == 1 and self.args.min_server_kills > 0:
            event = "server"
        else:
            event = self.rng.choices(["none", "client", "server", "both"], [25, 40, 25, 10])[0]
        at = self.rng.uniform(0.2, 0.9) * seconds
        time.sleep(at)
        if event in ("client", "both"):
            self.kill_client()
        if event in ("server", "both"):
            self.restart_server()
        time.sleep(max(0.0, seconds - at))
        self.respawn_dead()
        self.pause_and_check()

    def run(self) -> dict[str, Any]:
        began = self.began = time.monotonic()
        self.server.start()
        self.write_url()
        self.skipped = setup(self.server.url, self.history, self.args.leave_out)
        self.clients = [self.spawn(i) for i in range(self.args.clients)]
        total = self.args.minutes * 60
        with tqdm(total=round(total), unit="s", desc="soak") as bar:
            while (elapsed := time.monotonic() - began) < total:
                self.one_step(min(self.args.step_seconds, max(1.0, total - elapsed)))
                bar.update(round(min(total, time.monotonic() - began)) - bar.n)
                bar.set_postfix(checks=self.history.checks, violations=len(self.history.violations), **self.counts)
        for proc in self.clients:
            proc.send("stop")
        for proc in self.clients:
            try:
                proc.proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.restart_server(signal.SIGTERM)  # a clean stop and start, then the last check
        check(self.server.url, self.workdir, self.args.clients, self.skipped, self.history, self.step + 1)
        self.server.kill(signal.SIGTERM)
        return self.results(time.monotonic() - began)

    def results(self, duration: float) -> dict[str, Any]:
        txs, others = read_logs(self.workdir, self.args.clients)
        client_violations(others, self.history)
        violations = list(self.history.violations.values())
        return {
            "machine": machine_info(),
            "settings": {
                "minutes": self.args.minutes,
                "seed": self.args.seed,
                "clients": self.args.clients,
                "step_seconds": self.args.step_seconds,
                "checkpoint_interval_s": self.args.checkpoint_interval,
                "leave_out": self.args.leave_out,
                "negative": self.args.negative or None,
                "connect_after_ready": self.args.connect_after_ready,
            },
            "duration_s": round(duration, 1),
            **figures(txs, others, self.history),
            "client_kills": self.counts["client_kills"],
            "server_kills": self.counts["server_kills"],
            "server_restarts": self.counts["restarts"],
            "steps": self.step,
            "invariant_checks": self.history.checks,
            "failed_checks": self.history.failed_checks,
            "check_errors": self.history.check_errors,
            "tables_left_out": self.args.leave_out,
            "tables_refused": [t for t in self.skipped if t not in self.args.leave_out],
            "violations": len(violations),
            "violation_groups": grouped(violations),
            "violation_details": violations[:500],
            "events": self.events,
            "unexpected_errors": unexpected_errors(others, txs, self.history),
        }


def markdown(result: dict[str, Any]) -> str:
    t, settings, machine = result["transactions"], result["settings"], result["machine"]
    lines = [
        "# Soak run",
        "",
        f"`python -m benchmarks soak --minutes {settings['minutes']} --clients {settings['clients']} --seed "
        f"{settings['seed']}{_options(settings)}` on {machine['when']} (commit {str(machine['git_commit'])[:10]}"
        f"{', dirty' if machine['git_dirty'] else ''}); checkpointer every "
        f"{settings['checkpoint_interval_s']} s inside `tique serve`.",
        "",
        *(
            [f"**Negative control** ({settings['negative']}): violations are expected.", ""]
            if settings.get("negative")
            else []
        ),
        "| figure | value |",
        "| --- | --- |",
        f"| duration | {result['duration_s']} s |",
        f"| transactions committed / aborted / failed with an error | {t['committed']} / {t['aborted']} / "
        f"{t['failed_with_error']} |",
        f"| in doubt (found applied) | {t['in_doubt']} ({t['in_doubt_applied']}) |",
        f"| client kills / server kills / restarts | {result['client_kills']} / {result['server_kills']} / "
        f"{result['server_restarts']} |",
        f"| state checks (with a violation) | {result['invariant_checks']} ({result['failed_checks']}) |",
        f"| client read checks / DDL cycles | {result['client_read_checks']} / {result['ddl_cycles']} |",
        f"| **violations** | **{result['violations']}** |",
        "",
    ]
    if result["tables_refused"]:
        lines += [f"Tables tique did not create (their types are not covered): {result['tables_refused']}.", ""]
    if result["violation_groups"]:
        lines += ["| violation | count | first step | example |", "| --- | --- | --- | --- |"]
        for g in result["violation_groups"]:
            example = {k: v for k, v in g["example"].items() if k not in ("kind", "step", "checks_seen")}
            text = json.dumps(example, default=str, ensure_ascii=False).replace("|", "\\|")[:300]
            lines.append(f"| {g['what']} | {g['count']} | {g['first_step']} | `{text}` |")
        lines.append("")
    if result["unexpected_errors"]:
        lines += ["Errors other than a lost connection (count, where, the first's seconds after a server kill):", ""]
        for e in result["unexpected_errors"][:15]:
            lines.append(f"- {e['count']} x {e['where']} ({e['first_s_after_kill']} s): `{e['message'][:200]}`")
    return "\n".join(lines) + "\n"


def _options(settings: dict[str, Any]) -> str:
    text = f" --leave-out {','.join(settings['leave_out'])}" if settings.get("leave_out") else ""
    text += " --connect-after-ready" if settings.get("connect_after_ready") else ""
    return text + (f" --negative {settings['negative']}" if settings.get("negative") else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--clients", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--step-seconds", type=float, default=10.0, help="clients run this long between checks")
    parser.add_argument("--checkpoint-interval", type=float, default=0.05, help="seconds between checkpoints")
    parser.add_argument("--min-server-kills", type=int, default=1, help="kill the server in the first step")
    parser.add_argument(
        "--leave-out",
        type=lambda text: [t for t in text.split(",") if t],
        default=[],
        help=f"keyed tables not to use, comma-separated (of {','.join(KEYED)}): to look past a known bug",
    )
    parser.add_argument(
        "--connect-after-ready",
        action="store_true",
        help="clients reconnect only once a restarted server printed its readiness line (by default they "
        "reconnect as soon as it accepts, as real clients would)",
    )
    parser.add_argument(
        "--negative",
        choices=["", "skip-certification", "read-latest"],
        default="",
        help="NEGATIVE CONTROL: clients break isolation on purpose, to show the checker catches it",
    )
    parser.add_argument("--out", default="results/soak.json", help="results JSON; the markdown goes beside it")
    parser.add_argument("--keep", action="store_true", help="keep the database and logs even without violations")
    args = parser.parse_args(argv)
    if set(args.leave_out) - set(KEYED):
        parser.error(f"--leave-out takes tables of {KEYED}")
    workdir = Path(tempfile.mkdtemp(prefix="tique-soak-"))
    soak = Soak(args, workdir)
    try:
        result = soak.run()
    finally:
        for proc in soak.clients:
            proc.kill()
        if soak.server.proc is not None and soak.server.proc.poll() is None:
            soak.server.kill()
    out = write_json(args.out, result)
    Path(out).with_suffix(".md").write_text(markdown(result))
    print(markdown(result))
    if result["violations"] or args.keep:
        print(f"database, server log and client logs kept in {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if result["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
