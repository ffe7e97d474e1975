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
import csv
import datetime as dt
import random
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def _astr(rng: random.Random, lo: int, hi: int) -> str:
    return "".join(rng.choices(string.ascii_letters + string.digits, k=rng.randint(lo, hi)))


def _nstr(rng: random.Random, n: int) -> str:
    return "".join(rng.choices(string.digits, k=n))


def _data(rng: random.Random, lo: int, hi: int) -> str:
    text = _astr(rng, lo, hi)
    if rng.random() < 0.1:  # ORIGINAL in 10% of items and stock (spec 4.3.3.1)
        at = rng.randint(0, len(text) - 8)
        text = text[:at] + "ORIGINAL" + text[at + 8 :]
    return text


def _state(rng: random.Random) -> str:
    return rng.choice(string.ascii_uppercase) + rng.choice(string.ascii_uppercase)


def _zip(rng: random.Random) -> str:
    return _nstr(rng, 4) + "11111"


def _address(rng: random.Random) -> list[str]:
    return [_astr(rng, 10, 20), _astr(rng, 10, 20), _astr(rng, 10, 20), _state(rng), _zip(rng)]


def _ts(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S")


START = dt.datetime(2010, 6, 1)
DATA_VERSION = 3  # bump when the generated data changes: cached CSV files are keyed by it


def generate(directory: Path, size: Scale, seed: int = 7) -> Path:
    """Write one CSV per table into ``directory`` (skipped when already complete). Empty field = NULL."""
    directory.mkdir(parents=True, exist_ok=True)
    done = directory / ".complete"
    if done.exists():
        return directory
    with contextlib.ExitStack() as stack:
        files = {name: stack.enter_context(open(directory / f"{name}.csv", "w", newline="")) for name in TABLE_ORDER}
        _write({name: csv.writer(f, lineterminator="\n") for name, f in files.items()}, size, random.Random(seed))
    done.touch()
    return directory


def _write(out: dict[str, Any], size: Scale, rng: random.Random) -> None:
    span = (dt.datetime(2011, 12, 1) - START).total_seconds()
    for i in range(1, size.items + 1):
        data = _data(rng, 26, 50)
        if i % 10 == 2:  # even, so that some have German suppliers at one warehouse (supplier = w * i mod 10000)
            data = "co" + data[2:]
        elif i % 50 == 5:
            data = "PR" + data[2:]
        if i % 50 == 0:
            data = data[:-2] + "BB"
        out["item"].writerow([i, rng.randint(1, 10_000), _astr(rng, 14, 24), f"{rng.uniform(1, 100):.2f}", data])
    for w in range(1, size.warehouses + 1):
        out["warehouse"].writerow([w, _astr(rng, 6, 10), *_address(rng), f"{rng.uniform(0, 0.2):.4f}", "300000.00"])
        for i in range(1, size.items + 1):
            order_cnt = min(10_000, int(rng.paretovariate(1.2)) - 1)
            out["stock"].writerow([i, w, rng.randint(10, 100), *[_astr(rng, 24, 24) for _ in range(10)], 0,
                                   order_cnt, 0, _data(rng, 26, 50)])  # fmt: skip
        for d in range(1, DISTRICTS + 1):
            out["district"].writerow([d, w, _astr(rng, 6, 10), *_address(rng), f"{rng.uniform(0, 0.2):.4f}",
                                      "30000.00", size.customers + 1])  # fmt: skip
            for c in range(1, size.customers + 1):
                last = last_name(c - 1 if c <= 1000 else nurand(rng, 255, 0, 999, 157))
                since = _ts(START + dt.timedelta(seconds=rng.uniform(0, span)))
                out["customer"].writerow([c, d, w, _astr(rng, 8, 16), "OE", last, *_address(rng),
                                          _nstr(rng, 16), since, "BC" if rng.random() < 0.1 else "GC", "50000.00",
                                          f"{rng.uniform(0, 0.5):.4f}",
                                          f"{rng.uniform(1, 5000):.2f}" if c % 7 == 0 else "-10.00", "10.00", 1, 0,
                                          _astr(rng, 300, 500)])  # fmt: skip
                out["history"].writerow([c, d, w, d, w, since, "10.00", _astr(rng, 12, 24)])
            permutation = list(range(1, size.customers + 1))
            rng.shuffle(permutation)
            first_new = size.customers - size.new_orders + 1
            for o in range(1, size.customers + 1):
                entry = START + dt.timedelta(seconds=span * o / size.customers)
                delivered = o < first_new
                ol_cnt = rng.randint(5, 15)
                customer = permutation[o - 2] if o % 10 == 0 else permutation[o - 1]
                delivered_at = _ts(entry + dt.timedelta(hours=rng.uniform(1, 72)))
                out["oorder"].writerow([o, d, w, customer, _ts(entry),
                                        rng.randint(1, 10) if delivered else "", ol_cnt, 1])  # fmt: skip
                if not delivered:
                    out["new_order"].writerow([o, d, w])
                for n in range(1, ol_cnt + 1):
                    amount = f"{rng.uniform(0.01, 9999.99):.2f}"  # TPC-C says 0.00 if delivered: CH sums them
                    out["order_line"].writerow([o, d, w, n, rng.randint(1, size.items), w,
                                                delivered_at if delivered else "", 5, amount,
                                                _astr(rng, 24, 24)])  # fmt: skip
    for r, name in enumerate(REGIONS):
        out["region"].writerow([r, name, _astr(rng, 31, 115)])
    for key, name in zip(NATION_KEYS, NATIONS):
        out["nation"].writerow([key, name, region_of(name), _astr(rng, 31, 114)])
    upper = list(range(65, 91))  # supplier nations among those customers' states map to
    for s in range(SUPPLIERS):
        comment = _astr(rng, 25, 100)
        if rng.random() < 0.05:
            comment = comment[:10] + "bad" + comment[13:]
        out["supplier"].writerow([s, f"Supplier#{s:09d}", _astr(rng, 10, 40), upper[s % len(upper)],
                                  _nstr(rng, 15), f"{rng.uniform(-999.99, 9999.99):.2f}", comment])  # fmt: skip


TABLE_ORDER = ["warehouse", "district", "customer", "history", "oorder", "new_order", "item", "stock", "order_line",
               "region", "nation", "supplier"]  # fmt: skip
