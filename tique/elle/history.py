"""List-append histories in the JSON form Elle's standalone checker (elle-cli) reads.

A history is a JSON array of operations; each is an invocation or its completion:

    {"index": 0, "type": "invoke", "process": 3, "time": 12345, "f": "txn",
     "value": [["append", 1, 7], ["r", 2, null]]}
    {"index": 1, "type": "ok", "process": 3, "time": 12399, "f": "txn",
     "value": [["append", 1, 7], ["r", 2, [4, 9]]]}

``type`` is invoke, ok (committed), fail (certainly not committed) or info (unknown outcome). ``time`` is
wall-clock nanoseconds (optional; real-time checks need it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TYPES = ("invoke", "ok", "fail", "info")
MOP_FUNCTIONS = ("append", "r")


class HistoryError(ValueError):
    """A history that cannot be checked: malformed, truncated, or with something the checker does not know."""


@dataclass(frozen=True)
class Mop:
    f: str  # "append" or "r"
    key: Any
    value: Any  # appended element, or the list read (None before the read completed)


@dataclass(frozen=True)
class Op:
    index: int
    type: str
    process: Any
    value: tuple[Mop, ...]
    time: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": self.index,
            "type": self.type,
            "process": self.process,
            "f": "txn",
            "value": [[m.f, m.key, m.value] for m in self.value],
        }
        if self.time is not None:
            out["time"] = self.time
        return out


@dataclass(frozen=True)
class Txn:
    """An invocation paired with its completion."""

    id: int  # index of the completion (or of the invocation when it never completed)
    process: Any
    type: str  # ok | fail | info
    mops: tuple[Mop, ...]
    invoke_time: int | None
    complete_time: int | None
    invoke_index: int

    def describe(self) -> str:
        parts = []
        for m in self.mops:
            seen = list(m.value) if isinstance(m.value, tuple) else m.value
            parts.append(f"append {m.value} to {m.key}" if m.f == "append" else f"read {m.key} = {seen}")
        return f"T{self.id} (process {self.process}, {self.type}: {'; '.join(parts)})"


def _parse_op(raw: Any, position: int) -> Op:
    where = f"operation {position}"
    if not isinstance(raw, dict):
        raise HistoryError(f"{where}: expected an object, got {type(raw).__name__}")
    if "index" in raw:
        where = f"operation {position} (index {raw['index']})"
    kind = raw.get("type")
    if kind not in TYPES:
        raise HistoryError(f"{where}: unknown operation type {kind!r}; expected one of {', '.join(TYPES)}")
    if raw.get("f", "txn") != "txn":
        raise HistoryError(f"{where}: unknown function {raw.get('f')!r}; only list-append transactions ('txn')")
    if "process" not in raw:
        raise HistoryError(f"{where}: no process")
    value = raw.get("value")
    if not isinstance(value, list):
        raise HistoryError(f"{where}: value must be a list of micro-operations, got {value!r}")
    mops = []
    for i, mop in enumerate(value):
        if not isinstance(mop, list) or len(mop) != 3:
            raise HistoryError(f"{where}: micro-operation {i} must be [f, key, value], got {mop!r}")
        f, key, v = mop
        if f not in MOP_FUNCTIONS:
            raise HistoryError(f"{where}: unknown micro-operation {f!r}; list-append knows 'append' and 'r'")
        if f == "r" and v is not None and not isinstance(v, list):
            raise HistoryError(f"{where}: a read must return a list or null, got {v!r}")
        mops.append(Mop(f, key, tuple(v) if isinstance(v, list) else v))
    index = raw.get("index", position)
    if not isinstance(index, int):
        raise HistoryError(f"{where}: index must be an integer")
    time = raw.get("time")
    return Op(index, kind, raw["process"], tuple(mops), time if isinstance(time, int) else None)


def load(path: str | Path) -> list[Op]:
    """Read a history file; malformed or truncated input gets an error naming the line or operation."""
    text = Path(path).read_text()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HistoryError(f"{path}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    return parse(data)


def parse(data: Any) -> list[Op]:
    if not isinstance(data, list):
        raise HistoryError("a history must be a JSON array of operations")
    return [_parse_op(raw, i) for i, raw in enumerate(data)]


def dump(ops: list[Op], path: str | Path) -> None:
    Path(path).write_text("[" + ",\n ".join(json.dumps(op.to_json()) for op in ops) + "]\n")


def pair(ops: list[Op]) -> list[Txn]:
    """Pair each invocation with the next completion of the same process (a process runs one at a time)."""
    pending: dict[Any, Op] = {}
    txns: list[Txn] = []
    for op in ops:
        if op.type == "invoke":
            if op.process in pending:
                raise HistoryError(
                    f"operation index {op.index}: process {op.process} invoked again before its previous "
                    f"operation (index {pending[op.process].index}) completed"
                )
            pending[op.process] = op
            continue
        inv = pending.pop(op.process, None)
        if inv is None:
            raise HistoryError(f"operation index {op.index}: a completion for process {op.process} with no invocation")
        if len(inv.value) != len(op.value) or any(a.f != b.f or a.key != b.key for a, b in zip(inv.value, op.value)):
            raise HistoryError(
                f"operation index {op.index}: completion does not match its invocation (index {inv.index})"
            )
        txns.append(Txn(op.index, op.process, op.type, op.value, inv.time, op.time, inv.index))
    for inv in pending.values():  # never completed: unknown outcome
        txns.append(Txn(inv.index, inv.process, "info", inv.value, inv.time, None, inv.index))
    return txns
