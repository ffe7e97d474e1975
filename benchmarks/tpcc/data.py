"""TPC-C data (spec 4.3) and CH-benCHmark's supplier, nation and region, written once as CSV files per
(warehouses, scale, seed) and loaded by every system from the same files.

``scale`` shrinks the per-warehouse cardinalities (items, customers and orders per district) for smoke runs;
1.0 is the standard: 100,000 items, 3,000 customers and orders per district, 900 new orders.
So that every CH query returns rows (tested), the data departs from the letter of TPC-C where CH needs it, and
nowhere the TPC-C consistency conditions look: initial orders fall between 2010-06 and 2011-12 (inside the CH
date ranges) and are delivered 1-72 hours after entry; delivered initial order lines have amounts too; customer
states start with an upper-case letter whose code is a nation key (CH joins on it); every 10th item's data
starts with 'co', every 50th with 'PR' and every 50th ends in 'BB'; initial s_order_cnt is heavy-tailed (a few
best sellers) instead of 0; every 7th customer starts with a positive balance; and every 10th initial order
goes to the customer of the order before it, so some customers have no order.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import random
import string
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SYLLABLES = ["BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"]
DISTRICTS = 10
SUPPLIERS = 10_000
# nation keys are the character codes of 0-9, A-Z and a-z (the CH-benCHmark convention)
NATION_KEYS = list(range(48, 58)) + list(range(65, 91)) + list(range(97, 123))
NATIONS = [
    "Australia", "Belgium", "Cambodia", "Canada", "Chile", "China", "Egypt", "France", "Germany", "India",
    "Indonesia", "Iran", "Iraq", "Japan", "Jordan", "Kenya", "Mexico", "Morocco", "Mozambique", "Peru",
    "Brazil", "Argentina", "Romania", "Russia", "Saudi Arabia", "United Kingdom", "United States", "Vietnam",
    "Algeria", "Ethiopia", "Netherlands", "Norway", "Poland", "Portugal", "Spain", "Sweden", "Switzerland",
    "Turkey", "Ukraine", "Austria", "Denmark", "Finland", "Greece", "Hungary", "Ireland", "Italy", "Czechia",
    "Bulgaria", "Croatia", "Serbia", "Slovakia", "Slovenia", "Estonia", "Latvia", "Lithuania", "Iceland",
    "Nigeria", "Ghana", "Pakistan", "Bangladesh", "Nepal", "Thailand",
]  # fmt: skip
NATIONS = NATIONS[-10:] + NATIONS[:-10]  # the named ones (Germany, Cambodia, Brazil...) get the keys of A-Z
REGIONS = ["Africa", "America", "Asia", "Europe", "Middle East"]
_EUROPE = {"Belgium", "France", "Germany", "Romania", "Russia", "United Kingdom", "Netherlands", "Norway", "Poland",
           "Portugal", "Spain", "Sweden", "Switzerland", "Ukraine", "Austria", "Denmark", "Finland", "Greece",
           "Hungary", "Ireland", "Italy", "Czechia", "Bulgaria", "Croatia", "Serbia", "Slovakia", "Slovenia",
           "Estonia", "Latvia", "Lithuania", "Iceland"}  # fmt: skip
_AMERICA = {"Canada", "Chile", "Mexico", "Peru", "Brazil", "Argentina", "United States"}
_MIDDLE_EAST = {"Egypt", "Iran", "Iraq", "Jordan", "Saudi Arabia", "Turkey"}
_AFRICA = {"Kenya", "Morocco", "Mozambique", "Algeria", "Ethiopia", "Nigeria", "Ghana"}


def region_of(nation: str) -> int:
    for key, members in ((3, _EUROPE), (1, _AMERICA), (4, _MIDDLE_EAST), (0, _AFRICA)):
        if nation in members:
            return key
    return 2  # Asia


@dataclass(frozen=True)
class Scale:
    warehouses: int
    scale: float = 1.0

    @property
    def items(self) -> int:
        return max(100, int(100_000 * self.scale))

    @property
    def customers(self) -> int:  # per district; also the initial orders per district
        return max(30, int(3000 * self.scale))

    @property
    def new_orders(self) -> int:  # the last ones of each district are undelivered
        return max(9, int(900 * self.scale))


def last_name(num: int) -> str:
    return SYLLABLES[num // 100] + SYLLABLES[(num // 10) % 10] + SYLLABLES[num % 10]


def nurand(rng: random.Random, a: int, x: int, y: int, c: int) -> int:
    return (((rng.randint(0, a) | rng.randint(x, y)) + c) % (y - x + 1)) + x


ALNUM = np.frombuffer((string.ascii_letters + string.digits).encode(), np.uint8)
DIGITS = np.frombuffer(string.digits.encode(), np.uint8)
UPPER = np.frombuffer(string.ascii_uppercase.encode(), np.uint8)
START = dt.datetime(2010, 6, 1)
SPAN_S = int((dt.datetime(2011, 12, 1) - START).total_seconds())
DATA_VERSION = 4  # bump when the generated data changes: cached CSV files are keyed by it


@dataclass
class Col:
    """One CSV field for n rows: row i is ``chars[i, :lengths[i]]`` (ASCII bytes; length 0 = NULL)."""

    chars: np.ndarray  # (n, width) uint8
    lengths: np.ndarray  # (n,) int64

    @property
    def n(self) -> int:
        return len(self.lengths)


def const(text: str, n: int) -> Col:
    raw = np.frombuffer(text.encode(), np.uint8)
    return Col(np.broadcast_to(raw, (n, len(raw))), np.full(n, len(raw), np.int64))


def empty(n: int) -> Col:
    return Col(np.zeros((n, 0), np.uint8), np.zeros(n, np.int64))


def ints(values: np.ndarray) -> Col:
    """Non-negative integers in decimal."""
    x = np.asarray(values, np.int64)
    width = max(1, len(str(int(x.max())))) if len(x) else 1
    digits = np.ones(len(x), np.int64)
    for k in range(1, width):
        digits += x >= 10**k
    power = np.maximum(digits[:, None] - 1 - np.arange(width), 0)
    return Col((x[:, None] // 10**power % 10 + 48).astype(np.uint8), digits)


def padded(values: np.ndarray, width: int) -> Col:
    """Non-negative integers as exactly ``width`` digits, zero-padded."""
    x = np.asarray(values, np.int64)
    power = width - 1 - np.arange(width)
    return Col((x[:, None] // 10**power % 10 + 48).astype(np.uint8), np.full(len(x), width, np.int64))


def decimal(units: np.ndarray, scale: int) -> Col:
    """``units`` / 10**scale with ``scale`` digits after the point (``-`` for negatives)."""
    x = np.asarray(units, np.int64)
    sign = Col(np.full((len(x), 1), ord("-"), np.uint8), (x < 0).astype(np.int64))
    return cat(sign, ints(np.abs(x) // 10**scale), const(".", len(x)), padded(np.abs(x) % 10**scale, scale))


def timestamps(seconds: np.ndarray) -> Col:
    """START + ``seconds`` as YYYY-MM-DD HH:MM:SS."""
    at = np.datetime64(START, "s") + np.asarray(seconds, np.int64).astype("timedelta64[s]")
    chars = np.datetime_as_string(at, unit="s").astype("S19").view(np.uint8).reshape(len(at), 19).copy()
    chars[:, 10] = ord(" ")
    return Col(chars, np.full(len(at), 19, np.int64))


def choose(rng: np.random.Generator, alphabet: np.ndarray, n: int, lo: int, hi: int) -> Col:
    """Random strings of ``lo``..``hi`` characters from ``alphabet``."""
    chars = alphabet[rng.integers(0, len(alphabet), (n, hi), dtype=np.uint8)]
    return Col(chars, rng.integers(lo, hi + 1, n) if lo < hi else np.full(n, hi, np.int64))


def astr(rng: np.random.Generator, n: int, lo: int, hi: int) -> Col:
    return choose(rng, ALNUM, n, lo, hi)


def nstr(rng: np.random.Generator, n: int, width: int) -> Col:
    return choose(rng, DIGITS, n, width, width)


def overwrite(col: Col, rows: np.ndarray, at: np.ndarray, text: str) -> None:
    """Put ``text`` at offset ``at[i]`` of row ``rows[i]`` (inside the string)."""
    raw = np.frombuffer(text.encode(), np.uint8)
    col.chars[rows[:, None], at[:, None] + np.arange(len(raw))] = raw


def data_field(rng: np.random.Generator, n: int, lo: int, hi: int) -> Col:
    """Item and stock data: ORIGINAL somewhere in 10% of them (spec 4.3.3.1)."""
    col = astr(rng, n, lo, hi)
    rows = np.flatnonzero(rng.random(n) < 0.1)
    overwrite(col, rows, rng.integers(0, col.lengths[rows] - 7), "ORIGINAL")
    return col


def cat(*cols: Col) -> Col:
    """Field-wise concatenation of strings."""
    return _pack(cols, sep=None)


def take(col: Col, index: np.ndarray) -> Col:
    return Col(col.chars[index], col.lengths[index])


def _pack(cols: tuple[Col, ...] | list[Col], sep: int | None) -> Col:
    n = cols[0].n
    lengths = np.stack([c.lengths for c in cols], 1)
    gap = 0 if sep is None else 1
    starts = np.cumsum(lengths + gap, 1) - lengths - gap  # each field's offset inside its row
    total = lengths.sum(1) + gap * len(cols)
    width = int(total.max()) if n else 0
    out = np.zeros((n, width), np.uint8) if sep is None else None
    flat_out = np.empty(int(total.sum()), np.uint8) if sep is not None else None
    row_start = np.cumsum(total) - total
    for j, c in enumerate(cols):
        w = c.chars.shape[1]
        if w:
            mask = np.arange(w) < c.lengths[:, None]
            if out is not None:
                out[np.nonzero(mask)[0], (starts[:, j][:, None] + np.arange(w))[mask]] = c.chars[mask]
            else:
                flat_out[(row_start[:, None] + starts[:, j][:, None] + np.arange(w))[mask]] = c.chars[mask]
        if flat_out is not None:
            flat_out[row_start + starts[:, j] + c.lengths] = sep
    if flat_out is not None:
        flat_out[row_start + total - 1] = ord("\n")
        return Col(flat_out[None, :], np.array([len(flat_out)]))
    return Col(out, total - gap * len(cols))


def csv_bytes(cols: list[Col]) -> bytes:
    """The rows as CSV: fields joined by commas (none holds a comma or a quote), one line each."""
    if not cols[0].n:
        return b""
    return _pack(cols, sep=ord(",")).chars.tobytes()


def address(rng: np.random.Generator, n: int) -> list[Col]:
    state = Col(UPPER[rng.integers(0, 26, (n, 2))], np.full(n, 2, np.int64))
    return [astr(rng, n, 10, 20), astr(rng, n, 10, 20), astr(rng, n, 10, 20), state,
            cat(nstr(rng, n, 4), const("11111", n))]  # fmt: skip


def nurand_array(rng: np.random.Generator, n: int, a: int, x: int, y: int, c: int) -> np.ndarray:
    return ((rng.integers(0, a + 1, n) | rng.integers(x, y + 1, n)) + c) % (y - x + 1) + x


LAST_NAMES = Col(
    np.array([list(last_name(i).ljust(15).encode()) for i in range(1000)], np.uint8),
    np.array([len(last_name(i)) for i in range(1000)], np.int64),
)


def generate(directory: Path, size: Scale, seed: int = 7) -> Path:
    """Write one CSV per table into ``directory`` (skipped when already complete). Empty field = NULL.
    Vectorised with numpy, a warehouse at a time: a few hundred thousand rows a second."""
    directory.mkdir(parents=True, exist_ok=True)
    done = directory / ".complete"
    if done.exists():
        return directory
    rng = np.random.default_rng(seed)
    with contextlib.ExitStack() as stack:
        files = {name: stack.enter_context(open(directory / f"{name}.csv", "wb")) for name in TABLE_ORDER}
        files["item"].write(csv_bytes(_items(rng, size)))
        for w in range(1, size.warehouses + 1):
            for name, cols in _warehouse(rng, size, w):
                files[name].write(csv_bytes(cols))
        for name, cols in _ch_tables(rng):
            files[name].write(csv_bytes(cols))
    done.touch()
    return directory


def _items(rng: np.random.Generator, size: Scale) -> list[Col]:
    n = size.items
    i = np.arange(1, n + 1)
    data = data_field(rng, n, 26, 50)
    overwrite(data, np.flatnonzero(i % 10 == 2), np.zeros(len(i[i % 10 == 2]), np.int64), "co")
    # even, so that some have German suppliers at one warehouse (supplier = w * i mod 10000)
    overwrite(data, np.flatnonzero(i % 50 == 5), np.zeros(len(i[i % 50 == 5]), np.int64), "PR")
    ends = np.flatnonzero(i % 50 == 0)
    overwrite(data, ends, data.lengths[ends] - 2, "BB")
    return [ints(i), ints(rng.integers(1, 10_001, n)), astr(rng, n, 14, 24), decimal(rng.integers(100, 10_001, n), 2),
            data]  # fmt: skip


def _warehouse(rng: np.random.Generator, size: Scale, w: int) -> list[tuple[str, list[Col]]]:
    out: list[tuple[str, list[Col]]] = []
    out.append(("warehouse", [ints([w]), astr(rng, 1, 6, 10), *address(rng, 1), decimal(rng.integers(0, 2001, 1), 4),
                              const("300000.00", 1)]))  # fmt: skip
    n = size.items
    order_cnt = np.minimum(10_000, np.floor(rng.pareto(1.2, n)).astype(np.int64))  # heavy-tailed: best sellers
    out.append(("stock", [ints(np.arange(1, n + 1)), const(str(w), n), ints(rng.integers(10, 101, n)),
                          *[astr(rng, n, 24, 24) for _ in range(10)], const("0", n), ints(order_cnt), const("0", n),
                          data_field(rng, n, 26, 50)]))  # fmt: skip
    d = np.arange(1, DISTRICTS + 1)
    out.append(("district", [ints(d), const(str(w), DISTRICTS), astr(rng, DISTRICTS, 6, 10), *address(rng, DISTRICTS),
                             decimal(rng.integers(0, 2001, DISTRICTS), 4), const("30000.00", DISTRICTS),
                             const(str(size.customers + 1), DISTRICTS)]))  # fmt: skip
    out += _customers(rng, size, w)
    out += _orders(rng, size, w)
    return out


def _customers(rng: np.random.Generator, size: Scale, w: int) -> list[tuple[str, list[Col]]]:
    per = size.customers
    n = per * DISTRICTS
    c = np.tile(np.arange(1, per + 1), DISTRICTS)
    d = np.repeat(np.arange(1, DISTRICTS + 1), per)
    cid, did, wid = ints(c), ints(d), const(str(w), n)
    last = np.where(c <= 1000, c - 1, nurand_array(rng, n, 255, 0, 999, 157))
    since = timestamps(rng.integers(0, SPAN_S, n))
    credit = take(Col(np.array([list(b"GC"), list(b"BC")], np.uint8), np.array([2, 2])), (rng.random(n) < 0.1) * 1)
    balance = np.where(c % 7 == 0, rng.integers(100, 500_001, n), -1000)
    customer = [cid, did, wid, astr(rng, n, 8, 16), const("OE", n), take(LAST_NAMES, last), *address(rng, n),
                nstr(rng, n, 16), since, credit, const("50000.00", n), decimal(rng.integers(0, 5001, n), 4),
                decimal(balance, 2), const("10.00", n), const("1", n), const("0", n),
                astr(rng, n, 300, 500)]  # fmt: skip
    history = [cid, did, wid, did, wid, since, const("10.00", n), astr(rng, n, 12, 24)]
    return [("customer", customer), ("history", history)]


def _orders(rng: np.random.Generator, size: Scale, w: int) -> list[tuple[str, list[Col]]]:
    per = size.customers
    n = per * DISTRICTS
    o = np.tile(np.arange(1, per + 1), DISTRICTS)
    d = np.repeat(np.arange(1, DISTRICTS + 1), per)
    # each district's orders go to a permutation of its customers; every 10th to the customer of the order before
    permutation = np.argsort(rng.random((DISTRICTS, per)), axis=1).ravel() + 1
    before = np.roll(permutation, 1)
    customer = np.where(o % 10 == 0, before, permutation)
    entry = SPAN_S * o // per
    delivered = o < per - size.new_orders + 1
    ol_cnt = rng.integers(5, 16, n)
    carrier = take(ints(rng.integers(1, 11, n)), np.arange(n))
    carrier.lengths = np.where(delivered, carrier.lengths, 0)
    wid = const(str(w), n)
    oorder = [ints(o), ints(d), wid, ints(customer), timestamps(entry), carrier, ints(ol_cnt), const("1", n)]
    undelivered = np.flatnonzero(~delivered)
    new_order = [ints(o[undelivered]), ints(d[undelivered]), const(str(w), len(undelivered))]
    # order lines: ol_cnt of them per order, delivered 1-72 hours after the order's entry when it was delivered
    lines = np.repeat(np.arange(n), ol_cnt)
    m = len(lines)
    number = np.arange(m) - np.repeat(np.cumsum(ol_cnt) - ol_cnt, ol_cnt) + 1
    delivered_at = timestamps(entry + rng.integers(3600, 72 * 3600 + 1, n))
    delivered_at.lengths = np.where(delivered, delivered_at.lengths, 0)
    order_line = [take(oorder[0], lines), take(oorder[1], lines), const(str(w), m), ints(number),
                  ints(rng.integers(1, size.items + 1, m)), const(str(w), m), take(delivered_at, lines),
                  const("5", m), decimal(rng.integers(1, 1_000_000, m), 2),
                  astr(rng, m, 24, 24)]  # TPC-C says amount 0.00 if delivered: CH sums them  # fmt: skip
    return [("oorder", oorder), ("new_order", new_order), ("order_line", order_line)]


def _ch_tables(rng: np.random.Generator) -> list[tuple[str, list[Col]]]:
    r = len(REGIONS)
    region = [ints(np.arange(r)), _names(REGIONS), astr(rng, r, 31, 115)]
    k = len(NATIONS)
    nation = [ints(NATION_KEYS), _names(NATIONS), ints([region_of(name) for name in NATIONS]), astr(rng, k, 31, 114)]
    s = np.arange(SUPPLIERS)
    upper = np.arange(65, 91)  # supplier nations among those customers' states map to
    comment = astr(rng, SUPPLIERS, 25, 100)
    bad = np.flatnonzero(rng.random(SUPPLIERS) < 0.05)
    overwrite(comment, bad, np.full(len(bad), 10), "bad")
    supplier = [ints(s), cat(const("Supplier#", SUPPLIERS), padded(s, 9)), astr(rng, SUPPLIERS, 10, 40),
                ints(upper[s % len(upper)]), nstr(rng, SUPPLIERS, 15),
                decimal(rng.integers(-99_999, 1_000_000, SUPPLIERS), 2), comment]  # fmt: skip
    return [("region", region), ("nation", nation), ("supplier", supplier)]


def _names(names: list[str]) -> Col:
    width = max(len(x) for x in names)
    return Col(np.array([list(x.ljust(width).encode()) for x in names], np.uint8), np.array([len(x) for x in names]))


TABLE_ORDER = ["warehouse", "district", "customer", "history", "oorder", "new_order", "item", "stock", "order_line",
               "region", "nation", "supplier"]  # fmt: skip
