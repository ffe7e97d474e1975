"""Planning a deeply nested statement: on a thread of its own with a large stack.

sqlglot's parser and generator recurse about 19 Python frames per nesting level, so 50 nested parentheses or 50
nested CASEs exceed Python's default recursion limit (1000) while MonetDB itself reads them. A statement whose
planning hits the limit is planned again on a thread with a 256 MB stack, with the limit raised to 100,000
frames (about 1 KB of stack each, measured: some 5,000 nesting levels). Deeper statements get a clear error.

The recursion limit is the interpreter's, not the thread's: while a deep statement is planned, another thread
that recursed without end would overflow its own stack instead of raising RecursionError. Deep statements are
rare and their planning takes milliseconds, once (plans are cached), so the window is short.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

from tique.errors import ProgrammingError

T = TypeVar("T")

DEEP_STACK_BYTES = 256 * 1024 * 1024
DEEP_RECURSION_LIMIT = 100_000
_ONE_AT_A_TIME = threading.Lock()  # the limit and the next thread's stack size are process-wide


def planned(plan: Callable[[], T], what: str) -> T:
    """``plan()``, again on a deep stack when it recursed too deep on this one (see above)."""
    try:
        return plan()
    except RecursionError:
        pass
    try:
        return _on_deep_stack(plan)
    except RecursionError:
        raise ProgrammingError(
            f"{what} is nested too deeply for tique to rewrite (more than about 5,000 levels of parentheses, CASE "
            "or subqueries): split it into simpler statements",
            "54001",
        ) from None


def _on_deep_stack(fn: Callable[[], T]) -> T:
    out: list[T] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:  # handed to the caller's thread
            failed.append(exc)

    with _ONE_AT_A_TIME:
        limit, size = sys.getrecursionlimit(), threading.stack_size()  # (the call sets 0 and gives the old size)
        # both are process-wide: an interrupt at any point (as a setter returns, too) puts them back
        try:
            thread = threading.Thread(target=run, name="tique-deep-planning", daemon=True)
            sys.setrecursionlimit(max(limit, DEEP_RECURSION_LIMIT))
            threading.stack_size(DEEP_STACK_BYTES)  # read when the thread starts
            try:
                thread.start()
            finally:
                threading.stack_size(size)
            thread.join()
        finally:
            sys.setrecursionlimit(limit)
            threading.stack_size(size)
    if failed:
        raise failed[0]
    return out[0]
