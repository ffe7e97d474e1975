"""A writer thread for DDL races: one connection inserting new keys and committing until told to stop."""

from __future__ import annotations

import threading
from collections.abc import Callable

import tique
from tique.errors import SerializationFailure


def insert_until(
    stop: threading.Event,
    url: str,
    table: str,
    first: int,
    committed: set[int],
    opened: list[tique.Connection],
    unexpected: list[str],
    refused: Callable[[tique.Error], bool] = lambda _exc: False,
) -> None:
    """Insert keys ``first + 1``, ``first + 2``... into ``table`` (its column k), one a transaction, until ``stop``:
    each committed key goes into ``committed``. A SerializationFailure is rolled back and the next key goes on; any
    other tique error too, noted in ``unexpected`` unless ``refused`` says it is a clear refusal the race allows.
    The connection goes into ``opened`` for the test to close."""
    conn = tique.connect(url)
    opened.append(conn)
    cur, n = conn.cursor(), 0
    while not stop.is_set():
        n += 1
        key = first + n
        try:
            cur.execute(f"INSERT INTO {table} (k) VALUES (%s)", (key,))
            conn.commit()
            committed.add(key)
        except SerializationFailure:
            conn.rollback()
        except tique.Error as exc:
            conn.rollback()
            if not refused(exc):
                unexpected.append(f"{type(exc).__name__}: {exc}")
