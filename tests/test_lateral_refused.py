"""LATERAL over a tique table is refused with a clear error (MonetDB 11.41 answered a LATERAL subquery over a
snapshot wrongly: rows deleted in the snapshot came back, counts differed), the transaction goes on, and the
rewrite the message suggests (a correlated subquery) answers as plain MonetDB does. LATERAL over plain tables
only is MonetDB's own."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique
from tique.database import Database

LATERAL = "SELECT a.k, l.c FROM {t} a, LATERAL (SELECT COUNT(*) AS c FROM {t} b WHERE b.k < a.k) AS l ORDER BY a.k"
CORRELATED = "SELECT a.k, (SELECT COUNT(*) FROM {t} b WHERE b.k < a.k) FROM {t} a ORDER BY a.k"


def test_lateral_over_a_tique_table_is_refused_and_the_correlated_form_answers_right(
    url: str, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    t, twin = unique_name("lat"), unique_name("lat_twin")
    conn, raw = connect(), Database.get(url).connect_raw()
    try:
        cur = conn.cursor()
        cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT)")
        conn.commit()
        conn.bulk_load(t, [(i, i) for i in range(1, 7)])
        cur.execute(f"DELETE FROM {t} WHERE k = 3")
        conn.commit()
        raw.execute(f"CREATE TABLE {twin} (k INT PRIMARY KEY, v INT) -- tique: plain")
        raw.execute(f"INSERT INTO {twin} VALUES (1, 1), (2, 2), (4, 4), (5, 5), (6, 6)")
        cur.execute(f"UPDATE {t} SET v = 0 WHERE k = 1")
        with pytest.raises(tique.NotSupportedError, match="LATERAL"):
            cur.execute(LATERAL.format(t=t))
        cur.execute(f"SELECT v FROM {t} WHERE k = 1")  # the transaction goes on, with its write
        assert cur.fetchall() == [(0,)]
        cur.execute(CORRELATED.format(t=t))
        assert [tuple(r) for r in cur.fetchall()] == [tuple(r) for r in raw.execute(CORRELATED.format(t=twin)).rows]
        cur.execute(LATERAL.format(t=twin))  # plain tables only: MonetDB's own
        assert [tuple(r) for r in cur.fetchall()] == [tuple(r) for r in raw.execute(LATERAL.format(t=twin)).rows]
        conn.commit()
    finally:
        raw.close()
