"""Failed-login limit for ``tique serve``: tique accepts the TCP connections, the kernel serves them.

The embedded kernel's MAPI listener checks passwords itself and tells nobody about failures, so ``tique serve``
puts its own listener in front (``Gate``) and the kernel listens only on a UNIX socket in a private directory.
For each client connection the gate:

1. refuses it at once if its source address has had ``max_failed`` failed logins within the last ``window_s``
   seconds (the client gets a MAPI error saying so and when to retry; the server logs one line per block);
2. otherwise relays the login exchange (challenge, response, verdict) between the client and a fresh kernel
   session on the UNIX socket, and so sees the verdict: a refused password counts against the source;
3. on success closes that checking session and hands the client's socket itself to the kernel (the MAPI
   listener takes a descriptor passed with SCM_RIGHTS after a '1' byte, as monetdbd uses it), after telling the
   client to log in again on the same connection (``^mapi:merovingian://proxy``, which every MAPI client
   follows). The kernel then owns the socket: tique is not in the data path, and statements cost nothing more.
   A connection costs a second login exchange (a round trip and a password check, about a millisecond here).

Logins from one source are checked one at a time (``LoginGuard.turn``), so guesses sent in parallel are cut off
at the limit too; a pool opening many connections at once waits about a millisecond per connection, and a client
that stalls its login holds back only its own address's next logins (for ``LOGIN_TIMEOUT_S`` at most). Correct
logins are never slowed by other sources' failures, and failures age out of the window.
"""

from __future__ import annotations

import array
import os
import secrets
import socket
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

DEFAULT_MAX_FAILED = 10
DEFAULT_WINDOW_S = 60.0
LOGIN_TIMEOUT_S = 30.0  # a client that sends nothing during the login exchange is dropped
_ALGORITHMS = "RIPEMD160,SHA512,SHA384,SHA256,SHA224,SHA1"  # what the 11.41 kernel's challenge offers


class LoginGuard:
    """Failed logins per source address within a sliding window."""

    def __init__(self, max_failed: int = DEFAULT_MAX_FAILED, window_s: float = DEFAULT_WINDOW_S) -> None:
        if max_failed < 1:
            raise ValueError(f"--max-failed-logins must be at least 1, not {max_failed}")
        if window_s <= 0:
            raise ValueError(f"--login-window must be a positive number of seconds, not {window_s}")
        self.max_failed = max_failed
        self.window_s = window_s
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()
        self._turns: dict[str, tuple[threading.Lock, int]] = {}  # per source: its login lock, and its users

    @contextmanager
    def turn(self, source: str) -> Iterator[None]:
        """One login check at a time per source: parallel guesses would all be checked before the first failure
        counts. A pool opening connections at once waits about a millisecond per connection."""
        with self._lock:
            lock, users = self._turns.get(source, (threading.Lock(), 0))
            self._turns[source] = (lock, users + 1)
        try:
            with lock:
                yield
        finally:
            with self._lock:
                lock, users = self._turns[source]
                if users == 1:
                    del self._turns[source]
                else:
                    self._turns[source] = (lock, users - 1)

    def _recent(self, source: str, now: float) -> deque[float]:
        times = self._failures.get(source, deque())
        while times and times[0] <= now - self.window_s:
            times.popleft()
        if not times:
            self._failures.pop(source, None)
        return times

    def blocked_for(self, source: str, now: float | None = None) -> float:
        """Seconds until ``source`` may try again (0: it may now)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            times = self._recent(source, now)
            if len(times) < self.max_failed:
                return 0.0
            # the oldest failure that keeps the count at the limit must leave the window
            return times[-self.max_failed] + self.window_s - now

    def failed(self, source: str, now: float | None = None) -> bool:
        """Count a failed login; True when this one reached the limit (the source is now blocked)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            times = self._recent(source, now)
            times.append(now)
            self._failures[source] = times
            return len(times) == self.max_failed


# ---- MAPI framing (protocol 9: blocks of at most 8190 bytes, a 2-byte header = length << 1 | last) ----------


def read_message(sock: socket.socket) -> bytes:
    parts = []
    while True:
        header = _read_exactly(sock, 2)
        value = int.from_bytes(header, "little")
        parts.append(_read_exactly(sock, value >> 1))
        if value & 1:
            return b"".join(parts)


def write_message(sock: socket.socket, data: bytes) -> None:
    out = bytearray()
    for start in range(0, max(len(data), 1), 8190):
        piece = data[start : start + 8190]
        last = start + 8190 >= len(data)
        out += ((len(piece) << 1) | int(last)).to_bytes(2, "little") + piece
    sock.sendall(bytes(out))


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the peer closed the connection during the login")
        buf += chunk
    return bytes(buf)


class Gate:
    """The TCP listener of ``tique serve``: refuses sources over the failed-login limit, checks each login
    against the kernel, then hands the connection to the kernel's UNIX-socket listener."""

    def __init__(self, host: str, port: int, kernel_socket: str, guard: LoginGuard, log: TextIO = sys.stderr) -> None:
        self.kernel_socket = kernel_socket
        self.guard = guard
        self.log = log
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((host, port))
        self._listener.listen(128)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._accept_loop, name="tique-login-gate", daemon=True)

    def start(self) -> Gate:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()

    def _accept_loop(self) -> None:
        while not self._stopped.is_set():
            try:
                client, address = self._listener.accept()
            except OSError:
                if self._stopped.is_set():
                    return
                time.sleep(0.01)  # e.g. out of descriptors: retry rather than end the listener
                continue
            threading.Thread(target=self._serve_login, args=(client, address[0]), daemon=True).start()

    def _serve_login(self, client: socket.socket, source: str) -> None:
        try:
            client.settimeout(LOGIN_TIMEOUT_S)
            with self.guard.turn(source):
                wait = self.guard.blocked_for(source)
                if wait > 0:
                    self._refuse(client, source, wait)
                    return
                accepted = self._check_login(client, source)
            if accepted:
                self._hand_over(client)
        except (OSError, ConnectionError):
            pass  # the client went away during the login: nothing to serve
        finally:
            client.close()

    def _refuse(self, client: socket.socket, source: str, wait: float) -> None:
        # a challenge first: clients read one before anything else, and then show the error as the server's
        salt = secrets.token_urlsafe(9)
        write_message(client, f"{salt}:mserver:9:{_ALGORITHMS}:LIT:SHA512:".encode())
        read_message(client)
        write_message(
            client,
            (
                f"!tique serve: too many failed logins from {source} ({self.guard.max_failed} within "
                f"{self.guard.window_s:g} s): connections from it are refused for another {wait:.0f} s; "
                "check the user name and password, then retry\n"
            ).encode(),
        )

    def _check_login(self, client: socket.socket, source: str) -> bool:
        """Relay one login exchange through a checking kernel session; True if the kernel accepted it."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as kernel:
            kernel.settimeout(LOGIN_TIMEOUT_S)
            kernel.connect(self.kernel_socket)
            kernel.sendall(b"0")  # a plain connection: no descriptor follows
            write_message(client, read_message(kernel))
            response = read_message(client)
            if b"PROT10" in response:
                write_message(client, b"!tique serve: the compressed MAPI protocol (PROT10) is not supported\n")
                return False
            write_message(kernel, response)
            verdict = read_message(kernel)
        if verdict.startswith(b"!"):
            if b"credentials" in verdict.lower():  # counted before the client hears of it and tries again
                self._count_failure(source, response)
            write_message(client, verdict)
            return False
        if verdict.startswith(b"^"):
            write_message(client, verdict)  # the kernel's own redirect: the client follows it
            return False
        return True

    def _count_failure(self, source: str, response: bytes) -> None:
        if self.guard.failed(source):
            user = response.split(b":")[1].decode(errors="replace") if response.count(b":") >= 2 else "?"
            print(
                f"tique serve: {self.guard.max_failed} failed logins from {source} within {self.guard.window_s:g} s "
                f"(last as user {user!r}): refusing its connections until they age out",
                file=self.log,
                flush=True,
            )

    def _hand_over(self, client: socket.socket) -> None:
        # the client logs in again on this connection, now with the kernel itself
        write_message(client, b"^mapi:merovingian://proxy\n")
        client.setblocking(True)  # the descriptor's O_NONBLOCK (from the timeout) is shared with the kernel's copy
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as kernel:
            kernel.connect(self.kernel_socket)
            fds = array.array("i", [client.fileno()])
            kernel.sendmsg([b"1"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])


def private_socket_path() -> tuple[str, str]:
    """A UNIX socket path in a new directory only this user can enter (other local users would bypass the gate
    through it), short enough for sun_path; (directory, path)."""
    directory = tempfile.mkdtemp(prefix="tique-serve-")
    os.chmod(directory, 0o700)
    return directory, os.path.join(directory, "mapi.sock")
