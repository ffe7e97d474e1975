"""The batched TPC-C formulation (benchmarks/tpcc/txns.py) writes what the spec's NewOrder and Delivery write,
on tiny data through tique over MAPI (a ``tique serve`` of its own): every order line priced from its item,
every stock row moved by the spec's rule once per line, the oldest new order of each district delivered to its
customer, and the TPC-C consistency conditions after both formulations ran."""

from __future__ import annotations

import random
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from benchmarks.tpcc.data import DISTRICTS, Scale, generate
from benchmarks.tpcc.run import consistency
from benchmarks.tpcc.systems import System, make
from benchmarks.tpcc.txns import FORMULATIONS, Context, UserAbort, delivery_batched, new_order_batched
from tests.conftest import sized

SIZE = Scale(1, 0.01)


@pytest.fixture(scope="module")
def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    csv_dir = generate(tmp_path_factory.mktemp("tpcc") / "csv", SIZE)
    system = make("tique-mapi")  # prepared statements on: the balances they update must come out exact
    system.start()
    try:
        system.load(Path(csv_dir))
        yield system
    finally:
        system.stop()


def _rows(conn: Any, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    cur = conn.cursor()
    cur.execute(sql, params)
    rows = [tuple(r) for r in cur.fetchall()]
    conn.commit()
    return rows


def _stock(conn: Any) -> dict[int, tuple[int, int]]:
    return {int(i): (int(q), int(n)) for i, q, n in _rows(conn, "SELECT s_i_id, s_quantity, s_order_cnt FROM stock")}


def _next_ids(conn: Any) -> dict[int, int]:
    return {int(d): int(o) for d, o in _rows(conn, "SELECT d_id, d_next_o_id FROM district WHERE d_w_id = 1")}


def test_batched_new_order_prices_lines_and_moves_stock(system: System) -> None:
    conn = system.connect()
    try:
        checked = 0
        for seed in range(12):
            stock, next_ids = _stock(conn), _next_ids(conn)
            try:
                new_order_batched(conn, Context(SIZE, 1, random.Random(seed)))
            except UserAbort:
                assert _next_ids(conn) == next_ids, "a rolled-back NewOrder left its district counter moved"
                continue
            moved = [d for d, o in _next_ids(conn).items() if o != next_ids[d]]
            assert len(moved) == 1, f"one district's counter should move, moved: {moved}"
            d, o_id = moved[0], next_ids[moved[0]]
            lines = _rows(conn, "SELECT ol_number, ol_i_id, ol_quantity, ol_amount, i_price FROM order_line, item "
                          "WHERE ol_i_id = i_id AND ol_w_id = 1 AND ol_d_id = %s AND ol_o_id = %s "
                          "ORDER BY ol_number", (d, o_id))  # fmt: skip
            (count,) = _rows(conn, "SELECT o_ol_cnt FROM oorder WHERE o_w_id = 1 AND o_d_id = %s AND o_id = %s",
                             (d, o_id))[0]  # fmt: skip
            assert len(lines) == int(count) >= 5
            expected = dict(stock)
            for _, i_id, qty, amount, price in lines:
                assert Decimal(amount) == (Decimal(qty) * Decimal(price)).quantize(Decimal("0.01"))
                q, n = expected[int(i_id)]
                q = q - int(qty) if q - int(qty) >= 10 else q - int(qty) + 91
                expected[int(i_id)] = (q, n + 1)
            assert _stock(conn) == expected, "stock rows differ from the spec's rule applied once per line"
            checked += 1
        assert checked >= 8
    finally:
        conn.close()


def test_batched_delivery_delivers_the_oldest_order_of_each_district(system: System) -> None:
    conn = system.connect()
    try:
        oldest = {int(d): int(o) for d, o in _rows(conn, "SELECT no_d_id, MIN(no_o_id) FROM new_order "
                                                   "WHERE no_w_id = 1 GROUP BY no_d_id")}  # fmt: skip
        assert len(oldest) == DISTRICTS
        owed: dict[tuple[int, int], Decimal] = {}
        for d, o_id in oldest.items():
            ((c, total),) = _rows(conn, "SELECT o_c_id, SUM(ol_amount) FROM oorder, order_line WHERE o_w_id = 1 "
                                  "AND o_d_id = %s AND o_id = %s AND ol_w_id = o_w_id AND ol_d_id = o_d_id "
                                  "AND ol_o_id = o_id GROUP BY o_c_id", (d, o_id))  # fmt: skip
            owed[(d, int(c))] = owed.get((d, int(c)), Decimal(0)) + Decimal(total)
        balance = {(int(d), int(c)): Decimal(b) for d, c, b in _rows(conn, "SELECT c_d_id, c_id, c_balance "
                                                                     "FROM customer WHERE c_w_id = 1")}  # fmt: skip
        delivery_batched(conn, Context(SIZE, 1, random.Random(3)))
        after = {int(d): int(o) for d, o in _rows(conn, "SELECT no_d_id, MIN(no_o_id) FROM new_order "
                                                  "WHERE no_w_id = 1 GROUP BY no_d_id")}  # fmt: skip
        assert all(after[d] == o + 1 for d, o in oldest.items()), f"oldest new orders {oldest} -> {after}"
        for d, o_id in oldest.items():
            ((carrier,),) = _rows(conn, "SELECT o_carrier_id FROM oorder WHERE o_w_id = 1 AND o_d_id = %s "
                                  "AND o_id = %s", (d, o_id))  # fmt: skip
            assert carrier is not None
        now = {(int(d), int(c)): Decimal(b) for d, c, b in _rows(conn, "SELECT c_d_id, c_id, c_balance "
                                                                 "FROM customer WHERE c_w_id = 1")}  # fmt: skip
        assert {k: now[k] - balance[k] for k in owed} == owed
    finally:
        conn.close()


def test_both_formulations_keep_tpcc_consistent(system: System) -> None:
    conn = system.connect()
    try:
        for seed in range(sized(8, 20)):
            rng = random.Random(seed)
            for form in ("batched", "standard"):
                for name in ("NewOrder", "Payment", "Delivery", "OrderStatus", "StockLevel"):
                    try:
                        FORMULATIONS[form][name](conn, Context(SIZE, 1, rng))
                    except UserAbort:
                        pass
    finally:
        conn.close()
    result = consistency(system)
    assert result["all_ok"], result
