"""The systems under test, one interface: ``start()`` a throw-away database, ``load()`` the CSV files,
``connect()`` a DB-API connection (``%s`` parameters, explicit commit), ``is_conflict(exc)``, ``stop()``.

- ``tique`` / ``tique-mapi``: tique embedded in the worker process / over a ``tique serve`` subprocess;
  loaded with ``Connection.bulk_load_csv`` straight into Storage. ``tique-noheld``: embedded with
  ``held_rows=False`` (every statement in the engine), to measure what held rows save side by side;
  ``tique-noshared``: embedded with ``shared_rows=False`` (no rows kept across transactions);
  ``tique-noyield``: embedded with ``analytical_yield=False`` (analytical reads never yield to writers).
- ``monetdb`` / ``monetdb-mapi``: native MonetDB transactions on the same kernel (embedded, or pymonetdb over
  a ``tique serve`` of a separate directory, used as a plain MonetDB server); loaded with COPY INTO.
- ``monetdb-oltp`` / ``monetdb-oltp-mapi``: the same, every transactional session on the optimizer pipeline
  tique uses for its short statements (``OLTP_PIPELINE``: tique's ``short_pipeline`` default, minimal_fast),
  where the default pipeline plans a point SELECT like an analytical query; analytical sessions (CH, HTAP) keep
  the default pipeline, as tique's analytical statements do.
- ``postgres``: PostgreSQL from Debian on a loopback port, REPEATABLE READ (its snapshot isolation), default
  durability settings; initdb'd into a temporary directory and stopped afterwards.

A system with a server (``tique-mapi``, ``*-mapi``, ``postgres``) also gives ``remote()``: a picklable ``Remote``
that connects and classifies errors from another process, for clients that run as processes of their own (as the
processes of a deployed application do), each with its own Python interpreter and GIL.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, free_port
from benchmarks.tpcc.data import TABLE_ORDER
from benchmarks.tpcc.schema import ALL_TABLES
from tique.settings import CHECKPOINT_INTERVAL_S  # tique's default (1 s in runs before 2026-11-27)

CONFLICT_MESSAGES = ("concurrency conflict", "conflict with another transaction", "could not serialize", "40001")
SYSTEMS = (
    "tique",
    "tique-mapi",
    "tique-noheld",
    "tique-noshared",
    "tique-noyield",
    "monetdb",
    "monetdb-mapi",
    "monetdb-oltp",
    "monetdb-oltp-mapi",
    "postgres",
)


def _oltp_pipeline() -> str:
    from tique.settings import Settings

    return Settings().short_pipeline or "default_pipe"


OLTP_PIPELINE = _oltp_pipeline()


class SystemUnavailable(RuntimeError):
    """The system cannot run here (its server is missing or cannot start); the reason says why."""


class System:
    name = ""

    def start(self) -> None: ...

    def load(self, csv_dir: Path) -> None: ...

    def after_load(self) -> None: ...

    def connect_analytical(self, workers: int | None) -> Any:
        """A connection for analytical queries, its parallelism capped at ``workers`` threads where the system
        has such a per-session knob (MonetDB's sys.setworkerlimit; PostgreSQL's parallel workers)."""
        return self.connect()

    def connect(self) -> Any: ...

    def analytical_gate(self, slots: int | None) -> AbstractContextManager[Any]:
        """Admission for analytical queries, at most ``slots`` at once: the benchmark's own semaphore around each
        query, as a workload manager in front of the system would do (tique has this built in)."""
        return threading.BoundedSemaphore(slots) if slots else nullcontext()

    def pause_maintenance(self) -> None:
        """Stop background work that would change what is measured next (tique: the checkpointer)."""

    def versions_pending(self) -> int | None:
        """Rows waiting in tique's Cache tables (None: the system has none)."""
        return None

    def is_conflict(self, exc: BaseException) -> bool:
        return _is_conflict(exc)

    def remote(self) -> Remote | None:
        """How a client in another process reaches this system (None: only from this process, e.g. embedded)."""
        return None

    def stop(self) -> None: ...

    def counters(self) -> dict[str, int]:
        """Counts the system keeps about its own work during the run (tique embedded: its append guard)."""
        return {}

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, **getattr(self, "settings", {})}


def _is_conflict(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(m in text for m in CONFLICT_MESSAGES)


def _monetdb_conflict(exc: BaseException) -> bool:
    # MonetDB reports a write-write conflict inside a transaction as a bare "Update failed" (the store
    # refused the update of a row another transaction changed) as well as at COMMIT
    return "update failed" in str(exc).lower() or _is_conflict(exc)


def _postgres_conflict(exc: BaseException) -> bool:
    return getattr(exc, "sqlstate", None) in ("40001", "40P01") or _is_conflict(exc)


def _pymonetdb_connect(port: int, pipeline: str | None) -> Any:
    import pymonetdb

    conn = pymonetdb.connect("tpcc", hostname="127.0.0.1", port=port, username="monetdb", password="monetdb")
    if pipeline:
        conn.cursor().execute(f"SET optimizer = '{pipeline}'")
        conn.commit()
    return conn


def _postgres_connect(port: int) -> Any:
    import psycopg

    conn = psycopg.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres")
    conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    return conn


@dataclass(frozen=True)
class Remote(System):
    """A served system as a client process sees it: ``connect()`` and ``is_conflict()``, nothing else.
    ``kind``: the client library (tique, pymonetdb, psycopg); ``params``: what it connects with."""

    name: str = ""
    kind: str = ""
    params: dict[str, Any] = field(default_factory=dict)

    def connect(self) -> Any:
        if self.kind == "tique":
            import tique

            return tique.connect(self.params["url"], **self.params["settings"])
        if self.kind == "pymonetdb":
            return _pymonetdb_connect(self.params["port"], self.params["pipeline"])
        return _postgres_connect(self.params["port"])

    def is_conflict(self, exc: BaseException) -> bool:
        if self.kind == "pymonetdb":
            return _monetdb_conflict(exc)
        if self.kind == "psycopg":
            return _postgres_conflict(exc)
        return _is_conflict(exc)


def _copy_sql(table: str, path: Path) -> str:
    return f"COPY INTO {table} FROM '{path}' USING DELIMITERS ',', E'\\n', '\"' NULL AS ''"


class _Serve:
    """A ``tique serve`` subprocess on a temporary directory."""

    def __init__(self, tmp: Path, name: str, args: tuple[str, ...] = ()) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tique.cli", "serve", str(tmp / name), "--port", str(self.port), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if "ready on" not in line:
            raise SystemUnavailable(
                f"tique serve did not start: {line} {self.proc.stderr.read() if self.proc.stderr else ''}"
            )
        self.url = f"monetdb://monetdb:monetdb@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Tique(System):
    def __init__(self, mapi: bool, name: str = "", **settings: Any) -> None:
        self.name = name or ("tique-mapi" if mapi else "tique")
        self.mapi = mapi
        # inserted keys are checked against the snapshot when the rows are sent (one query per table and flush)
        # rather than at each INSERT: TPC-C inserts keys that cannot exist (ids from district counters)
        self.settings = {"insert_check": "flush", **settings}
        self._tmp = Path(tempfile.mkdtemp(prefix="tpcc-tique-"))
        self._serve: _Serve | None = None
        self._slots: int | None = None

    def start(self) -> None:
        # a deployment runs the checkpointer: without it every snapshot scans an ever-growing Cache
        if self.mapi:
            self._serve = _Serve(self._tmp, "tpcc", ("--checkpoint-interval", str(CHECKPOINT_INTERVAL_S)))
            self.url = self._serve.url
        else:
            self.url = f"monetdbe://{self._tmp / 'tpcc'}"

    def after_load(self) -> None:
        if not self.mapi:
            from tique.checkpoint import start_background

            self._checkpointer = start_background(self.url, CHECKPOINT_INTERVAL_S)

    def load(self, csv_dir: Path) -> None:
        import tique

        conn = tique.connect(self.url)
        cur = conn.cursor()
        for name in TABLE_ORDER:
            cur.execute(ALL_TABLES[name])
        for name in TABLE_ORDER:
            conn.bulk_load_csv(name, csv_dir / f"{name}.csv")
        conn.close()
        self.after_load()

    def connect(self) -> Any:
        import tique

        return tique.connect(self.url, **self.settings)

    def connect_analytical(self, workers: int | None) -> Any:
        import tique

        return tique.connect(self.url, **{**self.settings, "worker_limit": workers, "analytical_slots": self._slots})

    def remote(self) -> Remote | None:
        return Remote(self.name, "tique", {"url": self.url, "settings": self.settings}) if self.mapi else None

    def analytical_gate(self, slots: int | None) -> AbstractContextManager[Any]:
        self._slots = slots  # tique's own setting: analytical reads wait their turn inside the driver
        return nullcontext()

    def pause_maintenance(self) -> None:
        if not self.mapi:
            self._checkpointer.stop()
            return
        # held for an hour (until the server stops); taken only while no checkpointer holds it: the server's own
        # loop renews its lock every half second, so a paused run needs a server started without one
        import tique

        conn = tique.connect(self.url)
        cur = conn.cursor()
        cur.execute("SELECT tique.ckpt_acquire(1, 3600000)")
        holder = int(cur.fetchone()[0])
        conn.close()
        if holder:
            raise SystemUnavailable(
                f"{self.name}: the server's checkpointer (owner {holder}) holds its lock and cannot be paused; "
                "run this experiment with its checkpointer (--checkpointer) or on embedded tique"
            )

    def versions_pending(self) -> int | None:
        import tique
        from tique.catalog import TableInfo

        conn = tique.connect(self.url)
        try:
            cur = conn.cursor()
            cur.execute("SELECT table_id, schema_name, name, kind, spec FROM tique.tables WHERE kind = 'tx'")
            infos = [TableInfo.from_row(int(i), str(s), str(n), str(k), str(sp)) for i, s, n, k, sp in cur.fetchall()]
            counts = " + ".join(f"(SELECT COUNT(*) FROM {info.cache})" for info in infos)
            cur.execute(f"SELECT {counts or 0}")
            return int(cur.fetchone()[0])
        finally:
            conn.close()

    def counters(self) -> dict[str, int]:
        if self.mapi:
            return {}
        from tique.database import Database

        guard = Database.get(self.url).append_guard
        if guard is None:
            return {}
        return {"guard_reads": guard.reads, "read_waits": guard.read_waits, "append_waits": guard.append_waits}

    def stop(self) -> None:
        if self._serve:
            self._serve.stop()
        else:
            from tique.database import Database

            Database.get(self.url).close()
        shutil.rmtree(self._tmp, ignore_errors=True)


class NativeEmbedded:
    """Native MonetDB transactions on the embedded kernel: START TRANSACTION ... COMMIT on one session."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.open = False
        self.rows: list[tuple[Any, ...]] = []

    def cursor(self) -> NativeEmbedded:
        return self

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        from tique.params import literal

        if not self.open:
            self.raw.execute("START TRANSACTION")
            self.open = True
        text = sql % tuple(literal(p) for p in params) if params else sql
        try:
            self.rows = self.raw.execute(text).rows
        except Exception:
            self.rollback()
            raise

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self.rows

    def commit(self) -> None:
        if self.open:
            self.open = False
            self.raw.execute("COMMIT")  # a conflict aborts here; MonetDB has rolled back

    def rollback(self) -> None:
        if self.open:
            self.open = False
            try:
                self.raw.execute("ROLLBACK")
            except Exception:
                pass

    def close(self) -> None:
        self.rollback()
        self.raw.close()


class Monetdb(System):
    def __init__(self, mapi: bool, pipeline: str | None = None) -> None:
        self.name = ("monetdb-oltp" if pipeline else "monetdb") + ("-mapi" if mapi else "")
        self.mapi = mapi
        self.pipeline = pipeline  # None: the engine's default pipeline
        self.settings = {"optimizer": pipeline or "default_pipe"}
        self._tmp = Path(tempfile.mkdtemp(prefix="tpcc-monetdb-"))
        self._serve: _Serve | None = None
        self._engine: Any = None

    def start(self) -> None:
        from tique.engine import open_engine

        if self.mapi:
            self._serve = _Serve(self._tmp, "tpcc")
            self._engine = open_engine(self._serve.url)
        else:
            self._engine = open_engine(f"monetdbe://{self._tmp / 'tpcc'}")

    def load(self, csv_dir: Path) -> None:
        raw = self._engine.connect()
        for name in TABLE_ORDER:
            raw.execute(ALL_TABLES[name])
            raw.execute(_copy_sql(name, (csv_dir / f"{name}.csv").resolve()))
        raw.close()

    def is_conflict(self, exc: BaseException) -> bool:
        return _monetdb_conflict(exc)

    def remote(self) -> Remote | None:
        if self._serve is None:
            return None
        return Remote(self.name, "pymonetdb", {"port": self._serve.port, "pipeline": self.pipeline})

    def connect(self) -> Any:
        return self._connect(self.pipeline)

    def _connect(self, pipeline: str | None) -> Any:
        if self.mapi:
            assert self._serve is not None
            return _pymonetdb_connect(self._serve.port, pipeline)
        raw = self._engine.connect()
        if pipeline:
            raw.execute(f"SET optimizer = '{pipeline}'")  # outside a transaction: the session keeps it
        return NativeEmbedded(raw)

    def connect_analytical(self, workers: int | None) -> Any:
        conn = self._connect(None)  # analytical queries on the default pipeline, as tique's analytical reads
        if workers:
            cur = conn.cursor()
            cur.execute(f"CALL sys.setworkerlimit({int(workers)})")
            conn.commit()
        return conn

    def stop(self) -> None:
        if self._engine is not None and not self.mapi:
            self._engine.close()
        if self._serve:
            self._serve.stop()
        shutil.rmtree(self._tmp, ignore_errors=True)


def _pg_bin(name: str) -> str:
    where = os.environ.get("PG_BIN_DIR")  # PostgreSQL's bin directory, when not the default one
    candidates = [f"{where}/{name}"] if where else [shutil.which(name), f"/usr/lib/postgresql/15/bin/{name}"]
    for candidate in candidates:
        if candidate and Path(candidate).exists():
            return candidate
    raise SystemUnavailable(
        f"PostgreSQL's {name} was not found ({where or 'PATH, /usr/lib/postgresql/15/bin'}): "
        "apt-get install postgresql, or set PG_BIN_DIR"
    )


class Postgres(System):
    name = "postgres"

    def __init__(self) -> None:
        self._tmp = Path(tempfile.mkdtemp(prefix="tpcc-pg-"))
        self.port = free_port()
        self._as: list[str] = []

    def start(self) -> None:
        initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root: run it as the postgres user
            shutil.chown(self._tmp, "postgres")
            self._as = ["runuser", "-u", "postgres", "--"]
        data = self._tmp / "data"
        done = subprocess.run(
            [*self._as, initdb, "-D", str(data), "-A", "trust", "-U", "postgres"], capture_output=True, text=True
        )
        if done.returncode:
            raise SystemUnavailable(f"initdb failed: {done.stderr.strip()[-500:]}")
        opts = f"-p {self.port} -k {self._tmp} -c listen_addresses=127.0.0.1 -c max_connections=100"
        done = subprocess.run(
            [*self._as, pg_ctl, "-D", str(data), "-o", opts, "-l", str(self._tmp / "log"), "-w", "start"],
            capture_output=True,
            text=True,
        )
        if done.returncode:
            log = (self._tmp / "log").read_text()[-500:] if (self._tmp / "log").exists() else ""
            raise SystemUnavailable(f"PostgreSQL did not start on port {self.port}: {done.stderr.strip()} {log}")

    def connect(self) -> Any:
        return _postgres_connect(self.port)

    def remote(self) -> Remote | None:
        return Remote(self.name, "psycopg", {"port": self.port})

    def connect_analytical(self, workers: int | None) -> Any:
        conn = self.connect()
        if workers:
            with conn.cursor() as cur:
                cur.execute(f"SET max_parallel_workers_per_gather = {int(workers) - 1}")
            conn.commit()
        return conn

    def load(self, csv_dir: Path) -> None:
        conn = self.connect()
        with conn.cursor() as cur:
            for name in TABLE_ORDER:
                cur.execute(ALL_TABLES[name])
                with (
                    open(csv_dir / f"{name}.csv", "rb") as f,
                    cur.copy(f"COPY {name} FROM STDIN WITH (FORMAT csv)") as cp,
                ):
                    while chunk := f.read(1 << 20):
                        cp.write(chunk)
        conn.commit()
        with conn.cursor() as cur:
            conn.autocommit = True
            cur.execute("VACUUM ANALYZE")
        conn.close()

    def is_conflict(self, exc: BaseException) -> bool:
        return _postgres_conflict(exc)

    def stop(self) -> None:
        data = self._tmp / "data"
        if data.exists():
            subprocess.run([*self._as, _pg_bin("pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
                           capture_output=True)  # fmt: skip
        shutil.rmtree(self._tmp, ignore_errors=True)


def make(name: str, **tique_settings: Any) -> System:
    if name == "tique":
        return Tique(False, **tique_settings)
    if name == "tique-mapi":
        return Tique(True, **tique_settings)
    if name == "tique-noheld":
        return Tique(False, name, **{**tique_settings, "held_rows": False})
    if name == "tique-noshared":
        return Tique(False, name, **{**tique_settings, "shared_rows": False})
    if name == "tique-noyield":
        return Tique(False, name, **{**tique_settings, "analytical_yield": False})
    if name == "monetdb":
        return Monetdb(False)
    if name == "monetdb-mapi":
        return Monetdb(True)
    if name == "monetdb-oltp":
        return Monetdb(False, OLTP_PIPELINE)
    if name == "monetdb-oltp-mapi":
        return Monetdb(True, OLTP_PIPELINE)
    if name == "postgres":
        return Postgres()
    raise ValueError(f"unknown system {name!r}; choose from {', '.join(SYSTEMS)}")
