"""Raw strings R'...' (fc8cd89 "raw R'...' strings too") are rewritten for the parser only when the statement holds
a backslash somewhere (parse.monetdb_quotes returns early otherwise): R'plain', R'it''s' or r'x' in a statement
without a backslash is refused ("tique's SQL parser cannot read this statement, though MonetDB can", or "cannot
insert into view") where MonetDB runs it. Each statement runs on a tique table and a plain twin."""

from __future__ import annotations

from collections.abc import Callable

import tique
from tique.database import Database

DDL = "CREATE TABLE {t} (k VARCHAR(20) PRIMARY KEY, v INT)"
STATEMENTS = [
    "INSERT INTO {t} VALUES (R'plain', 1)",
    "INSERT INTO {t} VALUES (R'it''s', 2)",
    "INSERT INTO {t} VALUES (r'x', 3)",
    "UPDATE {t} SET v = v + 10 WHERE k = R'plain'",
    "DELETE FROM {t} WHERE k = r'x'",
]


def test_raw_strings_without_a_backslash(embedded_url: str, unique_name: Callable[[str], str]) -> None:
    conn = tique.connect(embedded_url)
    raw = Database.get(embedded_url).connect_raw()
    t, p = unique_name("r14raw_t"), unique_name("r14raw_p")
    try:
        cur = conn.cursor()
        cur.execute(DDL.format(t=t))
        conn.commit()
        raw.execute(DDL.format(t=p) + " -- tique: plain")
        for statement in STATEMENTS:
            raw.execute(statement.format(t=p))
            cur.execute(statement.format(t=t))
        conn.commit()
        want = [tuple(r) for r in raw.execute(f"SELECT k, v FROM {p} ORDER BY k").rows]
        cur.execute(f"SELECT k, v FROM {t} ORDER BY k")
        assert cur.fetchall() == want
        query = "SELECT v FROM {t} WHERE k = R'it''s'"
        cur.execute(query.format(t=t))
        assert cur.fetchall() == [tuple(r) for r in raw.execute(query.format(t=p)).rows] == [(2,)]
        cur.execute("SELECT R'x'")
        assert cur.fetchall() == [("x",)]
    finally:
        conn.rollback()
        conn.close()
        raw.close()
