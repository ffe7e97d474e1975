"""Fixtures: the real embedded kernel (one database per process, so one per test session) and a real
``tique serve`` subprocess reached over MAPI."""

from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

import tique
from tique import transaction
from tique.database import Database
from tique.engine import RawConnection, open_engine
from tique.engine.base import Engine
from tique.transaction import Transaction

T = TypeVar("T")
ROOT = Path(__file__).resolve().parent.parent
_names = itertools.count()

# `make test-long` (TIQUE_TEST_LONG=1) runs the randomized, soak, crash, differential and benchmark-script tests
# at their full size; `make test` runs the same code smaller (fewer seeds, steps, rows, seconds), keeping every
# case class, value type and engine, so it can still fail and the suite stays under 15 minutes.
LONG = os.environ.get("TIQUE_TEST_LONG") == "1"


def sized(small: T, long: T) -> T:
    """``long`` under `make test-long`, else ``small``."""
    return long if LONG else small


def thinned(cases: Sequence[T], keep: Iterable[int]) -> list[T]:
    """Every case under `make test-long`; under `make test` the cases at the indices ``keep`` (a deterministic
    subset chosen to keep each kind of case: the first and last step of each phase, a committed and an uncommitted
    one, ...)."""
    if LONG:
        return list(cases)
    wanted = sorted(set(keep))
    assert wanted and all(0 <= i < len(cases) for i in wanted), (wanted, len(cases))
    return [cases[i] for i in wanted]


def pytest_report_header() -> str:
    return f"tique: {'full sizes (TIQUE_TEST_LONG=1)' if LONG else 'small sizes (make test-long: full sizes)'}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class ServeProcess:
    directory: Path
    port: int
    password: str
    proc: subprocess.Popen[str]

    @property
    def url(self) -> str:
        return f"monetdb://monetdb:{self.password}@127.0.0.1:{self.port}/{self.directory.name}"

    def stop(self, sig: int = 15) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode


def start_serve(
    directory: Path,
    port: int | None = None,
    password: str = "monetdb",
    timeout: float = 60,
    args: tuple[str, ...] = (),
    password_via: str = "argv",
) -> ServeProcess:
    """Start ``tique serve`` (with extra ``args``) and wait for its readiness line. ``password_via``: "argv"
    (--password), "file" (--password-file, written beside the directory) or "env" ($TIQUE_PASSWORD)."""
    port = port or free_port()
    env = {**os.environ, "TIQUE_INSTALL_SQL_SEQUENCER": "1"}
    env.pop("TIQUE_PASSWORD", None)
    command = [sys.executable, "-m", "tique.cli", "serve", str(directory), "--port", str(port)]
    if password_via == "file":
        secret = directory.parent / f"{directory.name}.password"
        secret.write_text(password + "\n")
        command += ["--password-file", str(secret)]
    elif password_via == "env":
        env["TIQUE_PASSWORD"] = password
    else:
        command += ["--password", password]
    proc = subprocess.Popen(
        [*command, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if "ready on" in line:
            return ServeProcess(directory, port, password, proc)
        if not line and proc.poll() is not None:
            raise RuntimeError(f"tique serve exited {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
    proc.kill()
    raise RuntimeError("tique serve did not become ready")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """A ``tique serve`` of the test module's own: the horizon, the counters and the catalog are per database, and
    the session's shared databases hold other tests' snapshots. A module that needs more (users, tables, a
    checkpointer inside the server) defines its own ``served``."""
    proc = start_serve(tmp_path_factory.mktemp("served") / "db")
    yield proc
    proc.stop()


# The files that take longest (half a minute or more each, measured alone under `make test`), longest first. With
# two test workers (`make test`, --dist loadfile) a file runs whole on one worker; xdist hands out the files with
# the most tests first, which left these few-test long files for the end, one worker finishing them alone for
# minutes.
LONGEST_FILES = (
    "tests/test_tpcc.py",
    "tests/test_recovery.py",
    "tests/adversarial/test_semi_join_pushdown_attacks.py",
    "tests/adversarial/test_counters_never_go_back.py",
    "tests/test_checkpoint.py",
    "tests/adversarial/test_held_rows_answer_as_the_engine.py",
    "tests/test_smoke_scripts.py",
    "tests/adversarial/test_server_kill_keeps_rows_and_record_together.py",
    "tests/test_elle_runs.py",
    "tests/adversarial/test_disk_full.py",
    "tests/adversarial/test_value_roundtrip.py",
    "tests/test_engine.py",
    "tests/test_soak_small.py",
    "tests/adversarial/test_values_checked_at_statement.py",
    "tests/test_sequencer.py",
    "tests/adversarial/test_typed_keys.py",
    "tests/adversarial/test_tables_visible_in_catalog.py",
    "tests/differential/test_differential.py",
    "tests/test_packaging.py",
    "tests/adversarial/test_shared_rows_attacks.py",
)


@pytest.hookimpl(optionalhook=True)
# sessions of the module's server, each a raw engine connection (closed at the end of the test)
@pytest.fixture
def raws(served: ServeProcess) -> Iterator[Callable[[], RawConnection]]:
    engine = open_engine(served.url)
    opened: list[RawConnection] = []

    def new() -> RawConnection:
        conn = engine.connect()
        opened.append(conn)
        return conn

    yield new
    for conn in opened:
        conn.close()


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """--dist loadfile, with the files of LONGEST_FILES handed out first (then xdist's order)."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    rank = {name: i for i, name in enumerate(LONGEST_FILES)}

    class LongestFirst(LoadFileScheduling):
        def _assign_work_unit(self, node: object) -> None:
            # min keeps the first of equals: files not listed go in xdist's own order
            first = min(self.workqueue, key=lambda scope: rank.get(scope, len(rank)))
            self.workqueue.move_to_end(first, last=False)
            super()._assign_work_unit(node)

    return LongestFirst(config, log)


@pytest.fixture(scope="session")
def embedded_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"monetdbe://{tmp_path_factory.mktemp('embedded') / 'db'}"
    # Held open for the session, as a long-running application would hold it: otherwise closing a test's last
    # connection closes the database, and the next test pays a kernel start (tests/adversarial/test_close_releases)
    Database.get(url)
    return url


@pytest.fixture(scope="session")
def embedded_engine(embedded_url: str) -> Iterator[Engine]:
    engine = open_engine(embedded_url)
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    proc = start_serve(tmp_path_factory.mktemp("served") / "served")
    yield proc
    proc.stop()


@pytest.fixture(scope="session")
def server_engine(server: ServeProcess) -> Engine:
    return open_engine(server.url)


@pytest.fixture(params=["embedded", "server"])
def engine(request: pytest.FixtureRequest) -> Engine:
    """The same test against both adapters."""
    return request.getfixturevalue(f"{request.param}_engine")


@pytest.fixture
def raw(engine: Engine) -> Iterator[RawConnection]:
    conn = engine.connect()
    yield conn
    conn.close()


@pytest.fixture(params=["embedded", "server"])
def url(request: pytest.FixtureRequest) -> str:
    """A tique URL on each adapter: the session's embedded database, or the served one over MAPI."""
    if request.param == "embedded":
        return request.getfixturevalue("embedded_url")
    return request.getfixturevalue("server").url


@pytest.fixture
def hooks() -> Iterator[list[Callable[[str, Transaction], None]]]:
    """tique.transaction.step_hooks, emptied after the test (tests/pauses.py pauses a committer there)."""
    yield transaction.step_hooks
    transaction.step_hooks.clear()


def closing_connections(url: str, **defaults: object) -> Iterator[Callable[..., tique.Connection]]:
    """A fixture body: a function opening tique connections on ``url`` (with ``defaults`` settings), all closed
    afterwards."""
    opened: list[tique.Connection] = []

    def _connect(**settings: object) -> tique.Connection:
        conn = tique.connect(url, **{**defaults, **settings})
        opened.append(conn)
        return conn

    yield _connect
    for conn in opened:
        if not conn.closed:
            conn.close()


@pytest.fixture
def connect(url: str) -> Iterator[Callable[..., tique.Connection]]:
    """Open tique connections on the test's adapter; all are closed afterwards."""
    yield from closing_connections(url)


@pytest.fixture
def unique_name() -> Callable[[str], str]:
    """Table names unique within the session (all tests share one embedded database)."""
    return lambda prefix="t": f"{prefix}_{os.getpid()}_{next(_names)}"


@pytest.fixture(scope="module", autouse=True)
def _freeze_survivors() -> None:
    """Objects alive when a module starts (libraries, collected items, session fixtures, earlier modules' caches)
    are moved out of the collector's generations, so the collection after each test (below) walks only what this
    module made: a full collection over them all cost ~0.1-0.2 s per test, a few minutes of the suite. Cyclic
    garbage is collected first, and the previous module's fixtures are torn down by then, so nothing frozen is a
    forgotten connection."""
    import gc

    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def _collect_forgotten_connections() -> Iterator[None]:
    """Tests share one embedded database per session, and MonetDB admits a bounded number of client sessions
    (opening one more fails with "Failed to initialize client"). A connection a test forgot (or left in a
    reference cycle) is closed by its finalizer: collect after each test so they never pile up."""
    yield
    import gc

    gc.collect()
