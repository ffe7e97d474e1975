"""Reading the engine's TIMESTAMP text: the fast path (datetime.fromisoformat for the usual form) answers exactly
as the general parser does, refusals included, for every shape of text MonetDB prints or could."""

from __future__ import annotations

import datetime
import random

import pytest

from tique.errors import DataError
from tique.rewrite.values import parse_temporal, parse_timestamp_text


def outcome(parse: object, text: str) -> object:
    try:
        return parse(text)  # type: ignore[operator]
    except (DataError, ValueError) as exc:
        return type(exc)


EDGES = [
    "2026-11-26 01:48:42.123456",
    "2026-11-26 01:48:42",
    "2026-11-26 01:48:42.100000",
    "0001-01-01 00:00:00.000000",
    "9999-12-31 23:59:59.999999",
    "0000-01-01 00:00:00",  # year 0: refused as tique keeps years 1 to 9999
    "2026-11-26 24:00:00.000000",  # the hour 24 MonetDB makes of rounding up the day's last second
    "2026-11-26 23:59:60",  # a leap second
    "2026-02-30 00:00:00",
    "2026-13-01 00:00:00",
    "2026-11-26 01:48:42.123",  # 3 digits: fromisoformat takes them too, the general parser rounds
    "2026-11-26 01:48:42.1234567",
    "2026-11-26T01:48:42",
    " 2026-11-26 01:48:42",
    "-0044-03-15 12:00:00",
    "12026-11-26 01:48:42",
    "2026-11-26 01:48:42+01:00",
    "٢٠٢٦-11-26 01:48:42",  # Arabic-Indic digits: not the engine's text
    "2026-11-26",
]


@pytest.mark.parametrize("text", EDGES)
def test_edges_read_as_the_general_parser_reads_them(text: str) -> None:
    assert outcome(lambda t: parse_temporal(t, "TIMESTAMP"), text) == outcome(parse_timestamp_text, text)


def test_random_timestamps_read_as_the_general_parser_reads_them() -> None:
    rng = random.Random(7)
    for _ in range(20_000):
        text = (
            f"{rng.randint(0, 9999):04d}-{rng.randint(0, 13):02d}-{rng.randint(0, 32):02d} "
            f"{rng.randint(0, 24):02d}:{rng.randint(0, 60):02d}:{rng.randint(0, 60):02d}"
        )
        if rng.random() < 0.7:
            text += f".{rng.randint(0, 999_999):06d}"
        got = outcome(lambda t: parse_temporal(t, "TIMESTAMP"), text)
        assert got == outcome(parse_timestamp_text, text), text


def test_the_usual_text_is_exact() -> None:
    assert parse_temporal("2026-11-26 01:48:42.000007", "TIMESTAMP") == datetime.datetime(2026, 11, 26, 1, 48, 42, 7)


def test_the_usual_text_skips_the_general_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    from tique.rewrite import values

    def general(text: str) -> datetime.datetime:
        raise AssertionError(f"general parser asked for {text!r}")

    monkeypatch.setattr(values, "parse_timestamp_text", general)
    assert parse_temporal("2026-11-26 01:48:42", "TIMESTAMP") == datetime.datetime(2026, 11, 26, 1, 48, 42)
