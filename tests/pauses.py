"""Pausing a committer at a named step of its COMMIT (tique.transaction.step_hooks), to force interleavings."""

from __future__ import annotations

import threading

import tique
from tique.transaction import Transaction


class Pause:
    """Hold one connection's running transaction at ``step`` of its COMMIT until released."""

    def __init__(self, step: str, conn: tique.Connection) -> None:
        self.step = step
        self.target = conn.transaction()
        self.reached = threading.Event()
        self.release = threading.Event()

    def __call__(self, step: str, txn: Transaction) -> None:
        if step == self.step and txn is self.target:
            self.reached.set()
            assert self.release.wait(30), "pause never released"
