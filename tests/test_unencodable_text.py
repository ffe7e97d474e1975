"""A str with no UTF-8 form (a lone surrogate, as os.fsdecode gives for bytes that are not UTF-8) as a parameter,
in the statement text or in a bulk-loaded row: a DataError at that statement, and the transaction's earlier writes
stay. It was a bare UnicodeEncodeError, raised at the next read or at COMMIT after the INSERT was buffered, and
COMMIT then lost the transaction's earlier writes."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique

BAD = "file\udcff.txt"


def test_a_lone_surrogate_is_refused_at_its_statement_and_loses_nothing(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    t = unique_name("sur")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, s VARCHAR(40))")
    conn.commit()
    cur.execute(f"INSERT INTO {t} VALUES (1, 'earlier')")
    with pytest.raises(tique.DataError, match="no UTF-8 form"):
        cur.execute(f"INSERT INTO {t} VALUES (%s, %s)", (2, BAD))
    with pytest.raises(tique.DataError, match="no UTF-8 form"):
        cur.execute(f"SELECT k FROM {t} WHERE s IN %(names)s", {"names": ["a", BAD]})
    with pytest.raises(tique.DataError, match="statement"):
        cur.execute(f"INSERT INTO {t} VALUES (3, '{BAD}')")
    cur.execute(f"SELECT k, s FROM {t}")
    assert cur.fetchall() == [(1, "earlier")]
    conn.commit()
    with pytest.raises(tique.DataError, match="no UTF-8 form"):
        conn.bulk_load(t, [(10, "fine"), (11, BAD)])
    cur.execute(f"SELECT k, s FROM {t} ORDER BY k")
    assert cur.fetchall() == [(1, "earlier")]
    conn.commit()
