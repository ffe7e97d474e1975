"""UPDATE ... SET c = DEFAULT sets c's default, as MonetDB does (tique sent the word to the engine inside its
rewrite, a syntax error; found by a differential review). A column without a default is refused as MonetDB
refuses it; a generated column's is refused by tique."""

from __future__ import annotations

import datetime
from collections.abc import Callable

import pytest

import tique

Connect = Callable[..., tique.Connection]


@pytest.mark.parametrize("read_first", [False, True])  # the engine computes the new row, or the row held does
def test_set_default_as_a_plain_monetdb_table_does(
    connect: Connect, unique_name: Callable[[str], str], read_first: bool
) -> None:
    conn = connect(on_statement_error="continue")
    cur = conn.cursor()
    tx, plain = unique_name("sd"), unique_name("sdp")
    columns = (
        "(k INT PRIMARY KEY, i INT DEFAULT 7, s VARCHAR(5) DEFAULT 'ab', d DECIMAL(6,2), "
        "ts TIMESTAMP DEFAULT CURRENT_TIMESTAMP)"
    )
    for t, comment in ((tx, ""), (plain, " -- tique: plain")):
        cur.execute(f"CREATE TABLE {t} {columns}{comment}")
        cur.execute(f"INSERT INTO {t} VALUES (1, 1, 'x', 1.5, TIMESTAMP '2000-01-01 00:00:00')")
    conn.commit()
    started = datetime.datetime.now() - datetime.timedelta(minutes=5)
    got = []
    for t in (tx, plain):
        if read_first:
            cur.execute(f"SELECT * FROM {t} WHERE k = 1")
        cur.execute(f"UPDATE {t} SET i = DEFAULT, s = DEFAULT, ts = DEFAULT WHERE k = 1")
        assert cur.rowcount == 1 or (t == plain and conn.db.url.kind != "embedded")  # MAPI: no plain count
        with pytest.raises(tique.ProgrammingError, match="no valid default"):
            cur.execute(f"UPDATE {t} SET d = DEFAULT WHERE k = 1")
        conn.commit()
        cur.execute(f"SELECT k, i, s, d, ts > %s FROM {t}", (started,))
        got.append(cur.fetchall())
    assert got[0] == got[1] == [(1, 7, "ab", 1.5, True)]


def test_a_generated_columns_default_is_refused(connect: Connect, unique_name: Callable[[str], str]) -> None:
    conn = connect(on_statement_error="continue")
    cur = conn.cursor()
    t = unique_name("sdg")
    cur.execute(f"CREATE TABLE {t} (k INT AUTO_INCREMENT PRIMARY KEY, v INT)")
    cur.execute(f"INSERT INTO {t} (v) VALUES (1)")
    with pytest.raises(tique.NotSupportedError, match="generated"):
        cur.execute(f"UPDATE {t} SET k = DEFAULT")


def test_a_default_holding_a_quote(connect: Connect, unique_name: Callable[[str], str]) -> None:
    """The default's literal was quoted as pymonetdb quotes ('it\\'s') and read back by a reader that ends it at the
    quote: sqlglot's TokenError, no DB-API error (found by a review)."""
    conn = connect(on_statement_error="continue")
    cur = conn.cursor()
    t = unique_name("sdq")
    cur.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, s VARCHAR(10) DEFAULT 'it''s', ts TIMESTAMP DEFAULT NOW())")
    cur.execute(f"INSERT INTO {t} VALUES (1, 'q', NULL), (2, DEFAULT, NULL)")
    cur.execute(f"UPDATE {t} SET s = DEFAULT WHERE id = 1")
    conn.commit()
    assert conn.execute(f"SELECT id, s FROM {t} ORDER BY id").fetchall() == [(1, "it's"), (2, "it's")]


@pytest.mark.parametrize(
    "insert",
    [
        "INSERT INTO {t} (k, v, n) VALUES (2, DEFAULT, 0)",  # literal rows, kept in the client
        "INSERT INTO {t} (k, n, v) VALUES (2, 0, 1 + 1), (3, 0, DEFAULT)",  # rows the engine computes
        "INSERT INTO {t} (k, n, v, ts) VALUES (2, 0, DEFAULT, DEFAULT)",  # beside a default the engine evaluates
        "INSERT INTO {t} (k, n) VALUES (2, DEFAULT)",  # NOT NULL
    ],
)
def test_insert_of_default_where_there_is_none_is_refused_as_monetdb_refuses_it(
    connect: Connect, unique_name: Callable[[str], str], insert: str
) -> None:
    """MonetDB refuses the DEFAULT keyword for a column without a default, nullable or not (its
    'INSERT INTO: column ... has no valid default value'); tique stored NULL, or raised NotNullViolation.
    DEFAULT VALUES and an omitted column still take NULL, as MonetDB's do."""
    conn = connect(on_statement_error="continue")
    cur = conn.cursor()
    tx, plain = unique_name("idn"), unique_name("idnp")
    columns = "(k INT PRIMARY KEY, v INT, n INT NOT NULL, ts TIMESTAMP DEFAULT NOW())"
    for t, comment in ((tx, ""), (plain, " -- tique: plain")):
        cur.execute(f"CREATE TABLE {t} {columns}{comment}")
        cur.execute(f"INSERT INTO {t} (k, n) VALUES (1, 0)")
    conn.commit()
    for t in (tx, plain):
        with pytest.raises(tique.ProgrammingError, match="has no valid default value") as failed:
            cur.execute(insert.format(t=t))
        assert not isinstance(failed.value, tique.IntegrityError)
    conn.commit()
    for t in (tx, plain):
        assert conn.execute(f"SELECT k, v FROM {t}").fetchall() == [(1, None)]
