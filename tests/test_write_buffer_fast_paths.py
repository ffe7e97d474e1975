"""The write buffer's shortcuts for integer keys answer exactly as the general path they skip: a key typed
without ``coerce`` (every row a transaction reads is keyed), and a pending write found by one lookup instead of a
comparison with each pending key (a read decides so whether the transaction's writes must reach the Cache first).
Generated keys, values at and past each integer type's range, and literals of every shape a parameter takes."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tique.catalog import ColumnSpec, TableInfo
from tique.errors import DataError
from tique.rewrite.values import coerce, key_value
from tique.write_buffer import WriteBuffer, _may_equal, typed_key

TYPES = ("TINYINT", "SMALLINT", "INT", "BIGINT", "HUGEINT", "DECIMAL(10,2)", "DOUBLE", "VARCHAR(8)")
BOUNDS = {"TINYINT": 2**7, "SMALLINT": 2**15, "INT": 2**31, "BIGINT": 2**63, "HUGEINT": 2**127}


def table(*types: str) -> TableInfo:
    columns = (*(ColumnSpec(f"k{i}", t) for i, t in enumerate(types)), ColumnSpec("v", "INT"))
    return TableInfo(1, "sys", "t", "tx", columns, tuple(f"k{i}" for i in range(len(types))))


def general(info: TableInfo, values: list[Any]) -> tuple[Any, ...] | str:
    try:
        return tuple(key_value(coerce(v, t, k)) for v, k, t in zip(values, info.key, info.key_types))
    except DataError as exc:
        return f"DataError {exc.sqlstate}"


def fast(info: TableInfo, values: list[Any]) -> tuple[Any, ...] | str:
    try:
        return typed_key(info, values)
    except DataError as exc:
        return f"DataError {exc.sqlstate}"


def near_bounds() -> st.SearchStrategy[int]:
    edges = [s * b + d for b in BOUNDS.values() for s in (1, -1) for d in (-1, 0, 1)]
    return st.one_of(st.sampled_from(edges), st.integers(-(2**130), 2**130), st.integers(-300, 300))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(TYPES), min_size=1, max_size=3), st.data())
def test_an_integer_key_is_typed_as_coerce_types_it(types: list[str], data: st.DataObject) -> None:
    info = table(*types)
    values = [
        data.draw(st.one_of(near_bounds(), st.booleans(), st.floats(allow_nan=False), st.text(max_size=3)))
        for _ in types
    ]
    assert fast(info, values) == general(info, values)
    # and of the same Python types: an int stays an int, a bool is brought to its column's type as before
    if isinstance(general(info, values), tuple):
        assert [type(v) for v in fast(info, values)] == [type(v) for v in general(info, values)]


def literals(n: int) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from([str(n), f"'{n}'", f"+{n}", f"00{n}" if n >= 0 else str(n), f"{n}.0", f"{n}e0", f" {n}"]),
        st.sampled_from(["NULL", "'x'", "1.5", "'1_0'"]),
    )


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from([("INT",), ("INT", "BIGINT"), ("SMALLINT", "INT", "INT"), ("INT", "VARCHAR(8)")]),
    st.lists(st.lists(st.integers(-20, 20), min_size=3, max_size=3), max_size=12),
    st.data(),
)
def test_a_pending_write_is_found_as_the_comparison_with_each_finds_it(
    types: tuple[str, ...], keys: list[list[int]], data: st.DataObject
) -> None:
    info = table(*types)
    buffer = WriteBuffer(1)
    entry = buffer.entry(info)
    for k in keys:
        values = [str(v) if t.startswith("VARCHAR") else v for v, t in zip(k, types)]
        entry.pending[typed_key(info, values)] = (None, 0)
    target = data.draw(st.sampled_from(keys)) if keys and data.draw(st.booleans()) else [0, 0, 0]
    slots, params = [], {}
    for i, t in enumerate(types):
        if data.draw(st.integers(0, 5)) == 0:
            slots.append("")  # a key column the read does not pin
            continue
        slots.append(f"p{i}")
        params[f"p{i}"] = (
            data.draw(st.sampled_from([f"'{target[i]}'", "'zz'"]))
            if t.startswith("VARCHAR")
            else data.draw(literals(target[i]))
        )
    wanted = tuple(params[s] if s else None for s in slots)
    scanned = any(all(w is None or _may_equal(v, w) for v, w in zip(key, wanted)) for key in entry.pending)
    assert buffer._pending_match(info.qualified, tuple(slots), params) == scanned
