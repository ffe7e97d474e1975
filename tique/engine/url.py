"""Connection URLs: which engine to open and where.

monetdbe:///abs/path/to/dbdir         embedded engine on a database directory (created if missing)
monetdbe::memory:                     embedded engine, in memory, gone when the process ends
monetdb://user:password@host:port/db  a MonetDB server over MAPI (``tique serve`` or mserver5)
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote, urlsplit

from tique.errors import InterfaceError

MEMORY = ":memory:"
DEFAULT_PORT = 50000


@dataclass(frozen=True)
class EngineURL:
    kind: Literal["embedded", "server"]
    path: str | None = None  # embedded: absolute directory, or None for in-memory
    host: str = "localhost"
    port: int = DEFAULT_PORT
    database: str = ""
    username: str = "monetdb"
    password: str = "monetdb"

    @property
    def in_memory(self) -> bool:
        return self.kind == "embedded" and self.path is None

    def redacted(self) -> str:
        """The URL with the password hidden, for messages and logs."""
        if self.kind == "server":
            return f"monetdb://{self.username}:***@{self.host}:{self.port}/{self.database}"
        return "monetdbe::memory:" if self.path is None else f"monetdbe://{self.path}"


def parse_url(url: str) -> EngineURL:
    """Parse a tique connection URL; an unknown scheme or a malformed URL gets a message saying what is accepted."""
    if not isinstance(url, str) or not url:
        raise InterfaceError(f"expected a connection URL string, got {url!r}. {_ACCEPTED}")
    if url.startswith("mapi:monetdb://"):  # pymonetdb's spelling of the same URL
        url = url[len("mapi:") :]
    if url in ("monetdbe::memory:", "monetdbe://:memory:", "monetdbe:///:memory:"):
        return EngineURL(kind="embedded")
    parts = urlsplit(url)
    if parts.scheme == "monetdbe":
        if "#" in url or "?" in url:  # urlsplit would drop them: /db#x must never open /db
            raise InterfaceError(
                f"embedded URL {url!r} holds '#' or '?': write such characters of a directory name as %23 and %3F"
            )
        path = unquote(parts.netloc + parts.path)
        if not path.startswith("/"):
            raise InterfaceError(f"embedded URL {url!r} needs an absolute path: monetdbe:///abs/path. {_ACCEPTED}")
        return EngineURL(kind="embedded", path=os.path.normpath(path))
    if parts.scheme in ("monetdb", "mapi"):
        if "#" in url or "?" in url:  # urlsplit would drop '#x' and '?x': db1#x must never reach database db1
            raise InterfaceError(
                f"server URL {_redact(url)} holds '#' or '?', which a database name cannot: "
                "write monetdb://user:password@host:port/database (percent-encode such characters in a password)"
            )
        database = parts.path.lstrip("/")
        if not database or "/" in database:
            raise InterfaceError(f"server URL {_redact(url)} must name one database: monetdb://host:port/db")
        check_database_name(database)
        try:
            port = parts.port or DEFAULT_PORT
        except ValueError as exc:
            raise InterfaceError(f"server URL {_redact(url)} has a bad port: {exc}") from None
        return EngineURL(
            kind="server",
            host=parts.hostname or "localhost",
            port=port,
            database=database,
            username=unquote(parts.username) if parts.username else "monetdb",
            password=unquote(parts.password) if parts.password else "monetdb",
        )
    scheme = parts.scheme or "(none)"
    raise InterfaceError(f"unknown URL scheme {scheme!r} in {_redact(url)}. {_ACCEPTED}")


DATABASE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def check_database_name(name: str) -> None:
    """A MonetDB database name (as monetdbd and mserver5 accept them): letters, digits, '_', '-' and '.'."""
    if not DATABASE_NAME.fullmatch(name):
        raise InterfaceError(
            f"database name {name!r} is not a MonetDB database name: use letters, digits, '_', '-' and '.' only"
        )


_ACCEPTED = (
    "Accepted: monetdbe:///abs/path (embedded), monetdbe::memory: (embedded, in memory), "
    "monetdb://user:password@host:port/database (server)"
)


def _redact(url: str) -> str:
    """The URL with any password hidden, also one that holds '#', '?' or '/' (urlsplit would cut it short)."""
    return re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://[^:@/]*:).*@", r"\1***@", url)
