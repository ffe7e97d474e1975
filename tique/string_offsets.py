"""Give the string columns of tique's Cache tables 2-byte offsets before the kernel writes them, to stay off a
MonetDB 11.41 defect that, after a kill, leaves a directory no process can open.

A string column's tail holds offsets into its heap, 1 byte wide while the heap is small, widened to 2 and then 4
bytes as it grows. When the kernel flushes a column while another transaction's INSERT into it is in flight, it
marks the column as not on disk, and its next flush then skips the column's backup step. A widening from 1 to 2
bytes meanwhile moves the old ``.tail1`` into ``bat/BACKUP``, where nothing removes it; the widening from 2 to 4
then finds that stale file, takes it for the saved state, and deletes the ``.tail2`` the durable catalog names.
A kill before the next flush leaves a catalog counting rows in a file that is gone (GDKinit fails, plain MonetDB
too, and the rows' offsets are lost). Found by the kill loop of tests/adversarial/test_attack_reopen.py and
traced by a helper's review through the kernel (gdk_storage.c BATsave, gdk_bbp.c BBPbackup, gdk_heap.c
GDKupgradevarheap).

Only a second widening of a column on disk is dangerous. So a column widened to 2 bytes before it is first
written is safe: 48 distinct one-character strings (heap entries of 8 bytes, past the 255 bytes 1-byte offsets
reach) inserted and rolled back. The width outlives the rollback but not a restart of an empty column, so this runs
when a table is created and at every open, before any transaction. A Cache table carries no constraints, so the
rows need values only in its string columns. Storage tables (written by the checkpointer and bulk loads, seldom
concurrently) and plain tables (an application's constraints) are left as they are.
"""

from __future__ import annotations

import string
import warnings
from collections.abc import Sequence

from tique.engine.base import RawConnection
from tique.errors import DatabaseError, connection_lost
from tique.names import quote
from tique.rewrite.values import ENGINE_STRING_TYPES

ROWS = 48  # one-character strings, 8 bytes each in the heap: past the 255 bytes of 1-byte offsets
_LETTERS = string.ascii_letters

# the string columns with 1-byte offsets (sys.storage's typewidth of a string column is its offsets')
NARROW = 'SELECT "schema", "table", "column" FROM sys.storage WHERE typewidth = 1 AND type IN ({})'.format(
    ", ".join(f"'{t}'" for t in sorted(ENGINE_STRING_TYPES))
)


def widen(conn: RawConnection, table: str, columns: Sequence[str]) -> None:
    """Widen the offsets of ``table``'s string ``columns`` (quoted names) to 2 bytes: rows inserted, rolled back."""
    if not columns:
        return
    rows = ", ".join("(" + ", ".join(f"'{_LETTERS[i]}'" for _ in columns) + ")" for i in range(ROWS))
    conn.execute("START TRANSACTION")
    try:
        conn.execute(f"INSERT INTO {table} ({', '.join(columns)}) VALUES {rows}")
    finally:
        conn.execute("ROLLBACK")


def widen_caches(conn: RawConnection, caches: Sequence[str]) -> None:
    """Widen every string column of the Cache tables ``caches`` (quoted "schema"."table") that has 1-byte offsets;
    a table the engine refuses it for is named in a warning and left as it is."""
    wanted = set(caches)
    narrow: dict[str, list[str]] = {}
    for schema, table, column in conn.execute(NARROW).rows:
        qualified = f"{quote(str(schema))}.{quote(str(table))}"
        if qualified in wanted:
            narrow.setdefault(qualified, []).append(quote(str(column)))
    for table, columns in narrow.items():
        try:
            widen(conn, table, columns)
        except DatabaseError as exc:  # a precaution: the open goes on without it (a Cache altered past tique)
            if connection_lost(exc):
                raise
            warnings.warn(
                f"tique could not give the string columns of {table} 2-byte offsets ({exc}); they stay exposed to "
                "a MonetDB 11.41 defect that can lose them after a kill (tique/string_offsets.py)",
                RuntimeWarning,
                stacklevel=2,
            )
