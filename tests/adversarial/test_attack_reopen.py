"""Attack: a database killed (SIGKILL) or closed while commits, bulk loads, the checkpointer and the kernel's own
flush of its log race, opened again through tique (tique/engine/heap_repair.py repairs a string/blob heap file
the flush left short).

Promises attacked:

- every commit a child logged (a line written after COMMIT returned) is there after the reopen, exactly; a commit in
  flight at the kill is there whole or not at all; nothing else is;
- a bulk load that returned is there whole, one in flight whole or not at all;
- every reopen works (tique repairs what the racing flush left, with a RuntimeWarning), and afterwards the wheel's
  own ``monetdbe.connect`` opens the directory too and reads the same counts and string lengths as tique did;
- the repair touches nothing while another process has the directory open, two processes starting at once on a
  damaged directory both end with a database that opens, a kill in the middle of the repair leaves a directory the
  next start repairs, and the pre-open check costs little on a database of a few hundred tables.

Each database lives in a child process (the test process holds the session's embedded database). Sizes: the loop
runs ``TIQUE_REOPEN_ITERATIONS`` kill/close rounds (2 in `make test`, 30 under `make test-long`); ``-s`` prints the
counts (kills, short heaps found, repair warnings, failed reopens).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, sized
from tique.engine import heap_repair

ITERATIONS = int(os.environ.get("TIQUE_REOPEN_ITERATIONS") or sized(2, 30))
T_ROWS = int(os.environ.get("TIQUE_REOPEN_T_ROWS") or sized(75_000, 1_000_000))
LOAD_ROWS = int(os.environ.get("TIQUE_REOPEN_LOAD_ROWS") or sized(75_000, 400_000))
WRITERS = 3
REOPEN_TIMEOUT = 120
KEY_SPAN = 10_000_000  # iteration i, writer w: keys (i + 1) * KEY_SPAN + w * 1_000_000 + n
SCHEMA = "k INT PRIMARY KEY, ver INT, s VARCHAR(60), c CLOB, b BLOB, ch CHAR(5)"
# how the kernel dies opening a directory whose BLOB heap a kill left inconsistent: its log replay finds the heap's
# free list "not orderered", store_init fails, and its clean-up frees twice (seen in CI on 2026-11-27)
KERNEL_BLOB_REPLAY = "free(): double free detected"
# what tique says when the kernel's catalog counts rows in a file a kill left missing: a string column's offsets
# file, seen on 2026-12-06 in plain table p (README, engine facts; tique/string_offsets.py keeps Cache tables safe)
KERNEL_FILE_MISSING = "files that are missing or short"


# ---- the values every key has at each version: the model needs no copy of them --------------------------------


def value(k: int, ver: int) -> tuple[int, str | None, str, str | None, str]:
    """(ver, s, c, b as hex, ch) of key ``k`` at version ``ver``."""
    s = None if k % 13 == 0 else f"s{k}v{ver}" + "\u00e9" * (k % 5)
    c = f"c{k}-{ver} " * (1 + (k + ver) % 40)
    b = None if k % 11 == 0 else bytes((k * 31 + ver + i) % 256 for i in range(1 + (k * 7 + ver) % 300)).hex()
    ch = f"{(k + ver) % 100000:05d}"
    return ver, s, c, b, ch


def sig(row: list[Any] | tuple[Any, ...]) -> str:
    """A short digest of a row of t as (ver, s, c, b as hex, ch): the check child reports these, not the rows."""
    return hashlib.md5(json.dumps(list(row)).encode()).hexdigest()[:16]


def load_row(k: int) -> tuple[int, str, str]:
    return k, f"L{k}" * (1 + k % 3), "z" * (k % 50)


def load_digest(n: int) -> list[int]:
    """COUNT(*), SUM(k), SUM(LENGTH(s)), SUM(LENGTH(c)) of a loaded table of ``n`` rows."""
    rows = [load_row(k) for k in range(n)]
    return [n, sum(r[0] for r in rows), sum(len(r[1]) for r in rows), sum(len(r[2]) for r in rows)]


# ---- the child processes ---------------------------------------------------------------------------------------


def _work(directory: str, log_path: str, it: int, seed: int, seconds: float) -> None:
    """Writer threads commit to t (tique) and p (plain), a loader bulk loads new tables and makes the kernel flush
    (a 1.2M-row CREATE TABLE AS), a checkpointer runs; a line per commit in the log, after COMMIT returned. Runs
    until killed, or ``seconds`` and then closes everything (seconds > 0)."""
    import tique
    from tique.checkpoint import Checkpointer
    from tique.database import Database
    from tique.errors import CommitOutcomeUnknown, SerializationFailure

    url = f"monetdbe://{directory}"
    rnd = random.Random(seed)
    conn = tique.connect(url)
    raw = Database.get(url).connect_raw()
    if it == 0:
        cur = conn.cursor()
        cur.execute(f"CREATE TABLE t ({SCHEMA})")
        cur.execute(f"CREATE TABLE p ({SCHEMA}) -- tique: plain")
        conn.commit()
        raw.execute("CREATE TABLE filler (x INT)")
        raw.execute("INSERT INTO filler VALUES " + ",".join(f"({i})" for i in range(1100)))
        csv = Path(log_path).with_name("t.csv")
        with open(csv, "w") as f:  # t's Storage starts large: its string heaps take the flush a while to write
            for k in range(T_ROWS):
                ver, s, c, b, ch = value(k, 0)
                f.write(f"{k},{ver},{'NULL' if s is None else s},{c},{'NULL' if b is None else b},{ch}\n")
        assert conn.bulk_load_csv("t", csv, null="NULL") == T_ROWS
        csv.unlink()
        with open(log_path, "a") as f:
            f.write(f"loadt {T_ROWS}\n")
    log = open(log_path, "a", buffering=1)  # noqa: SIM115 - written up to the kill
    log_lock = threading.Lock()
    stop = threading.Event()
    errors: list[str] = []

    def say(line: str) -> None:
        with log_lock:
            log.write(line + "\n")

    def writer(w: int) -> None:
        wconn = tique.connect(url)
        praw = Database.get(url).connect_raw()
        wrnd = random.Random(seed * 100 + w)
        mine: dict[int, int] = {}  # key -> version committed
        n = 0
        try:
            while not stop.is_set():
                n += 1
                k = (it + 1) * KEY_SPAN + w * 1_000_000 + n
                ops = [f"I:{k}:0"]
                cur = wconn.cursor()
                try:
                    cur.execute("INSERT INTO t VALUES (%s, %s, %s, %s, %s, %s)", _params(k, 0))
                    if wrnd.random() < 0.3:  # a loaded row of this writer's partition, never deleted
                        old = w + WRITERS * wrnd.randrange(T_ROWS // WRITERS)
                        ver = (it + 1) * 100_000 + n
                        _, s, c, b, ch = value(old, ver)
                        cur.execute(
                            "UPDATE t SET ver = %s, s = %s, c = %s, b = %s, ch = %s WHERE k = %s",
                            (ver, s, c, None if b is None else bytes.fromhex(b), ch, old),
                        )
                        ops.append(f"U:{old}:{ver}")
                    elif mine and wrnd.random() < 0.4:
                        old = wrnd.choice(sorted(mine))
                        if wrnd.random() < 0.2:
                            cur.execute("DELETE FROM t WHERE k = %s", (old,))
                            ops.append(f"D:{old}")
                        else:
                            ver = mine[old] + 1
                            _, s, c, b, ch = value(old, ver)
                            cur.execute(
                                "UPDATE t SET ver = %s, s = %s, c = %s, b = %s, ch = %s WHERE k = %s",
                                (ver, s, c, None if b is None else bytes.fromhex(b), ch, old),
                            )
                            ops.append(f"U:{old}:{ver}")
                    say(f"try {w} {' '.join(ops)}")
                    wconn.commit()
                    say(f"ok {w}")
                except CommitOutcomeUnknown as exc:
                    say(f"unknown {w}")
                    errors.append(f"{type(exc).__name__}: {exc}")
                    break
                except tique.Error as exc:
                    wconn.rollback()
                    say(f"fail {w}")
                    errors.append(f"{type(exc).__name__}: {exc}")
                    continue
                for op in ops:
                    kind, key, *ver_ = op.split(":")
                    if kind == "D":
                        mine.pop(int(key))
                    elif int(key) >= T_ROWS:
                        mine[int(key)] = int(ver_[0])
                pk = (it + 1) * KEY_SPAN + w * 1_000_000 + 500_000 + n
                ver, s, c, b, ch = value(pk, 0)
                for _ in range(20):  # concurrent INSERTs into one kernel table conflict: retried
                    say(f"tryp {pk}")
                    try:  # autocommit: a plain table is the kernel's
                        praw.execute(f"INSERT INTO p VALUES ({pk}, 0, {_lit(s)}, {_lit(c)}, {_blob(b)}, {_lit(ch)})")
                    except SerializationFailure:
                        say(f"failp {pk}")
                        continue
                    say(f"okp {pk}")
                    break
        finally:
            praw.close()
            wconn.close()

    def loader() -> None:
        lconn = tique.connect(url)
        j = 0
        previous = None
        try:
            while not stop.is_set():
                j += 1
                filler = f"fz{it}_{j}"
                raw.execute(f"CREATE TABLE {filler} AS SELECT a.x FROM filler a, filler b WITH DATA")
                if previous:
                    raw.execute(f"DROP TABLE {previous}")
                previous = filler
                name, n = f"ld{it}_{j}", rnd.choice([LOAD_ROWS, LOAD_ROWS // 3])
                if j % 2 == 0:
                    n = min(n, 30_000)  # bulk_load goes through Python batches
                cur = lconn.cursor()
                cur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, s VARCHAR(100), c CLOB)")
                lconn.commit()
                say(f"tryload {name} {n}")
                if j % 2:
                    csv = Path(log_path).with_name(f"{name}.csv")
                    with open(csv, "w") as f:
                        f.writelines(",".join(map(str, load_row(k))) + "\n" for k in range(n))
                    assert lconn.bulk_load_csv(name, csv) == n
                    csv.unlink()
                else:
                    assert lconn.bulk_load(name, (load_row(k) for k in range(n)), batch=5000) == n
                say(f"okload {name} {n}")
        except Exception as exc:
            errors.append(f"loader {type(exc).__name__}: {exc}")
        finally:
            lconn.close()

    def checkpointer() -> None:
        craw = Database.get(url).connect_raw()
        try:
            ck = Checkpointer(craw)
            while not stop.is_set():
                errors.extend(ck.run_once().errors)
                stop.wait(0.2)
        finally:
            craw.close()

    def guarded(fn: Callable[..., None], *args: Any) -> Callable[[], None]:
        def run() -> None:
            try:
                fn(*args)
            except Exception as exc:
                errors.append(f"thread died: {type(exc).__name__}: {exc}")
                say(f"died {fn.__name__}")

        return run

    threads = [threading.Thread(target=guarded(writer, w)) for w in range(WRITERS)]
    threads += [threading.Thread(target=guarded(loader)), threading.Thread(target=guarded(checkpointer))]
    for th in threads:
        th.start()
    print("ready", flush=True)
    if seconds <= 0:
        time.sleep(600)  # killed long before
    time.sleep(seconds)
    stop.set()
    for th in threads:
        th.join(120)
    raw.close()
    conn.close()
    log.close()
    print(json.dumps({"errors": errors}), flush=True)


def _params(k: int, ver: int) -> tuple[Any, ...]:
    _, s, c, b, ch = value(k, ver)
    return (k, ver, s, c, None if b is None else bytes.fromhex(b), ch)


def _lit(text: str | None) -> str:
    return "NULL" if text is None else "'" + text.replace("'", "''") + "'"


def _blob(hexed: str | None) -> str:
    return "NULL" if hexed is None else f"blob '{hexed}'"


def _digest(execute: Callable[[str], list[tuple[Any, ...]]]) -> dict[str, list[Any]]:
    """Per user table of the kernel (tique's Storage and Cache tables included): COUNT(*) and SUM(LENGTH(col)) of
    each string column, the same whichever client reads them."""
    tables = execute(
        "SELECT s.name, t.name, t.id FROM sys.tables t JOIN sys.schemas s ON t.schema_id = s.id "
        "WHERE NOT t.system AND t.type = 0 ORDER BY s.name, t.name"
    )
    out: dict[str, list[Any]] = {}
    for schema, table, tid in tables:
        cols = [
            name
            for name, kind in execute(f"SELECT name, type FROM sys.columns WHERE table_id = {tid} ORDER BY number")
            if kind in ("varchar", "clob", "char")
        ]
        sums = "".join(f', CAST(SUM(LENGTH("{col}")) AS BIGINT)' for col in cols)
        [row] = execute(f'SELECT CAST(COUNT(*) AS BIGINT){sums} FROM "{schema}"."{table}"')
        out[f"{schema}.{table}"] = [None if x is None else int(x) for x in row]
    return out


def _check(directory: str) -> None:
    """Open through tique (the repair runs), read everything the model checks, the kernel-level digest; JSON."""
    import tique
    from tique.database import Database

    url = f"monetdbe://{directory}"
    started = time.monotonic()
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        conn = tique.connect(url)
    opened = time.monotonic() - started
    cur = conn.cursor()
    cur.execute("SELECT k, ver, s, c, b, ch FROM t")
    t = {str(r[0]): sig([r[1], r[2], r[3], None if r[4] is None else bytes(r[4]).hex(), r[5]]) for r in cur.fetchall()}
    cur.execute("SELECT k, ver, s, c, b, ch FROM p")
    p = {str(r[0]): [r[1], r[2], r[3], None if r[4] is None else bytes(r[4]).hex(), r[5]] for r in cur.fetchall()}
    conn.commit()
    raw = Database.get(url).connect_raw()
    names = [r[0] for r in raw.execute("SELECT name FROM sys.tables WHERE name LIKE 'ld%' AND NOT system").rows]
    loads = {}
    for name in names:
        if name.startswith("ld") and "__" not in name:
            cur.execute(f"SELECT COUNT(*), SUM(k), SUM(LENGTH(s)), SUM(LENGTH(c)) FROM {name}")
            loads[name] = [0 if x is None else int(x) for x in cur.fetchall()[0]]
            conn.commit()
    conn.close()
    digest = _digest(lambda sql: raw.execute(sql).rows)
    raw.close()
    print(
        json.dumps(
            {
                "warnings": [str(w.message) for w in said if issubclass(w.category, RuntimeWarning)],
                "opened": opened,
                "t": t,
                "p": p,
                "loads": loads,
                "digest": digest,
            }
        ),
        flush=True,
    )


def _plain(directory: str) -> None:
    """The wheel's own module, no tique: open, the same digest; JSON."""
    import monetdbe

    conn = monetdbe.connect(directory)
    cur = conn.cursor()

    def execute(sql: str) -> list[tuple[Any, ...]]:
        cur.execute(sql)
        return [tuple(r) for r in cur.fetchall()]

    digest = _digest(execute)
    print(json.dumps({"digest": digest}), flush=True)
    conn.close()


def _hold(directory: str, seconds: float) -> None:
    """Hold the database open (tique) for ``seconds``, after printing ready."""
    import tique

    conn = tique.connect(f"monetdbe://{directory}")
    print("ready", flush=True)
    time.sleep(seconds)
    conn.close()


def _killed_repair(directory: str) -> None:
    """Open through tique, SIGKILLed right after the repair extended its first heap file (before its fsync)."""
    import tique

    def die(_fd: int) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    os.fsync = die  # heap_repair calls os.fsync after each file's truncate
    tique.connect(f"monetdbe://{directory}")
    sys.exit(3)


def _many_tables(directory: str, tables: int) -> None:
    """``tables`` tables of three string/blob columns, flushed: their entries are in BBP.dir when this returns."""
    from tique.database import Database

    url = f"monetdbe://{directory}"
    raw = Database.get(url).connect_raw()
    for i in range(tables):
        raw.execute(f"CREATE TABLE m{i} (k INT, a VARCHAR(20), b CLOB, c BLOB)")
        raw.execute(f"INSERT INTO m{i} VALUES (1, 'a{i}', 'b{i}', blob 'ff00')")
    raw.execute("CREATE TABLE filler (x INT)")  # a log this large makes the kernel flush it into its files
    raw.execute("INSERT INTO filler VALUES " + ",".join(f"({i})" for i in range(1100)))
    raw.execute("CREATE TABLE filler2 AS SELECT a.x FROM filler a, filler b WITH DATA")
    bbp = Path(directory, heap_repair.BBP_DIR)
    deadline = time.monotonic() + 60
    while bbp.read_text().count("\n") < 4 * tables and time.monotonic() < deadline:
        time.sleep(0.1)
    raw.close()


def _open_only(directory: str) -> None:
    import tique

    started = time.monotonic()
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        try:
            conn = tique.connect(f"monetdbe://{directory}")
        except Exception:
            for warning in said:  # a process that repaired, then lost the open to another, says so
                print(f"warning: {warning.message}", file=sys.stderr, flush=True)
            raise
    took = time.monotonic() - started
    cur = conn.cursor()
    cur.execute("SELECT k, s, c, b FROM t ORDER BY k")
    rows = [[*row[:3], None if row[3] is None else bytes(row[3]).hex()] for row in cur.fetchall()]
    conn.close()
    print(json.dumps({"took": took, "rows": rows, "warnings": [str(w.message) for w in said]}), flush=True)


# ---- the test side -----------------------------------------------------------------------------------------------


def _child(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """Run a mode of this module in a child; a child still running at ``timeout`` is killed (TimeoutExpired)."""
    return subprocess.run(
        [sys.executable, "-m", "tests.adversarial.test_attack_reopen", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
    )


def _last_json(out: str) -> dict[str, Any]:
    said: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return said


class Model:
    """What the logs say was committed: t's key -> version (None: deleted), p's keys, loads; plus what was in
    flight at a kill (either outcome is fine, but a transaction's writes all or none)."""

    def __init__(self) -> None:
        self.t: dict[int, int | None] = {}
        self.p: set[int] = set()
        self.loads: dict[str, int] = {}
        self.pending_t: list[list[str]] = []
        self.pending_p: set[int] = set()
        self.pending_loads: dict[str, int] = {}
        self.died: list[str] = []
        self.failed_statements: list[str] = []  # a writer's statement failed before its COMMIT was tried

    def read(self, log: Path) -> None:
        tries: dict[str, list[str]] = {}
        for line in log.read_text().splitlines() if log.exists() else []:
            kind, *rest = line.split()
            if kind == "try":
                tries[rest[0]] = rest[1:]
            elif kind == "ok":
                self._apply(tries.pop(rest[0]))
            elif kind == "fail":
                if tries.pop(rest[0], None) is None:  # no COMMIT tried: a statement before it failed
                    self.failed_statements.append(f"{log.name}: writer {rest[0]}")
            elif kind == "unknown":
                self.pending_t.append(tries.pop(rest[0]))
            elif kind == "loadt":
                self.t.update(dict.fromkeys(range(int(rest[0])), 0))
            elif kind == "tryp":
                self.pending_p.add(int(rest[0]))
            elif kind == "failp":
                self.pending_p.discard(int(rest[0]))
            elif kind == "died":
                self.died.append(rest[0])
            elif kind == "okp":
                self.pending_p.discard(int(rest[0]))
                self.p.add(int(rest[0]))
            elif kind == "tryload":
                self.pending_loads[rest[0]] = int(rest[1])
            elif kind == "okload":
                self.pending_loads.pop(rest[0], None)
                self.loads[rest[0]] = int(rest[1])
        self.pending_t += list(tries.values())

    def _apply(self, ops: list[str]) -> None:
        for op in ops:
            kind, key, *ver = op.split(":")
            self.t[int(key)] = None if kind == "D" else int(ver[0])

    def compare(self, state: dict[str, Any]) -> list[str]:
        """Problems of ``state`` (a _check's JSON) against the model; settles what was in flight."""
        problems = []
        got_t = {int(k): v for k, v in state["t"].items()}
        for ops in self.pending_t:  # all or nothing, then settled as what the database says
            after = dict(self.t)
            self._apply_to(after, ops)
            keys = {int(op.split(":")[1]) for op in ops}
            matches_after = all(self._row_ok(got_t, after, k) for k in keys)
            matches_before = all(self._row_ok(got_t, self.t, k) for k in keys)
            if matches_after:
                self.t = after
            elif not matches_before:
                problems.append(f"in-flight transaction {ops} neither whole nor absent: {[got_t.get(k) for k in keys]}")
                self.t = after
        self.pending_t = []
        wrong = [k for k in self.t if not self._row_ok(got_t, self.t, k)]
        for k in wrong[:10]:
            ver = self.t[k]
            problems.append(f"t key {k}: committed {'deleted' if ver is None else ver}, read {got_t.get(k)}")
        if len(wrong) > 10:
            problems.append(f"t: {len(wrong)} committed rows read otherwise in all")
        extra = set(got_t) - {k for k, v in self.t.items() if v is not None}
        if extra:
            problems.append(f"t has {len(extra)} rows never committed, e.g. {sorted(extra)[:5]}")
        got_p = {int(k): v for k, v in state["p"].items()}
        for k in self.pending_p:
            if k in got_p:
                self.p.add(k)
        self.pending_p = set()
        for k in self.p:
            if got_p.get(k) != list(value(k, 0)):
                problems.append(f"p key {k}: read {got_p.get(k)}")
        if set(got_p) - self.p:
            problems.append(f"p has rows never inserted: {sorted(set(got_p) - self.p)[:5]}")
        for name, n in self.pending_loads.items():
            got = state["loads"].get(name)
            if got and got[0]:
                self.loads[name] = n
            elif got and got[0] != 0:
                problems.append(f"load {name} in flight left {got}")
        self.pending_loads = {}
        for name, n in self.loads.items():
            if state["loads"].get(name) != load_digest(n):
                problems.append(f"load {name} of {n} rows reads {state['loads'].get(name)}, not {load_digest(n)}")
        return problems

    @staticmethod
    def _apply_to(model: dict[int, int | None], ops: list[str]) -> None:
        for op in ops:
            kind, key, *ver = op.split(":")
            model[int(key)] = None if kind == "D" else int(ver[0])

    @staticmethod
    def _row_ok(got: dict[int, Any], model: dict[int, int | None], k: int) -> bool:
        ver = model.get(k)
        if ver is None:
            return k not in got
        return got.get(k) == sig(value(k, ver))


@pytest.mark.timeout(120 + ITERATIONS * (30 + 60 * T_ROWS // 1_000_000))
def test_kill_and_close_loop_keeps_every_logged_commit(tmp_path: Path) -> None:
    """SIGKILL at random moments (and every third round a clean close) while commits, loads, flushes and the
    checkpointer race; each time tique reopens it, every logged commit reads as committed, and the wheel's own
    monetdbe opens it afterwards and reads the same."""
    directory = tmp_path / "db"
    model = Model()
    rnd = random.Random(int(os.environ.get("TIQUE_REOPEN_SEED") or time.time()))
    stats: Counter[str] = Counter()
    problems: list[str] = []
    timings: list[float] = []
    child_errors: Counter[str] = Counter()
    for it in range(ITERATIONS):
        log = tmp_path / f"log{it}.txt"
        clean = it % 3 == 2
        seconds = rnd.uniform(3, 6) if clean else 0.0
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "tests.adversarial.test_attack_reopen", "work", str(directory), str(log)),
                *(str(it), str(rnd.randrange(1 << 30)), str(seconds)),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        if "ready" not in ready:
            proc.wait(30)
            pytest.fail(
                f"round {it}: the work child did not start: {proc.stderr.read()[-3000:] if proc.stderr else ''}"
            )
        if clean:
            out, err = proc.communicate(timeout=240)
            if proc.returncode != 0:
                problems.append(f"round {it}: clean close exited {proc.returncode}: {err[-1500:]}")
            else:
                child_errors.update(e[:120] for e in _last_json(out)["errors"])
            stats["closed"] += 1
        else:
            time.sleep(rnd.uniform(0.3, 5))
            proc.send_signal(signal.SIGKILL)
            _, err = proc.communicate(timeout=60)
            if proc.returncode != -signal.SIGKILL:
                problems.append(f"round {it}: work child ended {proc.returncode} before the kill: {err[-1500:]}")
            stats["killed"] += 1
        model.read(log)
        short = heap_repair.short_heaps(str(directory))
        if short:
            stats["rounds with short heaps"] += 1
            stats["short heaps"] += len(short)
            stats["short heaps not whole"] += sum(not s.rows_whole for s in short)
            copy = tmp_path / f"damaged{it}"
            shutil.copytree(directory, copy)
            plain_damaged = _child("plain", str(copy))
            stats["plain opens of the damaged copy that worked"] += plain_damaged.returncode == 0
            shutil.rmtree(copy)
        before = tmp_path / "before_check"  # kept when the reopen fails, to open again by hand
        shutil.rmtree(before, ignore_errors=True)
        shutil.copytree(directory, before)
        try:
            checked = _child("check", str(directory), timeout=REOPEN_TIMEOUT)
        except subprocess.TimeoutExpired:
            stats["hung reopens"] += 1
            again = _child("open_plain", str(before), timeout=REOPEN_TIMEOUT)
            problems.append(
                f"round {it}: reopen through tique still running after {REOPEN_TIMEOUT} s (the copy taken before it, "
                f"{before}, then opened by plain monetdbe: exit {again.returncode})"
            )
            break
        if checked.returncode != 0:
            stats["failed reopens"] += 1
            said = checked.stderr.strip().splitlines()[-1:]
            if any(KERNEL_BLOB_REPLAY in line for line in said):
                plain = _child("open_plain", str(before), timeout=REOPEN_TIMEOUT)
                if plain.returncode != 0 and KERNEL_BLOB_REPLAY in plain.stderr:
                    pytest.xfail(
                        f"round {it}: MonetDB 11.41 itself cannot open the directory the kill left (plain monetdbe "
                        f"aborts too: {KERNEL_BLOB_REPLAY!r}): a BLOB heap's free list and values are newer than the "
                        "catalog after a kill during the kernel's flush (README, engine facts; not fixed)"
                    )
            if any(KERNEL_FILE_MISSING in line for line in said):
                plain = _child("open_plain", str(before), timeout=REOPEN_TIMEOUT)
                if plain.returncode != 0 and "GDKinit() failed" in plain.stderr:
                    pytest.xfail(
                        f"round {it}: MonetDB 11.41 itself cannot open the directory the kill left (plain monetdbe "
                        f"fails too): its catalog counts rows in a file the kill left missing or short: {said[-1]} "
                        "(README, engine facts: tique keeps its Cache tables off that path, not plain table p)"
                    )
            problems.append(f"round {it}: reopen failed: {said}")
            break
        state = _last_json(checked.stdout)
        timings.append(state["opened"])
        stats["repair warnings"] += sum("repaired" in w for w in state["warnings"])
        problems += [f"round {it}: {p}" for p in model.compare(state)]
        plain = _child("plain", str(directory))
        if plain.returncode != 0 and not plain.stdout.strip():
            problems.append(f"round {it}: plain monetdbe could not open after tique: {plain.stderr[-1500:]}")
            break
        if plain.returncode != 0:
            stats["plain monetdbe exited non-zero after reading"] += 1
        if _last_json(plain.stdout)["digest"] != state["digest"]:
            a, b = _last_json(plain.stdout)["digest"], state["digest"]
            diff = {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)}
            problems.append(f"round {it}: plain monetdbe reads differently from tique: {diff}")
        print(f"[reopen loop] round {it}: {dict(stats)}", flush=True)
        if problems:
            break
    print(
        f"\n[reopen loop] rounds={ITERATIONS} {dict(stats)} t-keys={sum(v is not None for v in model.t.values())}"
        f" p-keys={len(model.p)} loads={len(model.loads)} open s: max {max(timings, default=0):.2f}"
        f" child errors={child_errors.most_common(5)}"
    )
    assert problems == [], problems
    assert model.died == [], f"work threads died (their errors: {child_errors})"
    assert model.failed_statements == [], (
        f"writers' statements failed before COMMIT (their keys are their own, so none should): "
        f"{model.failed_statements} (errors of cleanly closed rounds: {child_errors})"
    )


# ---- the repair's edge cases ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def damaged_base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[list[object]], dict[str, Path]]:
    """A closed database (test_heap_repair's MAKE: table t of 40 rows, VARCHAR s, CLOB c, BLOB b, flushed), with
    the heap file of every column's location; healthy (damage is made per test on a copy)."""
    from tests.adversarial.test_heap_repair import MAKE, _run

    directory = tmp_path_factory.mktemp("reopen_edge") / "db"
    made = _run(MAKE, f"monetdbe://{directory}")
    assert made.returncode == 0, made.stderr[-3000:]
    said = json.loads(made.stdout.strip().splitlines()[-1])
    heaps = {}
    for column, where in said["where"].items():
        location = Path(where)
        heaps[column] = directory / "bat" / location.parent / (location.name + ".theap")
    return directory, said["rows"], heaps


def _copy(base: tuple[Path, list[list[object]], dict[str, Path]], to: Path) -> tuple[Path, dict[str, Path]]:
    directory, _, heaps = base
    shutil.copytree(directory, to)
    return to, {c: to / h.relative_to(directory) for c, h in heaps.items()}


def test_a_database_open_in_another_process_is_not_touched(damaged_base: Any, tmp_path: Path) -> None:
    from tests.adversarial.test_heap_repair import _record_more

    directory, heaps = _copy(damaged_base, tmp_path / "db")
    holder = subprocess.Popen(
        [sys.executable, "-m", "tests.adversarial.test_attack_reopen", "hold", str(directory), "20"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert holder.stdout is not None and "ready" in holder.stdout.readline()
        _record_more(directory, heaps["s"], 16)  # what a flush racing with appends leaves, while open
        size = heaps["s"].stat().st_size
        second = _child("open", str(directory))
        assert second.returncode != 0
        assert "locked by another process" in second.stderr, second.stderr[-2000:]
        assert heaps["s"].stat().st_size == size, "the repair extended a heap file of a database open elsewhere"
    finally:
        holder.kill()
        holder.communicate(timeout=60)


def test_two_processes_starting_at_once_on_a_damaged_directory(damaged_base: Any, tmp_path: Path) -> None:
    """Both start tique on the same damaged directory at once: the loser of the lock says it is locked (or opens
    after the winner), the directory is repaired exactly once, and the one that opens reads every row; the
    directory opens again afterwards."""
    from tests.adversarial.test_heap_repair import _record_more

    _, rows, _ = damaged_base
    outcomes: Counter[str] = Counter()
    for attempt in range(sized(2, 10)):
        directory, heaps = _copy(damaged_base, tmp_path / f"db{attempt}")
        _record_more(directory, heaps["s"], 24)
        _record_more(directory, heaps["b"], 40)
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "tests.adversarial.test_attack_reopen", "open", str(directory)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=ROOT,
            )
            for _ in range(2)
        ]
        results = [p.communicate(timeout=180) for p in procs]
        ok = [json.loads(out.strip().splitlines()[-1]) for (out, _), p in zip(results, procs) if p.returncode == 0]
        failed = [err.strip().splitlines()[-1:] for (_, err), p in zip(results, procs) if p.returncode != 0]
        outcomes[f"{len(ok)} opened"] += 1
        assert ok, failed
        for said in ok:
            assert said["rows"] == rows
        for error in failed:
            assert "locked by another process" in error[0], error
        # repaired once, under the directory's lock, by whichever process took it first: that one may then lose
        # the kernel's open to the other, which finds nothing to repair
        repairs = sum(any("repaired" in w for w in said["warnings"]) for said in ok)
        repairs += sum("tique repaired" in err for (_, err), p in zip(results, procs) if p.returncode != 0)
        assert repairs == 1, (ok, failed)
        again = _child("open", str(directory))
        assert again.returncode == 0, again.stderr[-2000:]
    print(f"\n[two at once] {dict(outcomes)}")


def test_a_kill_inside_the_repair_leaves_a_directory_the_next_start_repairs(damaged_base: Any, tmp_path: Path) -> None:
    """Killed after the first heap file was extended, before its fsync and before the second file: the next start
    repairs the rest and reads every row."""
    from tests.adversarial.test_heap_repair import _record_more

    _, rows, _ = damaged_base
    directory, heaps = _copy(damaged_base, tmp_path / "db")
    _record_more(directory, heaps["s"], 24)
    _record_more(directory, heaps["c"], 100)
    killed = _child("killrepair", str(directory))
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert len(heap_repair.short_heaps(str(directory))) == 1  # one done, one left
    again = _child("open", str(directory))
    assert again.returncode == 0, again.stderr[-2000:]
    said = _last_json(again.stdout)
    assert said["rows"] == rows
    assert any("repaired" in w for w in said["warnings"])


def _add_token(directory: Path, heap: Path) -> None:
    """Give ``heap``'s BBP.dir entry one more field: the options the kernel reads after the heaps' fields."""
    bbp = directory / heap_repair.BBP_DIR
    physical = heap.relative_to(directory / "bat").as_posix().removesuffix(".theap")
    lines = bbp.read_text().splitlines(keepends=True)
    for i, line in enumerate(lines):
        if len(line.split()) == heap_repair.VAR_FIELDS and line.split()[3] == physical:
            lines[i] = line.rstrip("\n") + " x\n"
    bbp.write_text("".join(lines))


@pytest.mark.xfail(
    strict=True,
    reason="heap_repair.short_heaps skips every BBP.dir line whose field count is not 25; 11.41 reads a trailing "
    "options field after the heap fields (BBPreadEntries) and opens such a healthy directory, so a short heap on "
    "such a line is neither repaired nor named. Low severity: 11.41 itself never sets options (they only come from "
    "an earlier BBP.dir), so the kernel does not write such lines",
)
def test_a_heap_entry_with_another_token_count(damaged_base: Any, tmp_path: Path) -> None:
    """An entry with a trailing options field (which 11.41's BBPreadEntries accepts): if the kernel opens such a
    healthy directory, a short heap on such a line is found like any other."""
    from tests.adversarial.test_heap_repair import PLAIN_OPEN, _record_more, _run

    healthy, heaps = _copy(damaged_base, tmp_path / "healthy")
    _add_token(healthy, heaps["s"])
    accepted = _run(PLAIN_OPEN, str(healthy)).returncode == 0
    if not accepted:
        pytest.skip("the kernel refuses an entry with an options field: no such line can exist")
    directory, heaps = _copy(damaged_base, tmp_path / "db")
    _record_more(directory, heaps["s"], 16)
    _add_token(directory, heaps["s"])
    assert _run(PLAIN_OPEN, str(directory)).returncode != 0
    assert heap_repair.short_heaps(str(directory)), "a short heap on a line with an options field is not found"


def test_the_pre_open_check_is_cheap_on_a_database_of_many_tables(tmp_path: Path) -> None:
    directory = tmp_path / "db"
    tables = sized(200, 600)
    made = _child("many", str(directory), str(tables))
    assert made.returncode == 0, made.stderr[-2000:]
    started = time.perf_counter()
    for _ in range(10):
        assert heap_repair.short_heaps(str(directory)) == []
    took = (time.perf_counter() - started) / 10
    lines = (directory / heap_repair.BBP_DIR).read_text().count("\n")
    print(f"\n[pre-open check] {tables} tables, {lines} BBP.dir lines: {took * 1000:.1f} ms")
    assert lines > 4 * tables, "the tables were not flushed into BBP.dir: the timing measures nothing"
    # tens of ms on a quiet machine; the bound only catches a check that reads every heap (seconds): a fresh-clone
    # run beside other work took 0.26 s against the former 0.25
    assert took < 1.0


def test_the_row_check_of_a_large_short_heap(tmp_path: Path) -> None:
    """The cost of the check when a repair is due: a 1M-row string column (offsets and heap made here, in the
    kernel's layout), timed."""
    rows = sized(1_000_000, 5_000_000)
    heap = tmp_path / "01" / "123.theap"
    heap.parent.mkdir()
    body = bytearray(8192)
    offsets = []
    for k in range(rows):
        offsets.append(len(body))
        body += f"s{k}".encode() + b"\0"
    heap.write_bytes(body)
    import array

    (tmp_path / "01" / "123.tail4").write_bytes(array.array("I", offsets).tobytes())
    started = time.perf_counter()
    whole = heap_repair._rows_whole(tmp_path / "01" / "123", rows, 4, heap, len(body), blob=False)
    took = time.perf_counter() - started
    print(f"\n[row check] {rows} rows, {len(body) >> 20} MB heap: {took:.2f} s")
    assert whole
    assert took < 30


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "work":
        _work(args[0], args[1], int(args[2]), int(args[3]), float(args[4]))
    elif mode == "check":
        _check(args[0])
    elif mode == "plain":
        _plain(args[0])
    elif mode == "hold":
        _hold(args[0], float(args[1]))
    elif mode == "killrepair":
        _killed_repair(args[0])
    elif mode == "many":
        _many_tables(args[0], int(args[1]))
    elif mode == "open":
        _open_only(args[0])
    elif mode == "open_plain":
        import monetdbe

        monetdbe.connect(args[0]).close()
