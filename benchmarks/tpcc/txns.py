"""The five TPC-C transactions (spec 2.4-2.8) over any DB-API connection with ``%s`` parameters.

Each function runs one transaction's statements and commits; it raises what the system raises (the runner
decides what is a conflict to retry). ``UserAbort`` is NewOrder's intended 1% rollback (an unused item id).

Two formulations, the same for every system (``FORMULATIONS``): "standard" reads one row per statement, as the
spec's pseudo-code does; "batched" reads NewOrder's items in one SELECT and their stock rows in another, and
Delivery's ten districts' oldest new orders, their customers and their order-line sums in one SELECT each (the
writes stay one statement per row). Same rows read and written, same results; fewer round trips.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from benchmarks.tpcc.data import DISTRICTS, Scale, last_name, nurand

C_LAST_RUN, C_ID, OL_I_ID = 208, 259, 7911  # NURand C constants of the run (spec 2.1.6)


class UserAbort(Exception):
    """NewOrder's deliberate rollback: one item id does not exist (spec 2.4.2.3)."""


@dataclass
class Context:
    size: Scale
    home_w: int
    rng: random.Random

    def customer_id(self) -> int:
        return nurand(self.rng, 1023, 1, self.size.customers, C_ID)

    def last_name(self) -> str:
        return last_name(nurand(self.rng, 255, 0, min(999, self.size.customers - 1), C_LAST_RUN))

    def item_id(self) -> int:
        return nurand(self.rng, 8191, 1, self.size.items, OL_I_ID)

    def other_warehouse(self) -> int:
        if self.size.warehouses == 1:
            return self.home_w
        return self.rng.choice([w for w in range(1, self.size.warehouses + 1) if w != self.home_w])


def _one(cur: Any, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
    cur.execute(sql, params)
    rows = cur.fetchall()
    return tuple(rows[0]) if rows else None


def _customer_by_name(cur: Any, w: int, d: int, last: str) -> int | None:
    cur.execute(
        "SELECT c_id FROM customer WHERE c_w_id = %s AND c_d_id = %s AND c_last = %s ORDER BY c_first", (w, d, last)
    )
    rows = cur.fetchall()
    return int(rows[(len(rows) - 1) // 2][0]) if rows else None  # the one in the middle (spec 2.5.2.2)


@dataclass
class _Order:
    """What both NewOrder formulations do before their order lines: the order placed, its lines chosen."""

    cur: Any
    w: int
    d: int
    o_id: int
    items: list[int]
    supply: list[int]
    quantities: list[int]


def _place_order(conn: Any, ctx: Context) -> _Order:
    rng, w = ctx.rng, ctx.home_w
    d, c = rng.randint(1, DISTRICTS), ctx.customer_id()
    n = rng.randint(5, 15)
    items = [ctx.item_id() for _ in range(n)]
    if rng.random() < 0.01:
        items[-1] = ctx.size.items + 1  # unused: the transaction rolls back
    supply = [ctx.other_warehouse() if rng.random() < 0.01 else w for _ in range(n)]
    quantities = [rng.randint(1, 10) for _ in range(n)]
    cur = conn.cursor()
    # the taxes make the total shown to the terminal, not stored
    _one(cur, "SELECT w_tax FROM warehouse WHERE w_id = %s", (w,))
    _tax, o_id = _one(cur, "SELECT d_tax, d_next_o_id FROM district WHERE d_w_id = %s AND d_id = %s", (w, d)) or (0, 0)
    cur.execute("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = %s AND d_id = %s", (w, d))
    _one(cur, "SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
         (w, d, c))  # fmt: skip
    all_local = int(all(s == w for s in supply))
    now = dt.datetime.now().replace(microsecond=0)
    cur.execute("INSERT INTO oorder VALUES (%s, %s, %s, %s, %s, NULL, %s, %s)", (o_id, d, w, c, now, n, all_local))
    cur.execute("INSERT INTO new_order VALUES (%s, %s, %s)", (o_id, d, w))
    return _Order(cur, w, d, int(o_id), items, supply, quantities)


def new_order(conn: Any, ctx: Context) -> None:
    order = _place_order(conn, ctx)
    cur, w, d, o_id = order.cur, order.w, order.d, order.o_id
    items, supply, quantities = order.items, order.supply, order.quantities
    for number, (i_id, s_w, qty) in enumerate(zip(items, supply, quantities), start=1):
        item = _one(cur, "SELECT i_price, i_name, i_data FROM item WHERE i_id = %s", (i_id,))
        if item is None:
            conn.rollback()
            raise UserAbort
        stock = _one(
            cur,
            f"SELECT s_quantity, s_dist_{d:02d}, s_data FROM stock WHERE s_w_id = %s AND s_i_id = %s",
            (s_w, i_id),
        )
        assert stock is not None
        s_qty = int(stock[0])
        new_qty = s_qty - qty if s_qty - qty >= 10 else s_qty - qty + 91
        cur.execute(
            "UPDATE stock SET s_quantity = %s, s_ytd = s_ytd + %s, s_order_cnt = s_order_cnt + 1, "
            "s_remote_cnt = s_remote_cnt + %s WHERE s_w_id = %s AND s_i_id = %s",
            (new_qty, qty, int(s_w != w), s_w, i_id),
        )
        amount = (Decimal(qty) * Decimal(item[0])).quantize(Decimal("0.01"))
        cur.execute(
            "INSERT INTO order_line VALUES (%s, %s, %s, %s, %s, %s, NULL, %s, %s, %s)",
            (o_id, d, w, number, i_id, s_w, qty, amount, stock[1]),
        )
    conn.commit()


def payment(conn: Any, ctx: Context) -> None:
    rng, w = ctx.rng, ctx.home_w
    d = rng.randint(1, DISTRICTS)
    if rng.random() < 0.85:
        c_w, c_d = w, d
    else:
        c_w, c_d = ctx.other_warehouse(), rng.randint(1, DISTRICTS)
    amount = Decimal(f"{rng.uniform(1, 5000):.2f}")
    cur = conn.cursor()
    cur.execute("UPDATE warehouse SET w_ytd = w_ytd + %s WHERE w_id = %s", (amount, w))
    (w_name,) = _one(cur, "SELECT w_name FROM warehouse WHERE w_id = %s", (w,)) or ("",)
    cur.execute("UPDATE district SET d_ytd = d_ytd + %s WHERE d_w_id = %s AND d_id = %s", (amount, w, d))
    (d_name,) = _one(cur, "SELECT d_name FROM district WHERE d_w_id = %s AND d_id = %s", (w, d)) or ("",)
    c = _customer_by_name(cur, c_w, c_d, ctx.last_name()) if rng.random() < 0.6 else ctx.customer_id()
    if c is None:
        c = ctx.customer_id()
    (credit,) = _one(cur, "SELECT c_credit FROM customer WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
                     (c_w, c_d, c)) or ("GC",)  # fmt: skip
    cur.execute(
        "UPDATE customer SET c_balance = c_balance - %s, c_ytd_payment = c_ytd_payment + %s, "
        "c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
        (amount, amount, c_w, c_d, c),
    )
    if credit == "BC":
        note = f"{c} {c_d} {c_w} {d} {w} {amount} |"
        cur.execute(
            "UPDATE customer SET c_data = SUBSTRING(%s || c_data, 1, 500) WHERE c_w_id = %s AND c_d_id = %s "
            "AND c_id = %s",
            (note, c_w, c_d, c),
        )
    now = dt.datetime.now().replace(microsecond=0)
    cur.execute(
        "INSERT INTO history VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
        (c, c_d, c_w, d, w, now, amount, f"{w_name}    {d_name}"[:24]),
    )
    conn.commit()


def order_status(conn: Any, ctx: Context) -> None:
    rng, w = ctx.rng, ctx.home_w
    d = rng.randint(1, DISTRICTS)
    cur = conn.cursor()
    c = _customer_by_name(cur, w, d, ctx.last_name()) if rng.random() < 0.6 else ctx.customer_id()
    if c is None:
        c = ctx.customer_id()
    _one(cur, "SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = %s AND c_d_id = %s "
         "AND c_id = %s", (w, d, c))  # fmt: skip
    last = _one(
        cur,
        "SELECT o_id, o_carrier_id, o_entry_d FROM oorder WHERE o_w_id = %s AND o_d_id = %s AND o_c_id = %s "
        "ORDER BY o_id DESC LIMIT 1",
        (w, d, c),
    )
    if last is not None:
        cur.execute(
            "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line "
            "WHERE ol_w_id = %s AND ol_d_id = %s AND ol_o_id = %s",
            (w, d, last[0]),
        )
        cur.fetchall()
    conn.commit()


def delivery(conn: Any, ctx: Context) -> None:
    rng, w = ctx.rng, ctx.home_w
    carrier = rng.randint(1, 10)
    now = dt.datetime.now().replace(microsecond=0)
    cur = conn.cursor()
    for d in range(1, DISTRICTS + 1):
        row = _one(cur, "SELECT MIN(no_o_id) FROM new_order WHERE no_w_id = %s AND no_d_id = %s", (w, d))
        if row is None or row[0] is None:
            continue  # no undelivered order in this district (spec 2.7.4.2)
        o_id = int(row[0])
        cur.execute("DELETE FROM new_order WHERE no_w_id = %s AND no_d_id = %s AND no_o_id = %s", (w, d, o_id))
        (c,) = _one(cur, "SELECT o_c_id FROM oorder WHERE o_w_id = %s AND o_d_id = %s AND o_id = %s", (w, d, o_id))
        cur.execute("UPDATE oorder SET o_carrier_id = %s WHERE o_w_id = %s AND o_d_id = %s AND o_id = %s",
                    (carrier, w, d, o_id))  # fmt: skip
        cur.execute("UPDATE order_line SET ol_delivery_d = %s WHERE ol_w_id = %s AND ol_d_id = %s AND ol_o_id = %s",
                    (now, w, d, o_id))  # fmt: skip
        (total,) = _one(cur, "SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id = %s AND ol_d_id = %s "
                        "AND ol_o_id = %s", (w, d, o_id)) or (0,)  # fmt: skip
        cur.execute(
            "UPDATE customer SET c_balance = c_balance + %s, c_delivery_cnt = c_delivery_cnt + 1 "
            "WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
            (total or 0, w, d, c),
        )
    conn.commit()


def stock_level(conn: Any, ctx: Context) -> None:
    rng, w = ctx.rng, ctx.home_w
    d = rng.randint(1, DISTRICTS)
    threshold = rng.randint(10, 20)
    cur = conn.cursor()
    (next_o,) = _one(cur, "SELECT d_next_o_id FROM district WHERE d_w_id = %s AND d_id = %s", (w, d)) or (0,)
    cur.execute(
        "SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = %s AND ol_d_id = %s "
        "AND ol_o_id < %s AND ol_o_id >= %s AND s_w_id = %s AND s_i_id = ol_i_id AND s_quantity < %s",
        (w, d, next_o, next_o - 20, w, threshold),
    )
    cur.fetchall()
    conn.commit()


def _marks(values: list[Any]) -> str:
    return ", ".join(["%s"] * len(values))


def new_order_batched(conn: Any, ctx: Context) -> None:
    """NewOrder with its item rows read in one SELECT and its stock rows in one more."""
    order = _place_order(conn, ctx)
    cur, w, d, o_id = order.cur, order.w, order.d, order.o_id
    items, supply, quantities = order.items, order.supply, order.quantities
    wanted = sorted(set(items))
    cur.execute(f"SELECT i_id, i_price, i_name, i_data FROM item WHERE i_id IN ({_marks(wanted)})", tuple(wanted))
    price = {int(r[0]): r[1] for r in cur.fetchall()}
    if len(price) < len(wanted):
        conn.rollback()
        raise UserAbort
    homes = sorted(set(supply))
    # the usual order is all-local: one equality on s_w_id; a remote line adds its warehouse to an IN list (the
    # extra (warehouse, item) pairs that matches are read and ignored)
    where_w = "s_w_id = %s" if len(homes) == 1 else f"s_w_id IN ({_marks(homes)})"
    cur.execute(
        f"SELECT s_w_id, s_i_id, s_quantity, s_dist_{d:02d}, s_data FROM stock WHERE {where_w} "
        f"AND s_i_id IN ({_marks(wanted)})",
        (*homes, *wanted),
    )
    stock = {(int(r[0]), int(r[1])): (int(r[2]), r[3]) for r in cur.fetchall()}
    for number, (i_id, s_w, qty) in enumerate(zip(items, supply, quantities), start=1):
        s_qty, dist = stock[(s_w, i_id)]
        new_qty = s_qty - qty if s_qty - qty >= 10 else s_qty - qty + 91
        stock[(s_w, i_id)] = (new_qty, dist)  # a repeated item sees this line's update, as a re-read would
        cur.execute(
            "UPDATE stock SET s_quantity = %s, s_ytd = s_ytd + %s, s_order_cnt = s_order_cnt + 1, "
            "s_remote_cnt = s_remote_cnt + %s WHERE s_w_id = %s AND s_i_id = %s",
            (new_qty, qty, int(s_w != w), s_w, i_id),
        )
        amount = (Decimal(qty) * Decimal(price[i_id])).quantize(Decimal("0.01"))
        cur.execute(
            "INSERT INTO order_line VALUES (%s, %s, %s, %s, %s, %s, NULL, %s, %s, %s)",
            (o_id, d, w, number, i_id, s_w, qty, amount, dist),
        )
    conn.commit()


def delivery_batched(conn: Any, ctx: Context) -> None:
    """Delivery with the ten districts' reads in one SELECT each; its writes stay one statement per row."""
    rng, w = ctx.rng, ctx.home_w
    carrier = rng.randint(1, 10)
    now = dt.datetime.now().replace(microsecond=0)
    cur = conn.cursor()
    cur.execute("SELECT no_d_id, MIN(no_o_id) FROM new_order WHERE no_w_id = %s GROUP BY no_d_id", (w,))
    oldest = {int(d): int(o) for d, o in cur.fetchall() if o is not None}
    if not oldest:
        conn.commit()
        return
    orders = sorted(set(oldest.values()))
    # o_id IN (...) over the warehouse: the other districts' orders with the same ids are read and ignored
    cur.execute(f"SELECT o_d_id, o_id, o_c_id FROM oorder WHERE o_w_id = %s AND o_id IN ({_marks(orders)})",
                (w, *orders))  # fmt: skip
    customer = {(int(d), int(o)): int(c) for d, o, c in cur.fetchall()}
    cur.execute(
        f"SELECT ol_d_id, ol_o_id, SUM(ol_amount) FROM order_line WHERE ol_w_id = %s AND ol_o_id IN ({_marks(orders)}) "
        "GROUP BY ol_d_id, ol_o_id",
        (w, *orders),
    )
    total = {(int(d), int(o)): s for d, o, s in cur.fetchall()}
    for d, o_id in sorted(oldest.items()):
        cur.execute("DELETE FROM new_order WHERE no_w_id = %s AND no_d_id = %s AND no_o_id = %s", (w, d, o_id))
        cur.execute("UPDATE oorder SET o_carrier_id = %s WHERE o_w_id = %s AND o_d_id = %s AND o_id = %s",
                    (carrier, w, d, o_id))  # fmt: skip
        cur.execute("UPDATE order_line SET ol_delivery_d = %s WHERE ol_w_id = %s AND ol_d_id = %s AND ol_o_id = %s",
                    (now, w, d, o_id))  # fmt: skip
        cur.execute(
            "UPDATE customer SET c_balance = c_balance + %s, c_delivery_cnt = c_delivery_cnt + 1 "
            "WHERE c_w_id = %s AND c_d_id = %s AND c_id = %s",
            (total.get((d, o_id)) or 0, w, d, customer[(d, o_id)]),
        )
    conn.commit()


TRANSACTIONS = {
    "NewOrder": new_order,
    "Payment": payment,
    "OrderStatus": order_status,
    "Delivery": delivery,
    "StockLevel": stock_level,
}
BATCHED = {**TRANSACTIONS, "NewOrder": new_order_batched, "Delivery": delivery_batched}
FORMULATIONS = {"standard": TRANSACTIONS, "batched": BATCHED}
MIX = [("NewOrder", 45), ("Payment", 43), ("OrderStatus", 4), ("Delivery", 4), ("StockLevel", 4)]


def pick(rng: random.Random) -> str:
    x = rng.randint(1, 100)
    for name, weight in MIX:
        if x <= weight:
            return name
        x -= weight
    return "StockLevel"


CONSISTENCY = {
    # spec 3.3.2.1-4: (name, query returning the rows that violate it)
    1: "SELECT w_id FROM warehouse, (SELECT d_w_id, SUM(d_ytd) AS s FROM district GROUP BY d_w_id) AS d "
    "WHERE w_id = d.d_w_id AND w_ytd <> d.s",
    2: "SELECT d_w_id, d_id FROM district, (SELECT o_w_id, o_d_id, MAX(o_id) AS m FROM oorder GROUP BY o_w_id, o_d_id) "
    "AS o WHERE o.o_w_id = d_w_id AND o.o_d_id = d_id AND d_next_o_id - 1 <> o.m",
    3: "SELECT no_w_id, no_d_id FROM new_order GROUP BY no_w_id, no_d_id "
    "HAVING MAX(no_o_id) - MIN(no_o_id) + 1 <> COUNT(*)",
    4: "SELECT o.o_w_id, o.o_d_id FROM (SELECT o_w_id, o_d_id, SUM(o_ol_cnt) AS n FROM oorder GROUP BY o_w_id, o_d_id) "
    "AS o, (SELECT ol_w_id, ol_d_id, COUNT(*) AS n FROM order_line GROUP BY ol_w_id, ol_d_id) AS l "
    "WHERE o.o_w_id = l.ol_w_id AND o.o_d_id = l.ol_d_id AND o.n <> l.n",
}
