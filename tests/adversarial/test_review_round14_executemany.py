"""executemany (adab445) fails the whole transaction when a parameter set fails after earlier sets wrote rows,
"as MonetDB aborts it under pymonetdb". That holds for errors MonetDB raises; a parameter set pymonetdb refuses in
the client (a wrong number of values: Python's % raises TypeError before anything is sent) leaves MonetDB's
transaction as it was, so under pymonetdb a COMMIT after catching the error keeps the earlier sets. tique fails the
transaction and the COMMIT raises TransactionFailed: the earlier sets are lost."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique


def test_a_set_refused_before_reaching_the_engine_does_not_fail_the_transaction(
    embedded_url: str, unique_name: Callable[[str], str]
) -> None:
    t = unique_name("r14em")
    conn = tique.connect(embedded_url)
    try:
        cur = conn.cursor()
        cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT)")
        conn.commit()
        with pytest.raises(tique.ProgrammingError):
            cur.executemany(f"INSERT INTO {t} VALUES (%s, %s)", [(1, 1), (2,)])
        conn.commit()  # pymonetdb: MonetDB never saw the second set; the first is committed
        cur.execute(f"SELECT k, v FROM {t}")
        assert cur.fetchall() == [(1, 1)]
    finally:
        conn.rollback()
        conn.close()
