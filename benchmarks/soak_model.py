"""The soak's schema, its owned keys and random values, the JSON encoding of its logs, and the model.

The model is what the committed state must be, given which logged transactions were applied: each client
owns a disjoint key range in every keyed table (so a key's value is the effect of its owner's applied
transactions, in the owner's order), shared counters and accounts are only ever changed by increments (so
their values are sums of applied increments, in any order), and the table without a primary key holds
(owner, tag) rows only their owner adds and deletes. Every write transaction also appends its id to
``journal`` (no primary key) in the same transaction: that row tells the checker which transactions were
applied, and every other effect must then agree with it exactly - all of a transaction, or none of it.
"""

from __future__ import annotations

import base64
import datetime
import random
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

Row = tuple[Any, ...]
TxId = tuple[int, int, int]  # (client, incarnation, sequence number)

TABLES: dict[str, list[tuple[str, str]]] = {
    "vals": [
        ("k", "INT PRIMARY KEY"),
        ("i", "INT"),
        ("b", "BIGINT"),
        ("d", "DECIMAL(38,6)"),
        ("f", "DOUBLE"),
        ("s", "VARCHAR(200)"),
        ("bl", "BLOB"),
        ("dt", "DATE"),
        ("ts", "TIMESTAMP(6)"),
        ("tm", "TIME(6)"),
        ("bo", "BOOLEAN"),
    ],
    "hv": [("k", "INT PRIMARY KEY"), ("h", "HUGEINT")],
    "kdate": [("k", "DATE PRIMARY KEY"), ("v", "INT"), ("w", "VARCHAR(50)")],
    "kts": [("k", "TIMESTAMP(6) PRIMARY KEY"), ("v", "INT"), ("w", "VARCHAR(50)")],
    "kdbl": [("k", "DOUBLE PRIMARY KEY"), ("v", "INT"), ("w", "VARCHAR(50)")],
    "kstr": [("k", "VARCHAR(80) PRIMARY KEY"), ("v", "INT"), ("w", "VARCHAR(50)")],
    "ctr": [("id", "INT PRIMARY KEY"), ("n", "BIGINT")],
    "acct": [("id", "INT PRIMARY KEY"), ("bal", "BIGINT")],
    "bag": [("owner", "INT"), ("tag", "INT"), ("payload", "VARCHAR(50)")],
    "journal": [("client", "INT"), ("inc", "INT"), ("seq", "INT")],
}
KEYED = ["vals", "hv", "kdate", "kts", "kdbl", "kstr"]  # owned key ranges, one per client
COUNTERS = 4
ACCOUNTS = 10
INITIAL_BALANCE = 1000
TOTAL_BALANCE = ACCOUNTS * INITIAL_BALANCE
KEYS_PER_CLIENT = 16

_CHARS = "aZ09 'x\"\\%;-ü€☃中文𝄞😀κλ\tß"
_EPOCH_DATE = datetime.date(2000, 1, 1)
_EPOCH_TS = datetime.datetime(2021, 6, 1, 12, 0, 0)


def create_statement(table: str) -> str:
    return f"CREATE TABLE {table} ({', '.join(f'{name} {sql}' for name, sql in TABLES[table])})"


def columns(table: str) -> list[str]:
    return [name for name, _ in TABLES[table]]


def owned_key(table: str, client: int, j: int) -> Any:
    """The j-th key client owns in a keyed table; ranges of different clients never overlap."""
    if table in ("vals", "hv"):
        return client * 100_000 + j
    if table == "kdate":
        return _EPOCH_DATE + datetime.timedelta(days=client * 1000 + j)
    if table == "kts":  # keys differ only in microseconds: a millisecond conversion would merge them
        return _EPOCH_TS + datetime.timedelta(seconds=client * 1000, microseconds=j * 37 + 1)
    if table == "kdbl":  # client 0 owns 0.0, also written as -0.0; tenths are not exact binary fractions
        return client * 1000 + j / 10
    if table == "kstr":
        return f"клиент-{client}-{j:03d}-☃'"
    raise ValueError(table)


def key_range(table: str, client: int) -> tuple[Any, Any]:
    return owned_key(table, client, 0), owned_key(table, client, KEYS_PER_CLIENT - 1)


def random_text(rng: random.Random, longest: int) -> str:
    return "".join(rng.choice(_CHARS) for _ in range(rng.randint(0, longest)))


def _maybe_null(rng: random.Random, value: Any) -> Any:
    return None if rng.random() < 0.05 else value


def random_value(rng: random.Random, sql_type: str) -> Any:
    """A value of the column type, edge values included (bounds, 6-digit fractions, wide unicode)."""
    base = sql_type.split()[0]
    if base == "INT":
        return _maybe_null(rng, rng.choice([rng.randint(-(2**31) + 1, 2**31 - 1), 2**31 - 1, -(2**31) + 1, 0]))
    if base == "BIGINT":
        return _maybe_null(rng, rng.randint(-(2**62), 2**62))
    if base == "HUGEINT":
        return _maybe_null(rng, rng.choice([rng.randint(-(2**126), 2**126), 2**100 + 7, -(2**64) - 1, 1]))
    if base == "DECIMAL(38,6)":
        digits = rng.choice([3, 12, 20, 31, 32])
        units = rng.randint(-(10 ** (digits + 6)) + 1, 10 ** (digits + 6) - 1)
        return _maybe_null(rng, Decimal(units).scaleb(-6))
    if base == "DOUBLE":
        return _maybe_null(rng, rng.choice([rng.uniform(-1e9, 1e9), 1.5e308, 5e-324, 0.1, -2.5e-300]))
    if base.startswith("VARCHAR"):
        return _maybe_null(rng, random_text(rng, 40))
    if base == "BLOB":
        return _maybe_null(rng, bytes(rng.randint(1, 255) for _ in range(rng.randint(0, 24))))
    if base == "DATE":
        return _maybe_null(rng, datetime.date(rng.randint(1, 9999), rng.randint(1, 12), rng.randint(1, 28)))
    if base == "TIMESTAMP(6)":
        day = datetime.datetime(rng.randint(1900, 2100), rng.randint(1, 12), rng.randint(1, 28))
        return _maybe_null(rng, day + datetime.timedelta(microseconds=rng.randint(0, 86_400 * 10**6 - 1)))
    if base == "TIME(6)":
        micro = rng.randint(0, 86_400 * 10**6 - 1)
        seconds, us = divmod(micro, 10**6)
        return _maybe_null(rng, datetime.time(seconds // 3600, seconds // 60 % 60, seconds % 60, us))
    if base == "BOOLEAN":
        return _maybe_null(rng, rng.random() < 0.5)
    raise ValueError(sql_type)


def random_row(rng: random.Random, table: str, key: Any) -> Row:
    return (key, *(random_value(rng, sql) for _, sql in TABLES[table][1:]))


# JSON cannot carry Decimal, dates, bytes or huge ints exactly: tag them.
def encode(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, (str, float)):
        return value
    if isinstance(value, int):
        return value if abs(value) < 2**53 else {"$i": str(value)}
    if isinstance(value, Decimal):
        return {"$dec": str(value)}
    if isinstance(value, datetime.datetime):
        return {"$ts": value.isoformat()}
    if isinstance(value, datetime.date):
        return {"$date": value.isoformat()}
    if isinstance(value, datetime.time):
        return {"$time": value.isoformat()}
    if isinstance(value, bytes):
        return {"$b": base64.b64encode(value).decode()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    raise TypeError(f"cannot log a {type(value).__name__}")


_DECODERS = {
    "$i": int,
    "$dec": Decimal,
    "$ts": datetime.datetime.fromisoformat,
    "$date": datetime.date.fromisoformat,
    "$time": datetime.time.fromisoformat,
    "$b": base64.b64decode,
}


def decode(value: Any) -> Any:
    if isinstance(value, dict):
        ((tag, text),) = value.items()
        return _DECODERS[tag](text)
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def initial_state() -> dict[str, dict[Any, Row]]:
    """Every table's rows after setup; 'bag' maps (owner, tag) -> list of payloads."""
    state: dict[str, dict[Any, Any]] = {table: {} for table in TABLES if table != "journal"}
    state["ctr"] = {i: (i, 0) for i in range(COUNTERS)}
    state["acct"] = {i: (i, INITIAL_BALANCE) for i in range(ACCOUNTS)}
    return state


def apply(state: dict[str, dict[Any, Any]], op: list[Any]) -> None:
    """One logged operation of an applied transaction, as SQL would apply it (NULL + 1 stays NULL)."""
    kind, table = op[0], op[1]
    rows = state[table]
    if kind == "put":
        rows[op[2]] = tuple(op[3])
    elif kind == "insert_many":
        for row in op[2]:
            rows[row[0]] = tuple(row)
    elif kind == "del":
        rows.pop(op[2], None)
    elif kind in ("set", "incr"):
        _change(rows, [op[2]], op[3], op[4], kind == "incr")
    elif kind == "incr_range":
        _change(rows, [k for k in rows if op[2] <= k <= op[3]], op[4], op[5], True)
    elif kind == "del_range":
        for key in [k for k in rows if op[2] <= k <= op[3]]:
            del rows[key]
    elif kind == "bag_add":
        rows.setdefault((op[2], op[3]), []).append(op[4])
    elif kind == "bag_del":
        rows.pop((op[2], op[3]), None)
    else:
        raise ValueError(f"unknown logged operation {kind!r}")


def _change(rows: dict[Any, Row], keys: Iterable[Any], column: int, value: Any, add: bool) -> None:
    for key in keys:
        if key in rows:
            row = list(rows[key])
            row[column] = (None if row[column] is None else row[column] + value) if add else value
            rows[key] = tuple(row)


def same(a: Any, b: Any) -> bool:
    """Exact equality: same type (bool is not int, datetime is not date), same value; Decimals by value, and
    -0.0 equals 0.0 (SQL compares them equal; whether the engine keeps the sign is not what this checks)."""
    if a is None or b is None:
        return a is b
    return type(a) is type(b) and bool(a == b)


def same_row(a: Row, b: Row) -> bool:
    return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
