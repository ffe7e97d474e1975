"""Attack: ALTER TABLE on a large table (hundreds of thousands to a million Storage rows, bulk loaded) while writer
threads and processes commit to it and a checkpointer moves its rows, and a SIGKILL in the middle of the long
physical ADD COLUMN on its Storage.

Promises attacked (tique/alter.py, engine.base.one_transaction / retried_on_conflict):

- each DDL either takes effect or fails with an error that says nothing changed, and the table keeps one shape;
- every write a writer committed is there afterwards with its values; an added column reads its DEFAULT for old
  rows and the values written for new ones; the row count is exact; the checkpointer stays clean;
- a writer's error never names tique's internal tables (``tique_data``, ``__storage``, ``__cache``, ``tq_``);
- a process killed inside the physical ADD COLUMN leaves the table whole (with or without the column), usable,
  every committed row intact.

Writers partition the keys (writer i updates loaded keys k with k % writers == i and inserts keys of its own
range), so each one's model of what it committed is exact whatever the commit order between writers. Updated
rows get negative values, so one aggregate checks every untouched row and one small query every touched one.

Sizes: ``TIQUE_DDL_ROWS`` sets the large table's rows (300k in `make test`, 1M under `make test-long`); run with
``-s`` to see the DDL timings printed.

Found here and fixed: a COMMIT or a statement overlapping another session's RENAME TO / RENAME COLUMN / DROP COLUMN
failed with an error naming tique's internal tables (not retryable); a query planned while the table was renamed
away and run after it was renamed back read tique's view of the latest state, not the snapshot (now a
SerializationFailure); DROP COLUMN's clean-up lost to the writers and left the column behind; RENAME COLUMN onto a
name a killed ADD COLUMN left behind failed for good; a large loaded database that once in a while could not be
opened again (the kernel's flush had left a string heap file short: tique/engine/heap_repair.py).
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import tique
from tests.conftest import ROOT, ServeProcess, closing_connections, sized, thinned
from tique.checkpoint import Checkpointer
from tique.database import Database
from tique.errors import CommitOutcomeUnknown, SerializationFailure

ROWS = int(os.environ.get("TIQUE_DDL_ROWS") or sized(300_000, 1_000_000))
KILL_ROWS = int(os.environ.get("TIQUE_DDL_KILL_ROWS") or 1_000_000)  # the physical ADD COLUMN takes ~0.13 s at 1M
INTERNAL = re.compile(r"tique_data|__storage|__cache|tq_[a-z]", re.I)
STRIDE = 100_000_000  # writer i inserts keys ROWS + STRIDE * (i + 1) + n and writes values -(STRIDE * (i + 1) + n)
LONG_DEFAULT = "x" * 60
TIMINGS: dict[str, float] = {}


# ---- writers ------------------------------------------------------------------------------------------------


@dataclass
class Shape:
    """What writers believe about the table now: its name, whether column c exists; pause and stop."""

    table: str
    c: bool = False
    stop: threading.Event = field(default_factory=threading.Event)
    pause: threading.Event = field(default_factory=threading.Event)


@dataclass
class Writer:
    """One connection committing an UPDATE of one of its own loaded keys and an INSERT of a new key per
    transaction (conn.run: serialization failures retried), keeping a model of what it committed."""

    url: str
    index: int
    writers: int
    rows: int
    shape: Shape
    values: dict[int, int] = field(default_factory=dict)  # key -> v committed
    cs: dict[int, int] = field(default_factory=dict)  # key -> c committed (else the DEFAULT, 7)
    unknown: set[int] = field(default_factory=set)  # keys of a commit whose outcome is unknown
    errors: list[str] = field(default_factory=list)
    commits: int = 0
    idle: threading.Event = field(default_factory=threading.Event)

    def step(self, conn: tique.Connection, n: int) -> None:
        table, with_c = self.shape.table, self.shape.c
        k = self.index + self.writers * random.randrange(self.rows // self.writers)
        new = self.rows + STRIDE * (self.index + 1) + n
        v, c = -(STRIDE * (self.index + 1) + n), 1000 + n

        def txn(cn: tique.Connection) -> None:
            cur = cn.cursor()
            if with_c:
                cur.execute(f"UPDATE {table} SET v = %s, c = %s WHERE k = %s", (v, c, k))
                cur.execute(f"INSERT INTO {table} (k, v, c) VALUES (%s, %s, %s)", (new, v, c))
            else:
                cur.execute(f"UPDATE {table} SET v = %s WHERE k = %s", (v, k))
                cur.execute(f"INSERT INTO {table} (k, v) VALUES (%s, %s)", (new, v))

        try:
            conn.run(txn)
        except CommitOutcomeUnknown:
            self.unknown.update((k, new))
            return
        except tique.Error as exc:
            self.errors.append(f"{type(exc).__name__}: {exc}")
            return
        except Exception as exc:  # reported: every error tique raises should be a tique.Error
            self.errors.append(f"NOT A tique.Error {type(exc).__name__}: {exc}")
            return
        self.values[k] = self.values[new] = v
        if with_c:
            self.cs[k] = self.cs[new] = c
        self.commits += 1

    def loop(self) -> None:
        conn = tique.connect(self.url)
        try:
            n = 0
            while not self.shape.stop.is_set():
                if self.shape.pause.is_set():
                    self.idle.set()
                    while self.shape.pause.is_set() and not self.shape.stop.is_set():
                        time.sleep(0.005)
                    self.idle.clear()
                    continue
                n += 1
                self.step(conn, n)
        finally:
            conn.close()


class Writers:
    """Writer threads on their own connections, plus a checkpointer loop on a raw connection."""

    def __init__(
        self, url: str, shape: Shape, count: int, rows: int, checkpoint: bool = True, partitions: int = 0
    ) -> None:
        self.url, self.shape = url, shape
        self.writers = [Writer(url, i, partitions or count, rows, shape) for i in range(count)]
        self.checkpoints: list[list[str]] = []
        self.threads = [threading.Thread(target=w.loop) for w in self.writers]
        if checkpoint:
            self.threads.append(threading.Thread(target=self._checkpoint))

    def _checkpoint(self) -> None:
        raw = Database.get(self.url).connect_raw()
        try:
            ck = Checkpointer(raw)
            while not self.shape.stop.is_set():
                try:
                    self.checkpoints.append(ck.run_once().errors)
                except Exception as exc:  # reported to the test
                    self.checkpoints.append([f"{type(exc).__name__}: {exc}"])
                self.shape.stop.wait(0.5)
        finally:
            raw.close()

    def __enter__(self) -> Writers:
        for th in self.threads:
            th.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shape.stop.set()
        for th in self.threads:
            th.join(60)

    def paused(self) -> _Paused:
        return _Paused(self)

    @property
    def errors(self) -> list[str]:
        return [e for w in self.writers for e in w.errors]

    @property
    def commits(self) -> int:
        return sum(w.commits for w in self.writers)


class _Paused:
    def __init__(self, writers: Writers) -> None:
        self.writers = writers

    def __enter__(self) -> None:
        self.writers.shape.pause.set()
        for w in self.writers.writers:
            assert w.idle.wait(60), "a writer did not pause"

    def __exit__(self, *exc: object) -> None:
        self.writers.shape.pause.clear()


# ---- checks -------------------------------------------------------------------------------------------------


@dataclass
class Model:
    """What the writers committed, merged (their keys are disjoint)."""

    rows: int
    values: dict[int, int]
    cs: dict[int, int]
    unknown: set[int]

    @staticmethod
    def of(rows: int, writers: list[Writer], extra: list[dict[str, Any]] | None = None) -> Model:
        values: dict[int, int] = {}
        cs: dict[int, int] = {}
        unknown: set[int] = set()
        for w in writers:
            values.update(w.values)
            cs.update(w.cs)
            unknown |= w.unknown
        for other in extra or []:  # a child process's model, as JSON
            values.update({int(k): v for k, v in other["values"].items()})
            cs.update({int(k): v for k, v in other["cs"].items()})
            unknown |= set(other["unknown"])
        return Model(rows, values, cs, unknown)


def check_table(conn: tique.Connection, table: str, model: Model, s: str = "s", c: bool = False) -> None:
    """Every row of ``table`` is what the model says: untouched loaded rows as loaded (c at its DEFAULT 7), every
    committed write with its values, no other row, the count exact."""
    cur = conn.cursor()
    cur.execute(f"SELECT COUNT(*) FROM {table}")
    count = cur.fetchall()[0][0]
    inserted = sum(1 for k in model.values if k >= model.rows and k not in model.unknown)
    maybe = sum(1 for k in model.unknown if k >= model.rows)
    assert model.rows + inserted <= count <= model.rows + inserted + maybe, (count, model.rows, inserted, maybe)
    touched = {k for k in model.values if k < model.rows and k not in model.unknown}
    maybe_touched = {k for k in model.unknown if k < model.rows} - touched
    c_is_default = " AND c = 7" if c else ""
    cur.execute(
        f"SELECT COUNT(*) FROM {table} WHERE k < {model.rows} AND v = k AND {s} = 's' || CAST(k AS VARCHAR(12))"
        f"{c_is_default}"
    )
    untouched = cur.fetchall()[0][0]
    low, high = model.rows - len(touched) - len(maybe_touched), model.rows - len(touched)
    assert low <= untouched <= high, f"an untouched loaded row changed or went missing: {untouched} not in {low}-{high}"
    columns = f"k, v, {s}" + (", c" if c else "")
    cur.execute(f"SELECT {columns} FROM {table} WHERE k >= {model.rows} OR v < 0")
    got = {r[0]: tuple(r[1:]) for r in cur.fetchall()}
    conn.commit()
    for k, v in model.values.items():
        if k in model.unknown:
            continue
        s_value = None if k >= model.rows else f"s{k}"
        want = (v, s_value, model.cs.get(k, 7)) if c else (v, s_value)
        assert got.get(k) == want, f"key {k}: committed {want}, reads {got.get(k)}"
    strays = set(got) - set(model.values) - model.unknown
    assert not strays, f"rows nobody committed: {sorted(strays)[:10]}"


def internal_leaks(errors: list[str]) -> list[str]:
    return [e for e in errors if INTERNAL.search(e)]


# Leaks once known here, now fixed (a statement or COMMIT overlapping a RENAME or ALTER of another session fails
# with a SerializationFailure that names no internal table): none is tolerated.
KNOWN_LEAKS: tuple[re.Pattern[str], ...] = ()


def other_leaks(errors: list[str]) -> list[str]:
    return [e for e in internal_leaks(errors) if not any(known.search(e) for known in KNOWN_LEAKS)]


def physical_columns(url: str, table_like: str) -> dict[str, list[str]]:
    """Columns of the Storage and Cache tables whose names contain ``table_like`` (tique_data)."""
    raw = Database.get(url).connect_raw()
    try:
        rows = raw.execute(
            "SELECT t.name, c.name FROM sys.columns c JOIN sys.tables t ON c.table_id = t.id JOIN sys.schemas s ON "
            f"t.schema_id = s.id WHERE s.name = 'tique_data' AND t.name LIKE '%{table_like}%' ORDER BY t.name, c.number"
        ).rows
    finally:
        raw.close()
    out: dict[str, list[str]] = {}
    for t, c in rows:
        out.setdefault(str(t), []).append(str(c))
    return out


def load(conn: tique.Connection, table: str, rows: int, directory: Path) -> float:
    """CREATE TABLE and bulk_load_csv ``rows`` rows (k, v = k, s = 's' || k); the seconds the load took."""
    conn.cursor().execute(f"CREATE TABLE {table} (k INT PRIMARY KEY, v INT, s VARCHAR(20))")
    conn.commit()
    csv = directory / f"{table}.csv"
    with open(csv, "w") as f:
        f.writelines(f"{k},{k},s{k}\n" for k in range(rows))
    started = time.monotonic()
    assert conn.bulk_load_csv(table, csv) == rows
    took = time.monotonic() - started
    csv.unlink()
    return took


def ddl(conn: tique.Connection, sql: str) -> tuple[Exception | None, float]:
    started = time.monotonic()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # DROP COLUMN's clean-up warning: checked in its own test
            conn.cursor().execute(sql)
        conn.commit()
        return None, time.monotonic() - started
    except tique.Error as exc:
        conn.rollback()
        return exc, time.monotonic() - started


def said_nothing_changed(error: Exception) -> bool:
    return isinstance(error, SerializationFailure) and "changed nothing" in str(error)


def report(label: str, writers: Writers, timings: dict[str, float]) -> None:
    print(f"\n[{label}] rows={ROWS} commits={writers.commits}")
    for what, seconds in timings.items():
        print(f"  {seconds:7.3f} s  {what}")
    for error, n in Counter(e[:160] for e in writers.errors).most_common(12):
        print(f"  writer error x{n}: {error}")
    ck_errors = [e for run in writers.checkpoints for e in run]
    print(f"  checkpoint runs={len(writers.checkpoints)} errors={Counter(e[:100] for e in ck_errors).most_common(3)}")


def checkpoint_clean(url: str) -> None:
    raw = Database.get(url).connect_raw()
    try:
        assert Checkpointer(raw).run_once().errors == []
    finally:
        raw.close()


@pytest.fixture
def embedded(embedded_url: str) -> Iterator[Callable[..., tique.Connection]]:
    yield from closing_connections(embedded_url)


# ---- 1. DDL on a large table beside writers and the checkpointer ----------------------------------------------


def test_ddl_on_a_large_table_beside_writers_keeps_every_commit(
    embedded: Callable[..., tique.Connection], embedded_url: str, unique_name: Callable[[str], str], tmp_path: Path
) -> None:
    """ADD COLUMN c DEFAULT 7, RENAME COLUMN s TO s2, RENAME TO, DROP COLUMN c on a table of ROWS Storage rows
    while three writers commit and a checkpointer loops. Each DDL takes effect (or says nothing changed); after
    each, with the writers paused, every row is what was committed."""
    t = unique_name("big")
    t2 = f"{t}_renamed"
    conn = embedded()
    timings = {"bulk_load_csv": load(conn, t, ROWS, tmp_path)}
    shape = Shape(t)
    with Writers(embedded_url, shape, 3, ROWS) as writers:
        time.sleep(1.0)  # Cache versions and checkpoints before the first DDL
        s = "s"

        def run(sql: str) -> bool:
            error, seconds = ddl(conn, sql)
            timings[sql] = seconds
            assert error is None or said_nothing_changed(error), f"{sql}: {type(error).__name__}: {error}"
            return error is None

        added = run(f"ALTER TABLE {t} ADD COLUMN c INT DEFAULT 7")
        shape.c = added
        time.sleep(0.7)
        if run(f"ALTER TABLE {t} RENAME COLUMN s TO s2"):
            s = "s2"
        time.sleep(0.7)
        renamed = run(f"ALTER TABLE {t} RENAME TO {t2}")
        if renamed:
            shape.table = t2
        time.sleep(0.7)
        with writers.paused():
            check_table(conn, shape.table, Model.of(ROWS, writers.writers), s=s, c=added)
        time.sleep(0.3)
        shape.c = False  # writers stop naming c; a transaction in flight may still, and fail
        time.sleep(0.05)
        dropped = run(f"ALTER TABLE {shape.table} DROP COLUMN c") if added else False
        time.sleep(0.7)
    report("ddl beside writers", writers, timings)
    model = Model.of(ROWS, writers.writers)
    check_table(conn, shape.table, model, s=s, c=added and not dropped)
    assert writers.commits > 20, "the writers hardly wrote"
    not_tique = [e for e in writers.errors if e.startswith("NOT A tique.Error")]
    assert not_tique == [], not_tique
    assert other_leaks(writers.errors) == [], other_leaks(writers.errors)
    ck = [e for run in writers.checkpoints for e in run]
    assert all(re.search("no such|conflict", e) for e in ck), ck  # a run may lose to the DDL, and say so
    checkpoint_clean(embedded_url)
    check_table(conn, shape.table, model, s=s, c=added and not dropped)  # the same after the final checkpoint
    cur = conn.cursor()
    cur.execute(f"SELECT * FROM {shape.table} WHERE k = 1")
    assert [d[0] for d in cur.description] == ["k", "v", s] + (["c"] if added and not dropped else [])
    conn.commit()
    cur.execute(f"DROP TABLE {shape.table}")
    conn.commit()
    TIMINGS.update({f"size: {k}": v for k, v in timings.items()})


def test_add_column_beside_writers_reads_default_and_written_values(
    embedded: Callable[..., tique.Connection], embedded_url: str, unique_name: Callable[[str], str], tmp_path: Path
) -> None:
    """ADD COLUMN with a long VARCHAR DEFAULT (the slowest physical step, ~0.13 s per million rows) and a NOT
    NULL INT DEFAULT, each while writers commit: old rows, Cache versions written before it and rows written
    after without the column all read the DEFAULT."""
    t = unique_name("wide")
    conn = embedded()
    timings = {"bulk_load_csv": load(conn, t, ROWS, tmp_path)}
    shape = Shape(t)
    with Writers(embedded_url, shape, 3, ROWS) as writers:
        time.sleep(1.0)
        results = {}
        for sql in (
            f"ALTER TABLE {t} ADD COLUMN d VARCHAR(80) DEFAULT '{LONG_DEFAULT}'",
            f"ALTER TABLE {t} ADD COLUMN e INT NOT NULL DEFAULT 3",
        ):
            error, timings[sql] = ddl(conn, sql)
            results[sql] = error
            assert error is None or said_nothing_changed(error), f"{sql}: {type(error).__name__}: {error}"
            time.sleep(0.5)
    report("add column beside writers", writers, timings)
    check_table(conn, t, Model.of(ROWS, writers.writers))
    cur = conn.cursor()
    d_added, e_added = (results[sql] is None for sql in results)
    if d_added:
        cur.execute(f"SELECT COUNT(*) FROM {t} WHERE d IS NULL OR d <> '{LONG_DEFAULT}'")
        assert cur.fetchall() == [(0,)]
    if e_added:
        cur.execute(f"SELECT COUNT(*) FROM {t} WHERE e IS NULL OR e <> 3")
        assert cur.fetchall() == [(0,)]
    conn.commit()
    assert other_leaks(writers.errors) == [], other_leaks(writers.errors)
    checkpoint_clean(embedded_url)
    if e_added:
        cur.execute(f"SELECT COUNT(*), MIN(e), MAX(e) FROM {t}")
        n, low, high = cur.fetchall()[0]
        assert (low, high) == (3, 3) and n >= ROWS
    conn.commit()
    cur.execute(f"DROP TABLE {t}")
    conn.commit()
    TIMINGS.update({f"wide: {k}": v for k, v in timings.items()})


def test_drop_column_beside_writers_leaves_no_physical_column(
    embedded: Callable[..., tique.Connection], embedded_url: str, unique_name: Callable[[str], str]
) -> None:
    t = unique_name("dropc")
    conn = embedded()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT, s VARCHAR(20), x1 INT, x2 INT, x3 INT)")
    conn.commit()
    conn.bulk_load(t, [(k, k, f"s{k}", k, k, k) for k in range(20_000)], batch=5000)
    shape = Shape(t)
    said: list[str] = []
    with Writers(embedded_url, shape, 3, 20_000, checkpoint=False) as writers:
        time.sleep(0.5)
        for column in ("x1", "x2", "x3"):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                cur.execute(f"ALTER TABLE {t} DROP COLUMN {column}")
                conn.commit()
            said += [str(w.message) for w in caught]
            time.sleep(0.2)
    check_table(conn, t, Model.of(20_000, writers.writers))
    left = {table: [c for c in cols if c.startswith("x")] for table, cols in physical_columns(embedded_url, t).items()}
    cur.execute(f"DROP TABLE {t}")
    conn.commit()
    assert said == [] and all(not cols for cols in left.values()), (left, said[:2])


# ---- 2. writers racing RENAME TO / RENAME COLUMN, same process and another one over MAPI ------------------------


def _race(url: str, table: str, rows: int, child: bool, tmp_path: Path) -> tuple[Writers, list[dict[str, Any]], dict]:
    """Two writer threads (and, with ``child``, a writer process over MAPI) commit while this connection renames
    the table away and back and its column s to s2 and back; the writers always name the table ``table``."""
    shape = Shape(table)
    conn = tique.connect(url)
    outcomes: dict[str, list[str]] = {}
    children: list[subprocess.Popen[str]] = []
    try:
        if child:
            children.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "tests.adversarial.test_attack_ddl_at_size",
                        "writer",
                        url,
                        table,
                        str(rows),
                        "2",
                        "3",
                        "6",
                    ],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    cwd=ROOT,
                )
            )
        with Writers(url, shape, 2, rows, partitions=3 if child else 2) as writers:
            deadline = time.monotonic() + 6
            while time.monotonic() < deadline:
                for sql in (
                    f"ALTER TABLE {table} RENAME TO {table}_away",
                    f"ALTER TABLE {table}_away RENAME TO {table}",
                    f"ALTER TABLE {table} RENAME COLUMN s TO s2",
                    f"ALTER TABLE {table} RENAME COLUMN s2 TO s",
                ):
                    error, _ = ddl(conn, sql)
                    outcomes.setdefault(sql.replace(table, "T"), []).append(
                        "ok" if error is None else f"{type(error).__name__}: {error}"
                    )
                    time.sleep(0.05)
        models = []
        for proc in children:
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err[-3000:]
            models.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for proc in children:
            if proc.poll() is None:
                proc.kill()
        conn.close()
    return writers, models, outcomes


@pytest.fixture(params=["embedded", "server"])
def race_url(request: pytest.FixtureRequest) -> str:
    if request.param == "embedded":
        return str(request.getfixturevalue("embedded_url"))
    served: ServeProcess = request.getfixturevalue("served")
    return served.url


def test_writers_racing_renames_lose_no_commit(
    race_url: str, unique_name: Callable[[str], str], tmp_path: Path
) -> None:
    """Renames of the table and of a column, back and forth, while writers commit (in this process, and over
    MAPI in another one). The renames take effect or say nothing changed; writers get clear errors ("no such
    table", a retryable conflict), never a lost commit; after all renames every committed row is there."""
    rows = 50_000
    t = unique_name("race")
    child = race_url.startswith("monetdb://")
    conn = tique.connect(race_url)
    try:
        load(conn, t, rows, tmp_path)
        writers, models, outcomes = _race(race_url, t, rows, child, tmp_path)
        all_errors = writers.errors + [e for m in models for e in m["errors"]]
        print(
            f"\n[race {'server' if child else 'embedded'}] commits={writers.commits}"
            f" child commits={[m['commits'] for m in models]}"
        )
        for error, n in Counter(e[:170] for e in all_errors).most_common(12):
            print(f"  writer error x{n}: {error}")
        for sql, results in outcomes.items():
            print(f"  {sql}: {Counter(r[:120] for r in results).most_common(3)}")
        for sql, results in outcomes.items():
            # MonetDB 11.41 itself once failed a RENAME beside the writers over MAPI ("GDK reported error:
            # BATappend_or_update: update BATs not the same size"), a clear error: the checks below still require
            # every committed row
            assert all(r == "ok" or "changed nothing" in r or "GDK reported error" in r for r in results), (
                sql,
                results,
            )
        model = Model.of(rows, writers.writers, models)
        check_table(conn, t, model)
        assert writers.commits + sum(m["commits"] for m in models) > 20
        assert [e for e in all_errors if e.startswith("NOT A tique.Error")] == []
        assert other_leaks(all_errors) == [], other_leaks(all_errors)
        checkpoint_clean(race_url)
        check_table(conn, t, model)
        conn.cursor().execute(f"DROP TABLE {t}")
        conn.commit()
    finally:
        conn.close()


@pytest.mark.parametrize("change", ["RENAME COLUMN s TO s2"])
@pytest.mark.parametrize("ddl_from", ["same_process", "other_process"])
def test_commit_after_rename_column_names_no_internal_table(
    race_url: str, unique_name: Callable[[str], str], ddl_from: str, change: str
) -> None:
    """A writer buffers an INSERT, another session renames a column the row has, the writer commits: it should
    fail as a retryable conflict (as after a DROP TABLE or a RENAME TO) naming only the user's table."""
    if ddl_from == "other_process" and not race_url.startswith("monetdb://"):
        pytest.skip("another process reaches the database over MAPI only")
    t = unique_name("rc")
    ddl_conn, writer = tique.connect(race_url), tique.connect(race_url)
    try:
        cur = ddl_conn.cursor()
        cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT, s VARCHAR(10))")
        cur.execute(f"INSERT INTO {t} VALUES (1, 1, 'a')")
        ddl_conn.commit()
        writer.cursor().execute(f"INSERT INTO {t} (k, v) VALUES (2, 2)")
        rename = f"ALTER TABLE {t} {change}"
        if ddl_from == "same_process":
            cur.execute(rename)
            ddl_conn.commit()
        else:
            ran = _child("sql", race_url, rename)
            assert ran.returncode == 0, ran.stderr[-2000:]
        with pytest.raises(tique.Error) as caught:
            writer.commit()
        writer.rollback()
        cur.execute(f"SELECT k, v FROM {t} ORDER BY k")
        assert cur.fetchall() == [(1, 1)]  # the refused commit left nothing
        ddl_conn.commit()
        said = f"{type(caught.value).__name__}: {caught.value}"
        assert not INTERNAL.search(said), said
        assert isinstance(caught.value, SerializationFailure), said
    finally:
        ddl_conn.close()
        writer.close()


def _overlapping_statement(url: str, table: str, rename: str, other_process: bool) -> tuple[Exception | None, str]:
    """A transaction of connection A updates row 1 of ``table`` (its key reads prepared by earlier commits), then
    ``rename`` runs - in another process over MAPI, or in this one with A's next statements run right after the
    rename's engine COMMIT, before the process's catalog is refreshed - and A inserts a row: its error, if any,
    and how it ran."""
    a, b = tique.connect(url), tique.connect(url)
    try:
        b.cursor().execute(f"CREATE TABLE {table} (k INT PRIMARY KEY, v INT, s VARCHAR(10))")
        b.cursor().execute(f"INSERT INTO {table} VALUES (1, 1, 'a'), (2, 2, 'b')")
        b.commit()
        cur = a.cursor()
        for i in range(3):  # prepared: the third run is an EXEC
            cur.execute(f"UPDATE {table} SET v = %s WHERE k = %s", (10 + i, 2))
            a.commit()
        cur.execute(f"UPDATE {table} SET v = %s WHERE k = %s", (5, 1))
        seen: dict[str, Exception | None] = {}

        def overlapping() -> None:
            try:
                cur.execute(f"UPDATE {table} SET v = %s WHERE k = %s", (20, 2))
                cur.execute(f"INSERT INTO {table} (k, v) VALUES (%s, %s)", (3, 3))
                a.commit()
                seen["error"] = None
            except tique.Error as exc:
                seen["error"] = exc
                a.rollback()

        if other_process:
            ran = _child("sql", url, rename)
            assert ran.returncode == 0, ran.stderr[-2000:]
            overlapping()
        else:

            def hook(sql: str, _took: float, error: Exception | None) -> None:
                if error is None and sql.startswith("COMMIT") and not seen:
                    overlapping()

            b.statement_hooks.append(hook)
            b.cursor().execute(rename)
            b.commit()
            b.statement_hooks.clear()
        return seen["error"], "other process" if other_process else "same process"
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("rename", ["table", "column"])
@pytest.mark.parametrize("where", ["same_process", "other_process"])
def test_statement_overlapping_a_rename_fails_retryably_without_internal_names(
    request: pytest.FixtureRequest, unique_name: Callable[[str], str], rename: str, where: str
) -> None:
    if where == "other_process":
        url = request.getfixturevalue("served").url
    else:
        url = str(request.getfixturevalue("embedded_url"))
    t = unique_name("ov")
    sql = f"ALTER TABLE {t} RENAME TO {t}_away" if rename == "table" else f"ALTER TABLE {t} RENAME COLUMN s TO s2"
    error, how = _overlapping_statement(url, t, sql, where == "other_process")
    said = f"{type(error).__name__}: {error}"
    assert error is None or (isinstance(error, SerializationFailure) and not INTERNAL.search(said)), f"{how}: {said}"


def test_read_while_a_table_is_renamed_back_reads_the_snapshot(
    embedded: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    t = unique_name("back")
    a, b = embedded(), embedded()
    cur, other = a.cursor(), b.cursor()
    other.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT)")
    other.execute(f"INSERT INTO {t} VALUES (1, 1)")
    b.commit()
    cur.execute(f"SELECT v FROM {t} WHERE k = 1")
    assert cur.fetchall() == [(1,)]  # A's snapshot: v = 1
    other.execute(f"UPDATE {t} SET v = 2 WHERE k = 1")
    b.commit()
    other.execute(f"ALTER TABLE {t} RENAME TO {t}_away")
    b.commit()
    renamed_back: list[bool] = []

    def back(sql: str, _took: float, error: Exception | None) -> None:
        if "tique.tables" in sql and not renamed_back:  # A's catalog refresh for the missing name
            renamed_back.append(True)
            other.execute(f"ALTER TABLE {t}_away RENAME TO {t}")
            b.commit()

    a.statement_hooks.append(back)
    try:
        cur.execute(f"SELECT v FROM {t} WHERE k = 1 AND v > 0")
        got = cur.fetchall()
    except tique.Error as exc:  # a clear refusal would do too
        got = [(f"{type(exc).__name__}: {exc}",)]
    a.statement_hooks.clear()
    a.rollback()
    assert renamed_back
    assert got != [(2,)], "the transaction read a value committed after its snapshot, through MonetDB's view"


# ---- 3. SIGKILL inside the physical ADD COLUMN on the large table ------------------------------------------------


def _child(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.adversarial.test_attack_ddl_at_size", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
    )


COMMITTED_BEFORE = 300  # transactions the setup commits (Cache versions, some checkpointed)


@pytest.fixture(scope="module")
def kill_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database of its own: table big with KILL_ROWS loaded rows, then COMMITTED_BEFORE writer transactions
    (a checkpoint between them: versions both in Storage and in the Cache); the model beside it as JSON."""
    directory = tmp_path_factory.mktemp("ddl_size_kills") / "base"
    made = _child("setup", f"monetdbe://{directory}", str(KILL_ROWS))
    assert made.returncode == 0, made.stderr[-3000:]
    opened = _child("open", f"monetdbe://{directory}")
    assert opened.returncode == 0, opened.stderr[-3000:]
    return directory


def test_large_loaded_table_reopens_after_close(tmp_path: Path) -> None:
    """A 1M-row load and commits, closed normally, opens again. It failed in 2 of 18 runs on a loaded machine (and
    in CI) before tique repaired the short string heap a racing flush leaves (tests/adversarial/test_heap_repair.py
    makes that state exactly); here it is the real-size run."""
    failures = []
    for attempt in range(sized(1, 2)):
        url = f"monetdbe://{tmp_path / f'db{attempt}'}"
        made = _child("setup", url, str(KILL_ROWS), "20")
        assert made.returncode == 0, made.stderr[-3000:]
        opened = _child("open", url)
        if opened.returncode != 0:
            failures.append(opened.stderr.strip().splitlines()[-1])
    assert failures == [], failures


def _killed(kill_base: Path, tmp_path: Path, how: str, *args: str) -> tuple[str, str]:
    """A copy of the base database where ADD COLUMN was SIGKILLed (``how``: "after" the Storage step's statement,
    or "during" it, ``args[0]`` seconds in) while a writer thread committed (its log beside the copy: a line per
    commit, written after COMMIT returned, which the probe adds to the setup's model); the URL and the killed
    child's output."""
    directory = tmp_path / "db"
    shutil.copytree(kill_base, directory)
    shutil.copy(kill_base.parent / "model.json", tmp_path / "model.json")
    url = f"monetdbe://{directory}"
    killed = _child("kill", url, str(KILL_ROWS), str(tmp_path / "commits.log"), how, *args)
    assert killed.returncode == -signal.SIGKILL, f"not killed: {killed.stdout}{killed.stderr[-3000:]}"
    return url, killed.stdout


def _probe(url: str) -> dict[str, Any]:
    probed = _child("probe", url, str(KILL_ROWS))
    assert probed.returncode == 0, probed.stderr[-3000:]
    state: dict[str, Any] = json.loads(probed.stdout.strip().splitlines()[-1])
    return state


def _assert_whole(state: dict[str, Any]) -> None:
    for key, value in state.items():
        if key != "rename_onto_left_behind":  # its own xfail below
            assert not (isinstance(value, str) and INTERNAL.search(value)), f"{key} names tique's tables: {value}"
    assert state["columns"] in (["k", "v", "s"], ["k", "v", "s", "d"]), state
    assert state["check"] == "ok", state["check"]  # every committed row as committed, the count exact
    assert state["checkpoint"] == [], state
    assert state["write"] == "ok", state
    assert state["check_after"] == "ok", state
    if state["columns"] == ["k", "v", "s", "d"]:
        assert state["d_not_default"] == 0, state
    assert state["redo"] == "ok" or "already exists" in state["redo"], state


@pytest.mark.parametrize("seconds", thinned([0.01, 0.04, 0.08], [0, 2]))  # `make test`: the earliest and latest
def test_add_column_killed_inside_its_storage_step_leaves_the_table_whole(
    kill_base: Path, tmp_path: Path, seconds: float
) -> None:
    """SIGKILL ``seconds`` into the physical ADD COLUMN on Storage (a long VARCHAR DEFAULT on KILL_ROWS rows) while
    a writer commits; reopened, the table reads with or without the column, every committed row intact, the
    checkpointer clean, a write commits, and the ADD COLUMN can be run again."""
    url, said = _killed(kill_base, tmp_path, "during", str(seconds))
    state = _probe(url)
    state["killed"] = said.strip().splitlines()[-2:]
    print(f"\n[kill during storage step +{seconds}s] {said.strip().splitlines()[-2:]} -> columns {state['columns']}")
    _assert_whole(state)


def test_rename_column_onto_a_name_left_behind_by_a_killed_add_column(kill_base: Path, tmp_path: Path) -> None:
    url, _ = _killed(kill_base, tmp_path, "after")
    state = _probe(url)
    _assert_whole(state)
    assert state["rename_onto_left_behind"] == "ok", state["rename_onto_left_behind"]


def test_add_column_killed_after_its_storage_step_leaves_the_table_whole(kill_base: Path, tmp_path: Path) -> None:
    """Killed right after the Storage ADD COLUMN committed (the column is left behind, unnamed by the catalog):
    the table is whole without it and the ADD COLUMN runs again."""
    url, _ = _killed(kill_base, tmp_path, "after")
    state = _probe(url)
    _assert_whole(state)
    assert state["columns"] == ["k", "v", "s"] and state["redo"] == "ok", state


# ---- the subprocess side ----------------------------------------------------------------------------------------


def _open(url: str) -> None:
    tique.connect(url).close()


def _setup_kill_base(url: str, rows: int, commits: int = COMMITTED_BEFORE) -> None:
    directory = Path(url.removeprefix("monetdbe://"))
    conn = tique.connect(url)
    load(conn, "big", rows, directory.parent)
    shape = Shape("big")
    writer = Writer(url, 0, 1, rows, shape)
    for n in range(1, commits + 1):
        writer.step(conn, n)
        if n == commits // 2:
            raw = Database.get(url).connect_raw()
            try:
                assert Checkpointer(raw).run_once().errors == []
            finally:
                raw.close()
    assert writer.errors == [], writer.errors
    conn.close()
    (directory.parent / "model.json").write_text(
        json.dumps({"values": writer.values, "cs": writer.cs, "unknown": sorted(writer.unknown)})
    )


def _kill(url: str, rows: int, log_path: str, how: str, seconds: float = 0.0) -> None:
    """ADD COLUMN d VARCHAR(80) DEFAULT long text, SIGKILLed inside or right after its Storage step, while a
    writer thread (keys of writer 1 of 2) commits and logs each commit."""
    from tique import alter

    conn = tique.connect(url)
    log = open(log_path, "w")  # noqa: SIM115 - written up to the kill
    stop = threading.Event()
    wrote = threading.Event()

    def write() -> None:
        wconn = tique.connect(url)
        n = 10_000  # past the setup's numbers
        while not stop.is_set():
            n += 1
            k = 1 + 2 * random.randrange(rows // 2)
            new = rows + STRIDE * 2 + n
            v = -(STRIDE * 2 + n)
            try:
                cur = wconn.cursor()
                cur.execute("UPDATE big SET v = %s WHERE k = %s", (v, k))
                cur.execute("INSERT INTO big (k, v) VALUES (%s, %s)", (new, v))
                log.write(f"try {k} {new}\n")
                log.flush()
                wconn.commit()
                log.write(f"ok {k} {new} {v}\n")
                log.flush()
                wrote.set()
            except tique.Error:
                wconn.rollback()

    th = threading.Thread(target=write, daemon=True)
    th.start()
    wrote.wait(30)

    def die() -> None:
        print(f"killed {'during' if how == 'during' else 'after'} the storage step", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    storage_sql = re.compile(r"ALTER TABLE .*__storage. ADD COLUMN")
    if how == "during":

        def hook(step: str) -> None:
            if step == "storage":
                print(f"storage step began at {time.monotonic():.3f}", flush=True)
                threading.Timer(seconds, die).start()

        alter.step_hook = hook

        def finished(sql: str, took: float, error: Exception | None) -> None:
            if storage_sql.search(sql):
                print(f"storage statement ended after {took:.3f} s ({error})", flush=True)

        conn.statement_hooks.append(finished)
    else:

        def after(sql: str, _took: float, error: Exception | None) -> None:
            if error is None and storage_sql.search(sql):
                die()

        conn.statement_hooks.append(after)
    conn.cursor().execute(f"ALTER TABLE big ADD COLUMN d VARCHAR(80) DEFAULT '{LONG_DEFAULT}'")
    time.sleep(5)  # a kill timed past the whole ALTER still comes
    sys.exit(3)


def _probe_killed(url: str, rows: int) -> None:
    """Reopen (recovery runs) and report what an application sees, as JSON."""
    directory = Path(url.removeprefix("monetdbe://"))
    out: dict[str, Any] = {}
    conn = tique.connect(url)
    cur = conn.cursor()
    model_file = directory.parent / "model.json"
    data = json.loads(model_file.read_text())
    log = directory.parent / "commits.log"
    for line in log.read_text().splitlines() if log.exists() else []:
        kind, *numbers = line.split()
        if kind == "ok":
            k, new, v = (int(x) for x in numbers)
            data["values"][str(k)] = data["values"][str(new)] = v
        elif kind == "try":
            data["unknown"] += [int(x) for x in numbers]
    done = {int(x.split()[1]) for x in log.read_text().splitlines() if x.startswith("ok")} if log.exists() else set()
    model = Model(
        rows,
        {int(k): v for k, v in data["values"].items()},
        {},
        {k for k in data["unknown"] if k not in done and str(k) not in data["values"]},
    )

    def attempt(name: str, fn: Callable[[], Any]) -> None:
        try:
            out[name] = fn()
            conn.commit()
        except Exception as exc:  # reported, not raised: the test decides
            out[name] = f"ERR {type(exc).__name__}: {exc}"
            try:
                conn.rollback()
            except Exception:
                pass

    def columns() -> list[str]:
        cur.execute("SELECT * FROM big WHERE k = 0")
        return [d[0] for d in cur.description]

    def checked() -> str:
        check_table(conn, "big", model)
        return "ok"

    def checkpoint() -> list[str]:
        raw = Database.get(url).connect_raw()
        try:
            return Checkpointer(raw).run_once().errors
        finally:
            raw.close()

    def write() -> str:
        cur.execute("UPDATE big SET v = -5 WHERE k = 0")
        conn.commit()
        model.values[0] = -5
        return "ok"

    def not_default() -> int:
        cur.execute(f"SELECT COUNT(*) FROM big WHERE d IS NULL OR d <> '{LONG_DEFAULT}'")
        return int(cur.fetchall()[0][0])

    def ran(sql: str) -> str:
        cur.execute(sql)
        conn.commit()
        return "ok"

    attempt("columns", columns)
    attempt("check", checked)
    attempt("checkpoint", checkpoint)
    attempt("write", write)
    attempt("check_after", checked)
    if out["columns"] == ["k", "v", "s", "d"]:
        attempt("d_not_default", not_default)
        attempt("redo", lambda: ran(f"ALTER TABLE big ADD COLUMN d VARCHAR(80) DEFAULT '{LONG_DEFAULT}'"))
        out["rename_onto_left_behind"] = "ok"  # nothing left behind: the column is the table's
    else:
        attempt("rename_onto_left_behind", lambda: ran("ALTER TABLE big RENAME COLUMN s TO d"))
        if out["rename_onto_left_behind"] == "ok":
            ran("ALTER TABLE big RENAME COLUMN d TO s")
        attempt("redo", lambda: ran(f"ALTER TABLE big ADD COLUMN d VARCHAR(80) DEFAULT '{LONG_DEFAULT}'"))
    conn.close()
    print(json.dumps(out))


def _writer_process(url: str, table: str, rows: int, index: int, writers: int, seconds: float) -> None:
    """Writer ``index`` of ``writers`` for ``seconds``, over MAPI; its model as JSON."""
    shape = Shape(table)
    writer = Writer(url, index, writers, rows, shape)
    th = threading.Thread(target=writer.loop)
    th.start()
    time.sleep(seconds)
    shape.stop.set()
    th.join(60)
    print(
        json.dumps(
            {
                "values": writer.values,
                "cs": writer.cs,
                "unknown": sorted(writer.unknown),
                "errors": writer.errors,
                "commits": writer.commits,
            }
        )
    )


def _sql(url: str, sql: str) -> None:
    conn = tique.connect(url)
    conn.cursor().execute(sql)
    conn.commit()
    conn.close()


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "setup":
        _setup_kill_base(sys.argv[2], int(sys.argv[3]), *(int(x) for x in sys.argv[4:5]))
    elif mode == "open":
        _open(sys.argv[2])
    elif mode == "kill":
        _kill(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], *(float(x) for x in sys.argv[6:7]))
    elif mode == "probe":
        _probe_killed(sys.argv[2], int(sys.argv[3]))
    elif mode == "writer":
        _writer_process(
            sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])
        )
    elif mode == "sql":
        _sql(sys.argv[2], sys.argv[3])
