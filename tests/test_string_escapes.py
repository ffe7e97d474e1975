"""String literals with backslash escapes are stored as MonetDB stores them: MonetDB 11.41 reads escapes in every
string literal (\\n, \\t, \\\\, octal, \\x, \\u...; a NUL ends the string), unlike the SQL standard. tique computed
INSERT values, held rows' new values and DEFAULTs from the literal's text unprocessed: 'c:\\\\temp' was stored with
two backslashes, and a later key lookup written the same way found nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

import tique
from tique.database import Database
from tique.engine.base import RawConnection

# literal texts (between the quotes), as an application would write them in SQL
ESCAPED = [
    r"c:\\temp",
    r"line1\nline2",
    r"tab\there",
    r"\101\x42\u0043",
    r"\U0001F600 smile",
    r"\q\v\e",
    r"ab\0cd",
    r"\1234",
    r"\x414",
    r"end\\",
    r"a\"b",
]


@pytest.fixture
def tables(
    url: str, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> Iterator[tuple[tique.Connection, RawConnection, str, str]]:
    t, twin = unique_name("esc"), unique_name("esc_twin")
    conn, raw = connect(), Database.get(url).connect_raw()
    ddl = "CREATE TABLE {t} (k VARCHAR(30) PRIMARY KEY, s VARCHAR(30), d VARCHAR(10) DEFAULT 'a\\\\b\\tc')"
    conn.cursor().execute(ddl.format(t=t))
    conn.commit()
    raw.execute(ddl.format(t=twin) + " -- tique: plain")
    try:
        yield conn, raw, t, twin
    finally:
        raw.close()


def both(conn: tique.Connection, raw: RawConnection, t: str, twin: str, sql: str) -> None:
    conn.cursor().execute(sql.format(t=t))
    raw.execute(sql.format(t=twin))


def rows_of(conn: tique.Connection, raw: RawConnection, t: str, twin: str) -> tuple[list[tuple], list[tuple]]:
    cur = conn.cursor()
    cur.execute(f"SELECT k, s, d FROM {t} ORDER BY k")
    got = [tuple(r) for r in cur.fetchall()]
    conn.commit()
    return got, [tuple(r) for r in raw.execute(f"SELECT k, s, d FROM {twin} ORDER BY k").rows]


def test_inserted_escapes_are_stored_as_monetdb_stores_them(
    tables: tuple[tique.Connection, RawConnection, str, str],
) -> None:
    conn, raw, t, twin = tables
    for i, text in enumerate(ESCAPED):
        both(conn, raw, t, twin, f"INSERT INTO {{t}} (k, s) VALUES ('{text}', 'v{i}\\t{i}')")
    conn.commit()
    got, want = rows_of(conn, raw, t, twin)
    assert got == want


def test_keys_written_with_escapes_are_found_and_updated(
    tables: tuple[tique.Connection, RawConnection, str, str],
) -> None:
    conn, raw, t, twin = tables
    for text in ESCAPED:
        both(conn, raw, t, twin, f"INSERT INTO {{t}} (k, s) VALUES ('{text}', 'old')")
    conn.commit()
    cur = conn.cursor()
    for text in ESCAPED:
        cur.execute(f"SELECT s FROM {t} WHERE k = '{text}'")  # the row is held now: the UPDATE is computed here
        assert cur.fetchall() == [("old",)], text
        both(conn, raw, t, twin, f"UPDATE {{t}} SET s = 'new\\\\z\\t{len(text)}' WHERE k = '{text}'")
    for text in ESCAPED[:3]:  # in the same transaction: its own buffered rows answer
        cur.execute(f"SELECT s FROM {t} WHERE k = '{text}'")
        assert len(cur.fetchall()) == 1, text
    conn.commit()
    got, want = rows_of(conn, raw, t, twin)
    assert got == want
