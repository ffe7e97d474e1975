"""The vectorised TPC-C generator: per-table row counts as TPC-C 4.3 prescribes, unique primary keys, values in
their ranges, the CH-benCHmark departures the queries rely on, and the same files for the same seed."""

from __future__ import annotations

import csv
import re
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.tpcc.data import DISTRICTS, SUPPLIERS, SYLLABLES, TABLE_ORDER, Scale, generate
from benchmarks.tpcc.schema import ALL_TABLES

SIZE = Scale(2, 0.01)  # 2 warehouses, 1,000 items, 30 customers and orders per district, 9 new orders

Rows = dict[str, list[list[str]]]


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> Rows:
    directory = generate(tmp_path_factory.mktemp("tpcc") / "data", SIZE)
    out: Rows = {}
    for name in TABLE_ORDER:
        with open(directory / f"{name}.csv", newline="") as f:
            out[name] = list(csv.reader(f))
    return out


def test_row_counts_per_table_follow_the_spec(rows: Rows) -> None:
    w, c, items = SIZE.warehouses, SIZE.customers, SIZE.items
    expected = {"warehouse": w, "district": w * DISTRICTS, "customer": w * DISTRICTS * c,
                "history": w * DISTRICTS * c, "oorder": w * DISTRICTS * c, "item": items, "stock": w * items,
                "new_order": w * DISTRICTS * SIZE.new_orders, "region": 5, "nation": 62,
                "supplier": SUPPLIERS}  # fmt: skip
    assert {name: len(rows[name]) for name in expected} == expected
    assert len(rows["order_line"]) == sum(int(o[6]) for o in rows["oorder"])


def test_every_row_has_its_columns_and_primary_keys_are_unique(rows: Rows) -> None:
    for name, ddl in ALL_TABLES.items():
        columns = len(re.findall(r"\b[a-z_0-9]+ (?:INT|VARCHAR|CHAR|DECIMAL|TIMESTAMP)\b", ddl))
        assert {len(r) for r in rows[name]} == {columns}, name
    keys = {"warehouse": [0], "district": [1, 0], "customer": [2, 1, 0], "oorder": [2, 1, 0],
            "new_order": [2, 1, 0], "item": [0], "stock": [1, 0], "order_line": [2, 1, 0, 3], "region": [0],
            "nation": [0], "supplier": [0]}  # fmt: skip
    for name, cols in keys.items():
        seen = Counter(tuple(r[i] for i in cols) for r in rows[name])
        assert max(seen.values()) == 1, (name, seen.most_common(1))


def test_values_lie_in_their_ranges(rows: Rows) -> None:
    names = {a + b + c for a in SYLLABLES for b in SYLLABLES for c in SYLLABLES}
    assert all(1.0 <= float(i[3]) <= 100.0 and 26 <= len(i[4]) <= 50 for i in rows["item"])
    assert all(10 <= int(s[2]) <= 100 and all(len(x) == 24 for x in s[3:13]) for s in rows["stock"])
    for c in rows["customer"]:
        assert c[5] in names and c[13] in ("GC", "BC") and 0 <= float(c[15]) <= 0.5 and 300 <= len(c[20]) <= 500
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", c[12]) and re.fullmatch(r"\d{4}11111", c[10])
        assert c[9][0].isupper() and (float(c[16]) > 0 if int(c[0]) % 7 == 0 else c[16] == "-10.00")
    assert [r[5] for r in rows["customer"][:SIZE.customers]] == [
        SYLLABLES[i // 100] + SYLLABLES[i // 10 % 10] + SYLLABLES[i % 10] for i in range(SIZE.customers)]  # fmt: skip
    assert all(0 <= float(d[8]) <= 0.2 and int(d[10]) == SIZE.customers + 1 for d in rows["district"])
    assert all(-999.99 <= float(s[5]) <= 9999.99 for s in rows["supplier"])


def test_orders_new_orders_and_lines_agree(rows: Rows) -> None:
    first_new = SIZE.customers - SIZE.new_orders + 1
    new = {tuple(r) for r in rows["new_order"]}
    orders = {(o[0], o[1], o[2]): o for o in rows["oorder"]}
    for key, o in orders.items():
        undelivered = int(key[0]) >= first_new
        assert (key in new) == undelivered and (o[5] == "") == undelivered and 5 <= int(o[6]) <= 15
        assert 1 <= int(o[3]) <= SIZE.customers and (undelivered or 1 <= int(o[5]) <= 10)
    for line in rows["order_line"]:
        order = orders[(line[0], line[1], line[2])]
        assert 1 <= int(line[3]) <= int(order[6]) and 1 <= int(line[4]) <= SIZE.items
        assert (line[6] == "") == (order[5] == "") and (line[6] == "" or line[6] > order[4])
    # every 10th order goes to the customer of the order before it, so some customers have none
    per_district = Counter((o[1], o[2], o[3]) for o in rows["oorder"])
    assert max(per_district.values()) == 2


def test_ch_departures_hold(rows: Rows) -> None:
    data = {int(i[0]): i[4] for i in rows["item"]}
    assert all(data[i].startswith("co") for i in data if i % 10 == 2)
    assert all(data[i].startswith("PR") for i in data if i % 50 == 5)
    assert all(data[i].endswith("BB") for i in data if i % 50 == 0)
    original = sum("ORIGINAL" in s[16] for s in rows["stock"]) / len(rows["stock"])
    assert 0.05 < original < 0.15
    assert max(int(s[14]) for s in rows["stock"]) > 10  # heavy-tailed initial order counts: some best sellers
    assert any("bad" in s[6] for s in rows["supplier"])


def test_same_seed_same_files(tmp_path: Path) -> None:
    a, b = generate(tmp_path / "a", Scale(1, 0.01)), generate(tmp_path / "b", Scale(1, 0.01))
    for name in TABLE_ORDER:
        assert (a / f"{name}.csv").read_bytes() == (b / f"{name}.csv").read_bytes(), name
