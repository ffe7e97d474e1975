"""The interface every engine adapter offers: raw connections that run SQL text and return whole results."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Column:
    """One result column: its name and MonetDB type name (``int``, ``varchar``, ``decimal``...)."""

    name: str
    type_code: str
    precision: int | None = None
    scale: int | None = None


@dataclass
class Result:
    """A statement's outcome: rows (possibly none) and the number of rows it changed or returned."""

    columns: list[Column] = field(default_factory=list)
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    rowcount: int = -1
    prepared_id: int | None = None  # the id a PREPARE got, when the adapter can tell
    ddl_txids: tuple[int, ...] = ()  # the commit records of a versioned DDL (tique/ddl.py) this statement ran

    def scalar(self) -> Any:
        """The first value of the first row; a statement expected to return one value."""
        return self.rows[0][0]


class RawConnection(Protocol):
    """A connection to MonetDB in autocommit mode: every statement is its own MonetDB transaction."""

    def execute(self, sql: str) -> Result:
        """Run one SQL text (it may hold several statements; the last one's result is returned)."""
        ...

    def close(self) -> None: ...

    @property
    def closed(self) -> bool: ...


class Engine(Protocol):
    """A MonetDB database reached one way: embedded in this process or over MAPI."""

    kind: str

    def connect(self) -> RawConnection: ...

    def close(self) -> None: ...

    def describe(self) -> str:
        """Where this engine is, for messages (never shows a password)."""
        ...
