"""Attacks on two changes: drops_prepared's one pattern after each ';' (engine/base.py) and the COUNT of a quiet
table's Storage before it is read whole (transaction.py _read_every / _stored_rows, shared_rows.refuse_whole).

drops_prepared reads every text a session sends, string literals included (a flush's INSERT carries the user's
values): its time must not depend on what a value holds. One pattern `;(?:\\s|/\\*.*?\\*/|--...)*(?:words)` let a
comment end at any later `*/`, so a failed search tried every way to group k comments: 2^k steps (k = 20: 0.35 s,
k = 40: days, the GIL held), and scanned an unclosed `/*` to the end of the text once per ';' before it."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import pytest

import tique
from tests.adversarial.test_shared_rows_attacks import bulk_loaded, record_parts
from tests.adversarial.test_shared_rows_never_stale import _quiet_at_once, hits, read  # noqa: F401
from tests.conftest import ServeProcess
from tique.engine.base import _DROPPING_HEADS, _head, drops_prepared

_ROOT = Path(tique.__file__).resolve().parents[1]


def _in_a_process(script: str, stdin: str, timeout: float) -> str:
    """The output of ``script`` run by a new interpreter (a run-away regex holds the GIL: no thread can stop it)."""
    env = {**os.environ, "PYTHONPATH": str(_ROOT)}
    try:
        done = subprocess.run(
            [sys.executable, "-c", script], input=stdin, capture_output=True, text=True, timeout=timeout, env=env
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {timeout} s")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


_COMMENTS = {
    # k comments after a ';' and no word: every grouping of them was tried
    "empty comments": ("SELECT 1;" + "/**/" * 40 + "x", False),
    "a value of CSS": ("INSERT INTO t VALUES (1, 'a{color:red};" + "/* note */\n" * 40 + "b{}')", False),
    "comments, then a word": ("SELECT 1;" + "/* c */ " * 40 + "DROP TABLE t", True),
    # a ';' before each of many unclosed '/*' (or '--' on one long line): each scanned to the end once per ';'
    "unclosed comments": ("INSERT INTO t VALUES ('" + ";/*" * 40_000 + "', 'reset')", False),
    "dashes on one line": ("INSERT INTO t VALUES ('" + ";--" * 40_000 + "', 'reset')", False),
}


@pytest.mark.parametrize("case", list(_COMMENTS))
def test_drops_prepared_takes_linear_time_whatever_a_literal_holds(case: str) -> None:
    sql, drops = _COMMENTS[case]
    script = "import sys; from tique.engine.base import drops_prepared; print(drops_prepared(sys.stdin.read()))"
    assert _in_a_process(script, sql, timeout=15) == str(drops)


def test_a_string_value_of_comments_does_not_stop_the_client(
    server: ServeProcess, unique_name: Callable[[str], str]
) -> None:
    """The same through tique over MAPI: an ordinary INSERT of a user's text, whose flush drops_prepared reads."""
    table = unique_name("dp_value")
    value = "x;" + "/**/" * 40 + " y"
    script = f"""
import sys, tique
conn = tique.connect({server.url!r})
cur = conn.cursor()
cur.execute("CREATE TABLE {table} (id INT PRIMARY KEY, body VARCHAR(1000))")
conn.commit()
cur.execute("INSERT INTO {table} VALUES (%s, %s)", (1, sys.stdin.read()))
conn.commit()
cur.execute("SELECT body FROM {table} WHERE id = 1")
print(cur.fetchall()[0][0].count("/**/"))
conn.close()
"""
    assert _in_a_process(script, value, timeout=30) == "40"


def _split_at_each_semicolon(sql: str) -> bool:
    """drops_prepared before ee373cb."""
    return any(_head(part).startswith(_DROPPING_HEADS) for part in sql.split(";"))


def test_drops_prepared_finds_every_head_the_split_text_found() -> None:
    """No false negative against the old reading, on random texts of ';', blanks (Unicode ones too), comments
    (closed, unclosed, nested, split by ';'), words and parts of them. (Left out: letters whose upper() gives a
    word's last letter plus a combining mark, 'seẗ' -> 'SET̈': MonetDB reads such a word as an identifier, and the
    statement fails, which drops the prepared statements anyway.)"""
    pieces = [";", ";", " ", "\n", "\t", "\r", "\f", "\v", "\xa0", "\u2003", "\x1c", "\x85", "/*", "*/", "*", "/",
              "-", "--", "'", "x", "drop", "DROP", "Set", "set", "ALTER", "create", "grant", "revoke", "comment",
              "deallocate", "dealloc", "select", "1", "s", "et", "\u017fet", "ß", "é"]  # fmt: skip
    rng = random.Random(18)
    for _ in range(60_000):
        sql = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        if _split_at_each_semicolon(sql):
            assert drops_prepared(sql), f"{sql!r}: a statement's head the old reading found is missed"
    long = "INSERT INTO t VALUES " + ", ".join(f"({i}, 'a;b; c')" for i in range(8000))
    for tail in ("; \u017fet x = 1", ";\x1c/* a; b */ -- c;\n\v Drop TABLE t", "; /* a /* b */ CREATE TABLE u (i INT)"):
        assert drops_prepared(long + tail), tail


def test_a_storage_of_rows_deleted_in_the_cache_is_still_read_whole(
    url: str,
    connect: Callable[..., tique.Connection],
    unique_name: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Storage holds 29 rows, 26 of them deleted in the Cache (not yet checkpointed): the snapshot's 3 rows fit in
    the 5 kept. Storage's COUNT alone refused the table for good (too_big), so every absent key went to the
    engine again; a quiet table that fits must be read whole, and its absent keys answered from the rows kept."""
    parts = record_parts(monkeypatch, after=3, part=4, keep=5, url=url)
    table = unique_name("sr_deleted")
    conn = bulk_loaded(connect, table, rows=30)
    conn.cursor().execute(f"DELETE FROM {table} WHERE id > 3")
    conn.commit()
    reader = connect()
    for _ in range(4):
        for k in range(1, 30):
            assert read(reader, table, k) == ((f"n{k}", Decimal(f"{k}.50")) if k <= 3 else None)
        reader.commit()
    assert parts == [(0, 3)], f"a table whose snapshot fits was not read whole: {parts}"
    before = hits(url)
    for k in range(4, 30):
        assert read(reader, table, k) is None
    reader.commit()
    assert hits(url) - before == 26, "absent keys of a table read whole went to the engine"
