"""A statement run prepared (EXEC id(values), from its second use on a session) gives the same answer and writes the
same values as the statement run as text. MonetDB types a prepared statement's parameter from its context and
converts the value to that type: `b + ?` with b DECIMAL(12,2) took 26341.13 as 26341 (a balance update added
26341.00 from its second run on), `ts = ?` dropped a timestamp's fraction, `f = ?` rounded a double to a REAL,
and a string or integer too large for the column's type failed instead of matching nothing."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import tique

Connect = Callable[..., tique.Connection]

CASES: list[tuple[str, tuple[Any, ...]]] = [
    ("SELECT b + %s FROM {t} WHERE k = 1", (Decimal("26341.13"),)),
    ("SELECT b - %s FROM {t} WHERE k = 1", (Decimal("0.005"),)),
    ("SELECT b * %s FROM {t} WHERE k = 1", (Decimal("1.5"),)),
    ("SELECT i + %s FROM {t} WHERE k = 1", (Decimal("2.5"),)),
    ("SELECT b + %s FROM {t} WHERE k = 1", (1.5,)),
    ("SELECT k FROM {t} WHERE k = 1 AND b = %s", (Decimal("0.001"),)),
    ("SELECT k FROM {t} WHERE k = 1 AND f = %s", (1.50000001,)),
    ("SELECT k FROM {t} WHERE k = 1 AND ts = %s", (datetime.datetime(2020, 1, 1, 10, 0, 0, 123400),)),
    ("SELECT k FROM {t} WHERE k = 1 AND ts < %s", (datetime.datetime(2020, 1, 1, 10, 0, 0, 123400),)),
    ("SELECT k FROM {t} WHERE k = 1 AND ts = %s", (datetime.datetime(2020, 1, 1, 10, 0, 0, 123000),)),
    ("SELECT k FROM {t} WHERE k = 1 AND ts > %s", (datetime.datetime(2020, 1, 1, 10, 0, 0),)),
    ("SELECT k FROM {t} WHERE k = 1 AND ts0 = %s", (datetime.datetime(2020, 1, 1, 10, 0, 0, 400000),)),
    ("SELECT k FROM {t} WHERE k = 1 AND ts0 = %s", (datetime.datetime(2020, 1, 1, 10, 0, 0),)),
    ("SELECT k FROM {t} WHERE k = 1 AND ts0 < %s", (datetime.datetime(2020, 1, 1, 10, 0, 0, 1),)),
    (
        "SELECT CAST(%s AS VARCHAR(40)), ts0 FROM {t} WHERE k = 1",
        (datetime.datetime(1999, 12, 31, 23, 59, 59, 999999),),
    ),
    ("SELECT k FROM {t} WHERE k = 1 AND s = %s", ("abcdefgh",)),
    ("SELECT k FROM {t} WHERE k = 1 AND sm = %s", (70000,)),
    ("SELECT k FROM {t} WHERE k = 1 AND i = %s", (3000000000,)),
    ("SELECT k FROM {t} WHERE k = %s AND s = %s", (1, "abcde")),
]


def _table(conn: tique.Connection, name: str) -> None:
    cur = conn.cursor()
    cur.execute(
        f"CREATE TABLE {name} (k INT PRIMARY KEY, b DECIMAL(12,2), i INT, sm SMALLINT, f REAL, ts TIMESTAMP(3), "
        "ts0 TIMESTAMP(0), s VARCHAR(5))"
    )
    cur.execute(
        f"INSERT INTO {name} VALUES (1, 0, 1, 5, 1.5, TIMESTAMP '2020-01-01 10:00:00.123', "
        "TIMESTAMP '2020-01-01 10:00:00', 'abcde')"
    )
    conn.commit()


def test_prepared_reads_answer_as_text_does(connect: Connect, unique_name: Callable[[str], str]) -> None:
    name = unique_name("prep")
    prepared, text = connect(), connect(prepare=False)
    _table(prepared, name)
    for sql, params in CASES:
        statement = sql.format(t=name)
        expected = text.cursor()
        expected.execute(statement, params)
        want = expected.fetchall()
        text.commit()
        for run in range(3):  # the second and third run as EXEC
            cur = prepared.cursor()
            cur.execute(statement, params)
            assert cur.fetchall() == want, (statement, params, run)
            prepared.commit()
    assert prepared._raw.enabled  # still preparing: nothing here made the session give up on it


def test_prepared_updates_write_the_exact_value(connect: Connect, unique_name: Callable[[str], str]) -> None:
    name = unique_name("prep_upd")
    conn = connect()
    _table(conn, name)
    cur = conn.cursor()
    for _ in range(4):
        cur.execute(f"UPDATE {name} SET b = b + %s WHERE k = %s", (Decimal("26341.13"), 1))
        conn.commit()
    cur.execute(f"SELECT b FROM {name} WHERE k = 1")
    assert cur.fetchall() == [(Decimal("105364.52"),)]
    for micro in (0, 123456, 999999, 500000):  # the second and later runs are prepared
        when = datetime.datetime(2021, 3, 4, 5, 6, 7, micro)
        cur.execute(f"UPDATE {name} SET ts = %s, ts0 = %s WHERE i = %s", (when, when, 1))  # the engine reads
        conn.commit()
        cur.execute(f"SELECT ts, ts0 FROM {name} WHERE k = 1")
        text = connect(prepare=False)
        tcur = text.cursor()
        tcur.execute("SELECT CAST(%s AS TIMESTAMP(3)), CAST(%s AS TIMESTAMP(0))", (when, when))
        assert cur.fetchall() == tcur.fetchall(), micro
        text.close()
        conn.commit()
