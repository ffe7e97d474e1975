r"""MonetDB reads \xhh and \ooo in a string literal as one *byte* each (so '\xc3\xa9' is the two UTF-8 bytes of
'é', one character), while tique's values.monetdb_string turns each into the code point chr(hh): an INSERT on a
tique table stores 'Ã©' where MonetDB stores 'é', and the row is then not found by the same literal. Each
statement runs on a tique table and a plain twin: the stored rows must be equal."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique
from tique.database import Database

DDL = "CREATE TABLE {t} (k INT PRIMARY KEY, s VARCHAR(20))"


@pytest.mark.parametrize(
    "literal",
    [r"'\xc3\xa9'", r"'\303\251'", r"'caf\xc3\xa9'", r"E'\xc3\xa9'"],
)
def test_byte_escapes_stored_as_monetdb_stores_them(
    embedded_url: str, unique_name: Callable[[str], str], literal: str
) -> None:
    conn = tique.connect(embedded_url)
    raw = Database.get(embedded_url).connect_raw()
    t, p = unique_name("r14b_t"), unique_name("r14b_p")
    try:
        cur = conn.cursor()
        cur.execute(DDL.format(t=t))
        conn.commit()
        raw.execute(DDL.format(t=p) + " -- tique: plain")
        statement = "INSERT INTO {t} VALUES (1, " + literal + ")"
        raw.execute(statement.format(t=p))
        cur.execute(statement.format(t=t))
        conn.commit()
        want = [tuple(r) for r in raw.execute(f"SELECT k, s FROM {p}").rows]
        cur.execute(f"SELECT k, s FROM {t}")
        assert cur.fetchall() == want
        # the row is found again by the literal it was written with
        query = "SELECT k FROM {t} WHERE s = " + literal
        want = [tuple(r) for r in raw.execute(query.format(t=p)).rows]
        assert want == [(1,)]
        cur.execute(query.format(t=t))
        assert cur.fetchall() == want
        conn.commit()
    finally:
        conn.rollback()
        conn.close()
        raw.close()


def test_byte_escaped_key_is_a_duplicate(embedded_url: str, unique_name: Callable[[str], str]) -> None:
    """'\xc3\xa9' and 'é' are the same key to MonetDB: the second INSERT must fail as on the plain twin."""
    ddl = "CREATE TABLE {t} (s VARCHAR(20) PRIMARY KEY)"
    conn = tique.connect(embedded_url)
    raw = Database.get(embedded_url).connect_raw()
    t, p = unique_name("r14k_t"), unique_name("r14k_p")
    try:
        cur = conn.cursor()
        cur.execute(ddl.format(t=t))
        conn.commit()
        raw.execute(ddl.format(t=p) + " -- tique: plain")
        raw.execute(f"INSERT INTO {p} VALUES ('é')")
        with pytest.raises(tique.IntegrityError):
            raw.execute(f"INSERT INTO {p} VALUES ('\\xc3\\xa9')")
        cur.execute(f"INSERT INTO {t} VALUES ('é')")
        conn.commit()
        with pytest.raises(tique.IntegrityError):
            cur.execute(f"INSERT INTO {t} VALUES ('\\xc3\\xa9')")
            conn.commit()
    finally:
        conn.rollback()
        conn.close()
        raw.close()


@pytest.mark.parametrize(
    "literal",
    [r"'\xe9'", r"'a\xffb'", r"'\xc3'", r"'\400'", r"'\ud800'", r"'\u0000x'", r"'\xc3\u00a9'", r"'\xed\xa0\x80'"],
)
@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO {t} VALUES (1, {lit})",
        "UPDATE {t} SET s = {lit} || s WHERE k = 0",
        "SELECT k FROM {t} WHERE s = {lit}",
        "DELETE FROM {t} WHERE s <> {lit}",
    ],
)
def test_escapes_that_are_not_utf8_are_refused(
    embedded_url: str, unique_name: Callable[[str], str], literal: str, statement: str
) -> None:
    """Bytes that are not UTF-8 (and \\u0000, a surrogate): MonetDB stores them as a value whose length and
    octet_length vary between statements (measured), so there is no value to store or match: a DataError."""
    conn = tique.connect(embedded_url)
    t = unique_name("r14u_t")
    try:
        cur = conn.cursor()
        cur.execute(DDL.format(t=t))
        cur.execute(f"INSERT INTO {t} VALUES (0, 'x')")
        conn.commit()
        with pytest.raises(tique.DataError, match="not UTF-8 text"):
            cur.execute(statement.format(t=t, lit=literal))
    finally:
        conn.rollback()
        conn.close()


@pytest.mark.parametrize("literal", [r"'\101'", r"'\1x'", r"'\x4'", r"'a\x00b'", r"'\0x'", r"'\u00e9\xc3\xa9'"])
def test_valid_escapes_match_the_plain_twin(embedded_url: str, unique_name: Callable[[str], str], literal: str) -> None:
    """Short octal and hex escapes, a NUL that ends the string, \\u and bytes in one literal: as MonetDB."""
    conn = tique.connect(embedded_url)
    raw = Database.get(embedded_url).connect_raw()
    t, p = unique_name("r14v_t"), unique_name("r14v_p")
    try:
        cur = conn.cursor()
        cur.execute(DDL.format(t=t))
        conn.commit()
        raw.execute(DDL.format(t=p) + " -- tique: plain")
        raw.execute(f"INSERT INTO {p} VALUES (1, {literal})")
        cur.execute(f"INSERT INTO {t} VALUES (1, {literal})")
        conn.commit()
        want = [tuple(r) for r in raw.execute(f"SELECT k, s, length(s) FROM {p}").rows]
        cur.execute(f"SELECT k, s, length(s) FROM {t}")
        assert cur.fetchall() == want
    finally:
        conn.rollback()
        conn.close()
        raw.close()


def test_byte_escaped_default(embedded_url: str, unique_name: Callable[[str], str]) -> None:
    """A DEFAULT literal with byte escapes is the value MonetDB's own DEFAULT gives."""
    ddl = "CREATE TABLE {t} (k INT PRIMARY KEY, s VARCHAR(20) DEFAULT 'caf\\xc3\\xa9')"
    conn = tique.connect(embedded_url)
    raw = Database.get(embedded_url).connect_raw()
    t, p = unique_name("r14d_t"), unique_name("r14d_p")
    try:
        cur = conn.cursor()
        cur.execute(ddl.format(t=t))
        conn.commit()
        raw.execute(ddl.format(t=p) + " -- tique: plain")
        raw.execute(f"INSERT INTO {p} (k) VALUES (1)")
        cur.execute(f"INSERT INTO {t} (k) VALUES (1)")
        conn.commit()
        want = [tuple(r) for r in raw.execute(f"SELECT k, s FROM {p}").rows]
        assert want == [(1, "café")]
        cur.execute(f"SELECT k, s FROM {t}")
        assert cur.fetchall() == want
    finally:
        conn.rollback()
        conn.close()
        raw.close()
