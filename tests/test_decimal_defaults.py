"""A DEFAULT with a decimal point (DECIMAL(10,2) DEFAULT 0.00, DOUBLE DEFAULT 1.5) in CREATE TABLE and ALTER TABLE:
tique kept the default in its catalog's JSON, which has no decimals, and raised a bare TypeError; the table was
not created. Now the rows that take the default hold what plain MonetDB's twin holds, also after the catalog is
read again from the engine."""

from __future__ import annotations

import decimal
from collections.abc import Callable

import tique
from tique.catalog import TableInfo
from tique.database import Database

DDL = "CREATE TABLE {t} (k INT PRIMARY KEY, price DECIMAL(10,2) DEFAULT 0.00, x DOUBLE DEFAULT 1.5, n INT DEFAULT -2)"
ALTERS = [
    "ALTER TABLE {t} ADD COLUMN m DECIMAL(12,3) DEFAULT -12.345",
    "ALTER TABLE {t} ALTER COLUMN x SET DEFAULT 2.25",
]


def test_decimal_defaults_fill_rows_as_plain_monetdb_does(
    url: str, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    t, twin = unique_name("dd"), unique_name("dd_twin")
    conn, raw = connect(), Database.get(url).connect_raw()
    try:
        cur = conn.cursor()
        cur.execute(DDL.format(t=t))
        raw.execute(DDL.format(t=twin) + " -- tique: plain")
        for sql in ["INSERT INTO {t} (k) VALUES (1)", *ALTERS, "INSERT INTO {t} (k) VALUES (2)"]:
            cur.execute(sql.format(t=t))
            raw.execute(sql.format(t=twin))
            conn.commit()
        select = "SELECT k, price, x, n, m FROM {t} ORDER BY k"
        cur.execute(select.format(t=t))
        got = [tuple(r) for r in cur.fetchall()]
        assert got == [tuple(r) for r in raw.execute(select.format(t=twin)).rows]
        assert got[1] == (2, decimal.Decimal("0.00"), 2.25, -2, decimal.Decimal("-12.345"))
        info = conn.db.catalog.lookup(raw, conn.db.default_schema, t)
        assert info is not None
        again = TableInfo.from_row(info.table_id, info.schema, info.name, info.kind, info.spec_json())
        assert [c.default for c in again.columns] == [c.default for c in info.columns]
        assert isinstance(again.column("price").default, decimal.Decimal)
        conn.commit()
    finally:
        raw.close()
