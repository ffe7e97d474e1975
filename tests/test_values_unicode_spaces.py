"""A string written into a number or BOOLEAN column is read as MonetDB reads it: the ASCII spaces around it are
skipped, while another Unicode space (no-break, em space, U+001C) or a non-ASCII digit, which Python's own
conversions take, is refused as MonetDB refuses it (tique stored TRUE for '\\xa0true' where the engine failed the
INSERT). The oracle is a plain MonetDB twin given the same INSERT."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import tique
from tests.test_key_reads_differential import answer, rows_of, twin_tables
from tique.params import inline

STRINGS = [" true ", "\\ttrue\\n", "\\xa0true", "true\\xa0", "\\u2003true", "\\x1ctrue", " 1 ", "\\xa01", "\\u0661",
           " 2.5 ", "\\xa02.5", "\\u20032.5"]  # fmt: skip


@pytest.mark.parametrize("column", ["BOOLEAN", "INT", "DECIMAL(5,2)", "DOUBLE"])
def test_strings_with_other_spaces_are_refused_as_the_engine_refuses_them(
    connect: Callable[..., tique.Connection], url: str, unique_name: Callable[[str], str], column: str
) -> None:
    with twin_tables(connect, url, unique_name, f"(k INT PRIMARY KEY, v {column})") as (conn, cur, raw, t, p):
        wrong = []
        for k, text in enumerate(STRINGS):
            text = text.encode().decode("unicode_escape")

            def plain(k: int, text: str) -> list[tuple[Any, ...]]:
                raw.execute(inline(f"INSERT INTO {p} VALUES (%s, %s)", (k, text)))
                return raw.execute(f"SELECT v FROM {p} WHERE k = {k}").rows

            def through_tique(k: int, text: str) -> list[tuple[Any, ...]]:
                cur.execute(f"INSERT INTO {t} VALUES (%s, %s)", (k, text))
                return rows_of(cur, f"SELECT v FROM {t} WHERE k = %s", (k,))

            # only whether a value is refused is compared: tique refuses a DECIMAL string with a DataError where the
            # engine's text reports a ProgrammingError
            want, got = (refused(answer(run, k, text)) for run in (plain, through_tique))
            conn.rollback() if got == "refused" else conn.commit()
            if got != want:
                wrong.append((repr(text), got, want))
        assert not wrong, wrong


def refused(said: Any) -> Any:
    return "refused" if isinstance(said, str) else said
