"""``tique serve``: MonetDB's own MAPI listener on the embedded kernel, with tique's C module loaded.

Other processes (pymonetdb, ``tique.connect('monetdb://...')``, the checkpointer) reach the database through
it, which is how several processes share one embedded database directory.
"""

from __future__ import annotations

import faulthandler
import hashlib
import os
import re
import shutil
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from tique.bootstrap import bootstrap
from tique.engine.embedded import EmbeddedConnection, EmbeddedEngine
from tique.engine.url import EngineURL
from tique.errors import Error, OperationalError
from tique.login_guard import Gate, LoginGuard, private_socket_path
from tique.sequencer import CSequencer, SqlSequencer

if TYPE_CHECKING:
    from tique.checkpoint.algorithm import CheckpointReport


def _set_up(conn: EmbeddedConnection) -> None:
    """Once the database is open, before the readiness line: tique's bootstrap, recovery included."""
    # ordinary users log in over MAPI: the protocol procedures say what they may call and write (privileges.py)
    report = bootstrap(conn, CSequencer())
    if report.aborted:
        print(f"tique serve: recovery aborted {report.aborted} unfinished transaction(s)", flush=True)
    # For tests and comparisons only: SEQUENCEs are unsafe under concurrency on this kernel (see sequencer.py).
    if os.environ.get("TIQUE_INSTALL_SQL_SEQUENCER") == "1":
        SqlSequencer(unsafe_sequences=True).install(conn)


class _FailedRuns:
    """Prints a checkpoint run that failed, on ``out``: a failure again only after a minute, where failures that
    differ only in their numbers (an id, a count) are the same, and at most ``per_minute`` lines a minute in all.
    A run is retried every interval, which may be 100 ms, and ``out`` may be a pipe nobody reads: once it is full
    the print blocks the checkpointer thread, which holds the checkpoint lock."""

    def __init__(self, out: TextIO, per_minute: int = 6) -> None:
        self.out = out
        self.per_minute = per_minute
        self.printed: dict[str, float] = {}  # failure, numbers left out -> when it was last printed

    def __call__(self, report: CheckpointReport) -> None:
        if not report.errors:
            return
        text, now = "; ".join(report.errors), time.monotonic()
        shape = re.sub(r"[0-9]+", "#", text)
        self.printed = {k: t for k, t in self.printed.items() if now - t <= 60}
        if shape in self.printed or len(self.printed) >= self.per_minute:
            return
        self.printed[shape] = now
        print(f"tique serve: a checkpoint run failed (retried every interval): {text}", file=self.out, flush=True)


def port_in_use(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def set_admin_password(conn: EmbeddedConnection, password: str) -> None:
    """Make the 'monetdb' admin log in with ``password`` over MAPI.

    In embedded mode MonetDB stores a placeholder that deciphers to the password '0', so no login works until
    it is changed; on later starts the old password is the SHA-512 hash set here (the server offers SHA512 only).
    """
    digest = hashlib.sha512(password.encode()).hexdigest()
    for old in ("0", digest):
        try:
            conn.execute(f"ALTER USER SET ENCRYPTED PASSWORD '{digest}' USING OLD PASSWORD '{old}'")
            return
        except Error:
            continue
    raise OperationalError(
        "this database's admin password was set to another value by an earlier 'tique serve'; "
        "start it with that --password"
    )


DEFAULT_PASSWORD = "monetdb"  # MonetDB's well-known default: anyone who can reach the port can guess it


def admin_password(given: str | None, path: str | None, environment: str | None) -> str:
    """The admin password: from ``--password-file`` (its first line), ``--password``, or $TIQUE_PASSWORD (a file or
    the environment keep it out of ``ps``), else the well-known default."""
    if path is not None:
        with open(path, encoding="utf-8") as handle:
            first = handle.readline().rstrip("\r\n")
        if not first:
            raise ValueError(f"--password-file {path} is empty: write the password on its first line")
        return first
    if given is not None:
        return given
    return environment or DEFAULT_PASSWORD


def default_password_warning(password: str, port: int) -> str | None:
    if password != DEFAULT_PASSWORD:
        return None
    return (
        f"tique serve: warning: the admin password is MonetDB's well-known default {DEFAULT_PASSWORD!r}: anyone who "
        f"can reach port {port} logs in as the superuser. Set another with --password-file FILE or $TIQUE_PASSWORD"
    )


OWN_SESSIONS = 4  # kernel sessions tique serve keeps for itself: its engine's two, a checkpointer thread, one spare
DEFAULT_MAX_CLIENTS = 60  # what the kernel's default of 64 sessions leaves for clients
MAX_MAX_CLIENTS = 5000  # each kernel session slot is preallocated


def check_max_clients(clients: int) -> None:
    if not 1 <= clients <= MAX_MAX_CLIENTS:
        raise OperationalError(f"--max-clients must be between 1 and {MAX_MAX_CLIENTS}, not {clients}")


class Server:
    """An open database with its MAPI listener; ``stop()`` closes it."""

    def __init__(
        self,
        directory: str,
        port: int,
        password: str = "monetdb",
        host: str = "127.0.0.1",
        max_clients: int | None = None,
        guard: LoginGuard | None = None,
    ) -> None:
        if max_clients is not None:
            check_max_clients(max_clients)
        self.directory = os.path.abspath(directory)
        self.port = port
        self.host = host
        self.password = password
        self.database = os.path.basename(self.directory.rstrip("/"))
        self._stopped = threading.Event()
        parent = Path(self.directory).parent
        try:
            parent.mkdir(parents=True, exist_ok=True)  # `tique serve ./data/db` on a fresh checkout
        except OSError as exc:
            raise OperationalError(f"cannot create the parent directory {parent} of {self.directory}: {exc}") from None
        if port_in_use("127.0.0.1", port):
            raise OperationalError(f"port {port} is already in use on this machine; choose another with --port")
        # Should a client reach the kernel before recovery (_set_up) has restored the counters, the C module
        # refuses ids, timestamps and snapshots until then (a retryable SerializationFailure), when this is set
        # before it loads.
        os.environ["TIQUE_HOLD_UNTIL_RECOVERED"] = "1"
        if max_clients is not None:
            from tique.engine import udf

            udf.set_max_clients(max_clients + OWN_SESSIONS)
        # The kernel listens only on a private UNIX socket (port 0: no TCP listener); tique's gate owns the TCP
        # port and counts failed logins per source (tique/login_guard.py).
        self._socket_dir, kernel_socket = private_socket_path()
        self.engine = EmbeddedEngine(
            EngineURL(kind="embedded", path=self.directory), mapi_port=0, mapi_usock=kernel_socket
        )
        self.conn = self.engine.connect()
        _kernel_turns(self.conn)
        try:  # bound now (a port in use fails before the set-up's work); accepting only once the set-up is done
            self.gate = Gate(host, port, kernel_socket, guard or LoginGuard())
        except OSError as exc:
            self.stop()
            raise OperationalError(f"cannot listen on {host}:{port}: {exc.strerror}; choose another --port") from None
        if max_clients is not None and not udf.max_clients_took_effect():
            self.stop()
            raise OperationalError(
                "--max-clients could not take effect: the kernel was started before it could be set (run "
                "'tique serve' as its own process)"
            )
        try:
            set_admin_password(self.conn, password)
            _set_up(self.conn)
        except BaseException:
            self.stop()
            raise
        # Clients that connect earlier wait in the listen queue: none runs a statement before recovery restored
        # the counters and the engine functions are compiled (sequencer.compile_functions).
        self.gate.start()

    @property
    def url(self) -> str:
        return f"monetdb://monetdb:{self.password}@{self.host}:{self.port}/{self.database}"

    def stop(self) -> None:
        if not self._stopped.is_set():
            self._stopped.set()
            if getattr(self, "gate", None) is not None:
                self.gate.stop()
            self.engine.close()
            shutil.rmtree(self._socket_dir, ignore_errors=True)

    def wait(self) -> None:
        while not self._stopped.wait(0.5):
            pass


def _kernel_turns(conn: object) -> None:
    """This process's reads and appends (its checkpointer) take turns in the C module, as the MAPI clients' do
    (tique/turns.py): the kernel now serves them."""
    from tique.engine import udf
    from tique.turns import KernelTurns

    guard = getattr(conn, "append_guard", None)
    if guard is not None and udf._module is not None:
        guard.kernel = KernelTurns(udf._module)


def serve(
    directory: str,
    port: int,
    password: str,
    out: TextIO = sys.stdout,
    checkpoint_interval: float | None = None,
    max_clients: int | None = None,
    guard: LoginGuard | None = None,
) -> int:
    """Run until SIGTERM or SIGINT; print one readiness line when clients can connect. With
    ``checkpoint_interval`` the checkpointer runs as a thread of the server (no separate process needed);
    ``max_clients`` sets how many client sessions the kernel admits (default: its 64, of which tique keeps a few)."""
    try:
        server = Server(directory, port, password, max_clients=max_clients, guard=guard)
    except Error as exc:
        print(f"tique serve: {exc}", file=sys.stderr)
        return 2
    checkpointer = None
    if checkpoint_interval:
        from tique.checkpoint import BackgroundCheckpointer

        checkpointer = BackgroundCheckpointer(
            server.engine.connect,
            checkpoint_interval,
            on_report=_FailedRuns(sys.stderr),
            on_error=lambda message: print(
                f"tique serve: the checkpointer stopped: {message}", file=sys.stderr, flush=True
            ),
        ).start()
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # kill -USR1: every thread's stack on stderr
    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    warning = default_password_warning(password, port)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    redacted = server.url.replace(f":{password}@", ":***@")
    print(
        f"tique serve: ready on {server.host}:{port}, database {server.database!r} in {server.directory} ({redacted})",
        file=out,
        flush=True,
    )
    while not stopping.wait(0.5):
        pass
    if checkpointer is not None:
        checkpointer.stop()  # before the kernel closes under it
    server.stop()
    print("tique serve: stopped", file=out, flush=True)
    return 0
