"""The list-append workload: N clients run random transactions of reads and appends and record a history.

Each key holds a list (stored as text: "3,17,42"); an append is an UPDATE that concatenates (or an INSERT when
the key does not exist yet), a read is a point SELECT. Every appended element is unique. Keys roll through a
window so lists stay short. Clients are threads (embedded engine) or processes (over MAPI).

Systems: ``tique`` (optionally with a negative control that breaks isolation on purpose) and ``native``
(MonetDB's own transactions: START TRANSACTION ... COMMIT on the raw engine).
"""

from __future__ import annotations

import multiprocessing
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tique.elle.history import Mop, Op, dump

TABLE = "elle_lists"
NEGATIVE = {"read-latest": {"unsafe_read_latest": True}, "skip-certification": {"unsafe_skip_certification": True}}


@dataclass(frozen=True)
class Plan:
    url: str
    clients: int
    txns: int
    keys: int = 8
    max_ops: int = 4
    system: str = "tique"  # tique | native
    negative: str | None = None
    per_key: int = 40  # transactions (over all clients) before the key window moves on
    seed: int = 1


def prepare(plan: Plan) -> None:
    if plan.system == "tique":
        import tique

        conn = tique.connect(plan.url)
        conn.cursor().execute(f"DROP TABLE IF EXISTS {TABLE}")
        conn.cursor().execute(f"CREATE TABLE {TABLE} (k INT PRIMARY KEY, v TEXT)")
        conn.close()
    else:
        from tique.engine import open_engine

        raw = open_engine(plan.url).connect()
        raw.execute(f"DROP TABLE IF EXISTS {TABLE}")
        raw.execute(f"CREATE TABLE {TABLE} (k INT PRIMARY KEY, v TEXT)")
        raw.close()


def parse_list(text: str | None) -> tuple[Any, ...]:
    """A stored list as read. Whatever the engine returned is recorded, even an element that is not one of
    ours (native MonetDB returned texts like "5,,7" under concurrency): the checker judges it, not the client."""
    if text is None:
        return ()
    return tuple(int(x) if x.lstrip("-").isdigit() else x for x in text.split(","))


def _random_txn(rng: random.Random, plan: Plan, process: int, i: int, counter: list[int]) -> list[Mop]:
    base = (i * plan.clients) // plan.per_key
    mops = []
    for _ in range(rng.randint(1, plan.max_ops)):
        key = base + rng.randrange(plan.keys)
        if rng.random() < 0.5:
            mops.append(Mop("r", key, None))
        else:
            counter[0] += 1
            mops.append(Mop("append", key, process * 10_000_000 + counter[0]))
    return mops


class TiqueClient:
    def __init__(self, plan: Plan) -> None:
        import tique

        self.tique = tique
        self.conn = tique.connect(plan.url, **NEGATIVE.get(plan.negative or "", {}))

    def run(self, mops: list[Mop]) -> tuple[str, list[Mop]]:
        tique = self.tique
        cur = self.conn.cursor()
        done: list[Mop] = []
        try:
            for m in mops:
                if m.f == "r":
                    cur.execute(f"SELECT v FROM {TABLE} WHERE k = %s", (m.key,))
                    row = cur.fetchone()
                    done.append(Mop("r", m.key, parse_list(row[0]) if row else ()))
                else:
                    cur.execute(f"UPDATE {TABLE} SET v = v || %s WHERE k = %s", (f",{m.value}", m.key))
                    if cur.rowcount == 0:
                        cur.execute(f"INSERT INTO {TABLE} VALUES (%s, %s)", (m.key, str(m.value)))
                    done.append(m)
            self.conn.commit()
            return "ok", done
        except (tique.SerializationFailure, tique.IntegrityError):
            self.conn.rollback()
            return "fail", mops
        except tique.CommitOutcomeUnknown:
            return "info", mops

    def close(self) -> None:
        self.conn.close()


class NativeClient:
    """MonetDB's own transactions on the same kernel, no tique."""

    def __init__(self, plan: Plan) -> None:
        from tique.engine import open_engine

        self.raw = open_engine(plan.url).connect()

    def run(self, mops: list[Mop]) -> tuple[str, list[Mop]]:
        from tique.errors import DatabaseError

        raw = self.raw
        done: list[Mop] = []
        try:
            raw.execute("START TRANSACTION")
            for m in mops:
                if m.f == "r":
                    rows = raw.execute(f"SELECT v FROM {TABLE} WHERE k = {int(m.key)}").rows
                    done.append(Mop("r", m.key, parse_list(rows[0][0]) if rows else ()))
                else:
                    exists = raw.execute(f"SELECT COUNT(*) FROM {TABLE} WHERE k = {int(m.key)}").scalar()
                    if exists:
                        raw.execute(f"UPDATE {TABLE} SET v = v || ',{int(m.value)}' WHERE k = {int(m.key)}")
                    else:
                        raw.execute(f"INSERT INTO {TABLE} VALUES ({int(m.key)}, '{int(m.value)}')")
                    done.append(m)
            raw.execute("COMMIT")
            return "ok", done
        except DatabaseError:
            try:
                raw.execute("ROLLBACK")
            except DatabaseError:
                pass
            return "fail", mops

    def close(self) -> None:
        self.raw.close()


def run_client(plan: Plan, process: int, count: int, progress: Callable[[], None] | None = None) -> list[Op]:
    """One client's part of the history (indices are set when the parts are merged)."""
    rng = random.Random(plan.seed * 1000 + process)
    client: Any = TiqueClient(plan) if plan.system == "tique" else NativeClient(plan)
    counter = [0]
    ops: list[Op] = []
    for i in range(count):
        mops = _random_txn(rng, plan, process, i, counter)
        ops.append(Op(0, "invoke", process, tuple(mops), time.time_ns()))
        kind, done = client.run(mops)
        ops.append(Op(0, kind, process, tuple(done), time.time_ns()))
        if progress:
            progress()
    client.close()
    return ops


def _process_main(args: tuple[Plan, int, int]) -> list[Op]:
    plan, process, count = args
    return run_client(plan, process, count)


def run(plan: Plan, processes: bool = False, progress: Callable[[int], None] | None = None) -> list[Op]:
    """Run the workload; clients are processes when ``processes`` (a server URL), threads otherwise."""
    prepare(plan)
    share = [plan.txns // plan.clients + (1 if p < plan.txns % plan.clients else 0) for p in range(plan.clients)]
    parts: list[list[Op]] = []
    if processes:
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(plan.clients) as pool:
            parts = pool.map(_process_main, [(plan, p, share[p]) for p in range(plan.clients)])
        if progress:
            progress(plan.txns)
    else:
        lock = threading.Lock()
        results: dict[int, list[Op]] = {}

        def tick() -> None:
            if progress:
                with lock:
                    progress(1)

        failures: list[BaseException] = []

        def worker(p: int) -> None:
            try:
                results[p] = run_client(plan, p, share[p], tick)
            except BaseException as exc:  # reported below, in the caller's thread
                failures.append(exc)

        threads = [threading.Thread(target=worker, args=(p,)) for p in range(plan.clients)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        if failures:
            raise RuntimeError(f"a workload client failed: {failures[0]!r}") from failures[0]
        parts = [results[p] for p in range(plan.clients)]
    merged = sorted((op for part in parts for op in part), key=lambda op: (op.time or 0, op.type != "invoke"))
    return [Op(i, op.type, op.process, op.value, op.time) for i, op in enumerate(merged)]


def write(ops: list[Op], out_dir: str | Path) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "history.json"
    dump(ops, path)
    return path
