"""The sequencer calls of a transaction of tique's owner, made by the process that loaded the C module (an
embedded kernel's) without a statement: the begin and the finish.

As statements they are EXECs of one row of C calls, each 0.2-0.7 ms of parsing, plan, result and Python around it
for a few microseconds of C under a mutex. The same functions run here in the order the statements run them, for
the same session (tique's owner, ``who`` 0); an error comes back as the engine's exception text, mapped to the
same driver error as the statement's.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

from tique.errors import from_monetdb
from tique.settings import INT_MAX

_MESSAGE_BYTES = 2048  # the kernel's exceptions are at most GDKMAXERRLEN (8 kB) but tique's are short
_I64 = ctypes.c_int64


def _int(value: int) -> int:
    """A time in ms as the module's INT argument (Settings bounds them; a sum of two may pass an INT)."""
    return max(min(int(value), INT_MAX), 0)


class LocalCalls:
    def __init__(self, module: ctypes.CDLL) -> None:
        self._begin = module.tique_begin_local
        self._begin.restype = ctypes.c_int
        self._begin.argtypes = [
            _I64,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.POINTER(_I64),
            ctypes.POINTER(_I64),
            ctypes.c_char_p,
            ctypes.c_size_t,
        ]
        self._finish = module.tique_finish_local
        self._finish.restype = ctypes.c_int
        self._finish.argtypes = [_I64, ctypes.c_int, _I64, ctypes.POINTER(_I64), ctypes.c_char_p, ctypes.c_size_t]
        # a mutex-guarded read of a counter: called with the GIL held (PyDLL), which another thread would
        # otherwise take at every statement's two reads, this one then waiting to take it back
        self.catalog_version = ctypes.PyDLL(module._name).tique_catalog_version_local
        self.catalog_version.restype = _I64  # the catalog version (the statement catalog_version's), a C read
        self.catalog_version.argtypes = []

    def begin(self, prev: int, lease_ms: int, tables: Sequence[int]) -> tuple[int, int, int, int, list[int]]:
        """begin_txn(prev, lease_ms) as tique's owner, then the new transaction's snapshot, the lowest stuck
        commit, the catalog version and each table's write mark (tique.last_write), read in that order."""
        marks = (_I64 * len(tables))(*tables)
        out = (_I64 * (4 + len(tables)))()
        message = ctypes.create_string_buffer(_MESSAGE_BYTES)
        if self._begin(prev, _int(lease_ms), len(tables), marks, out, message, _MESSAGE_BYTES) != 0:
            raise from_monetdb(message.value.decode(errors="replace"))
        return out[0], out[1], out[2], out[3], list(out[4:])

    def finish(self, cts: int, timeout_ms: int, txid: int) -> int:
        """advance(cts, timeout_ms) (waits up to the time-out for cts to become visible), then txid's snapshot pin
        ends; returns the snapshot after the advance."""
        sts = _I64(0)
        message = ctypes.create_string_buffer(_MESSAGE_BYTES)
        if self._finish(cts, _int(timeout_ms), txid, ctypes.byref(sts), message, _MESSAGE_BYTES) != 0:
            raise from_monetdb(message.value.decode(errors="replace"))
        return sts.value
