r"""A string literal with a \U escape past U+10FFFF ('\U00110000', '\UFFFFFFFF': MonetDB takes both) makes
values.monetdb_string call chr() out of range: cursor.execute raises Python's ValueError / OverflowError, not a
DB-API error (PEP 249: every error of the module is a subclass of its Error), so an application catching
tique.Error crashes.

MonetDB takes both, but what it stores is no value: length() and octet_length() of the stored string differ from
one statement to the next (measured on 11.41, as for any escape whose bytes are not UTF-8), so tique refuses
the literal with a DataError in every statement on a tique table - a write would store something else, a read
compare with something else."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique


@pytest.mark.parametrize("literal", [r"'\U00110000'", r"'\UFFFFFFFF'"])
@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO {t} VALUES (1, {lit})",
        "UPDATE {t} SET s = {lit} WHERE k = 0",
        "SELECT k FROM {t} WHERE k = 0 AND s = {lit}",
    ],
)
def test_out_of_range_unicode_escape_is_a_dbapi_error(
    embedded_url: str, unique_name: Callable[[str], str], literal: str, statement: str
) -> None:
    t = unique_name("r14esc")
    conn = tique.connect(embedded_url)
    try:
        cur = conn.cursor()
        cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, s VARCHAR(20))")
        cur.execute(f"INSERT INTO {t} VALUES (0, 'x')")
        conn.commit()
        with pytest.raises(tique.DataError, match="not UTF-8 text"):
            cur.execute(statement.format(t=t, lit=literal))
    finally:
        conn.rollback()
        conn.close()
