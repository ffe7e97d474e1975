"""CREATE VIEW over tique tables is expanded into snapshot reads (own writes, own snapshot), views over views,
DROP VIEW; CREATE TABLE AS SELECT makes a tique table from the snapshot."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable

import pytest

import tique
from tique.engine import open_engine


def test_view_reads_the_snapshot_and_own_writes(connect: Callable[..., tique.Connection], unique_name) -> None:
    t, v, w = unique_name("vt"), unique_name("vv"), unique_name("vw")
    a, b = connect(), connect()
    ca, cb = a.cursor(), b.cursor()
    ca.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, g INT, x INT)")
    ca.execute(f"INSERT INTO {t} VALUES (1, 1, 10), (2, 1, 20), (3, 2, 30)")
    a.commit()
    ca.execute(f"CREATE VIEW {v} AS SELECT g, SUM(x) AS total FROM {t} GROUP BY g")
    ca.execute(f"CREATE VIEW {w} AS SELECT total FROM {v} WHERE g = 1")  # a view over a view
    cb.execute(f"SELECT total FROM {w}")
    assert cb.fetchall() == [(30,)]
    ca.execute(f"INSERT INTO {t} VALUES (4, 1, 5)")
    ca.execute(f"SELECT total FROM {w}")
    assert ca.fetchall() == [(35,)]  # own write
    a.commit()
    cb.execute(f"SELECT g, total FROM {v} ORDER BY g")
    assert cb.fetchall() == [(1, 30), (2, 30)]  # b's snapshot
    b.rollback()
    cb.execute(f"SELECT total FROM {w}")
    assert cb.fetchall() == [(35,)]
    with pytest.raises(tique.NotSupportedError, match="view"):
        cb.execute(f"INSERT INTO {v} VALUES (9, 9)")
    b.rollback()
    ca.execute(f"DROP VIEW {w}")
    ca.execute(f"DROP VIEW {v}")
    with pytest.raises(tique.DatabaseError):
        ca.execute(f"SELECT * FROM {v}")
    a.rollback()


def test_view_outside_clients(url: str, connect: Callable[..., tique.Connection], unique_name) -> None:
    t, v = unique_name("vo"), unique_name("vov")
    a = connect()
    ca = a.cursor()
    ca.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, x INT)")
    ca.execute(f"INSERT INTO {t} VALUES (1, 10)")
    a.commit()
    ca.execute(f"CREATE VIEW {v} AS SELECT id, x * 2 AS y FROM {t}")
    engine = open_engine(url)
    raw = engine.connect()
    try:
        assert [tuple(r) for r in raw.execute(f'SELECT * FROM "{v}"').rows] == [(1, 20)]
    finally:
        engine.close()  # closes raw and the session an embedded engine keeps for itself


def test_create_table_as_select(connect: Callable[..., tique.Connection], unique_name) -> None:
    t, u, e = unique_name("ct"), unique_name("ctu"), unique_name("cte")
    a, b = connect(), connect()
    ca, cb = a.cursor(), b.cursor()
    ca.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, v VARCHAR(5))")
    ca.execute(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    a.commit()
    ca.execute(f"INSERT INTO {t} VALUES (3, 'c')")  # a's own, uncommitted
    cb.execute(f"CREATE TABLE {u} AS SELECT id, v FROM {t} WHERE id > 1 WITH DATA")  # b's snapshot
    cb.execute(f"CREATE TABLE {e} AS SELECT * FROM {t} WITH NO DATA")
    a.rollback()
    cb.execute(f"SELECT id, v FROM {u} ORDER BY id")
    assert cb.fetchall() == [(2, "b")]
    cb.execute(f"SELECT COUNT(*) FROM {e}")
    assert cb.fetchone()[0] == 0
    cb.execute(f"INSERT INTO {e} VALUES (7, 'x')")  # a tique table: transactional
    ca.execute(f"SELECT COUNT(*) FROM {e}")
    assert ca.fetchone()[0] == 0
    b.commit()
    a.rollback()
    ca.execute(f"SELECT * FROM {e}")
    assert [tuple(r) for r in ca.fetchall()] == [(7, "x")]


def test_create_table_as_keeps_types_and_values(connect: Callable[..., tique.Connection], unique_name) -> None:
    t, u = unique_name("ctt"), unique_name("ctt_u")
    conn = connect()
    cur = conn.cursor()
    cur.execute(
        f"CREATE TABLE {t} (id INT PRIMARY KEY, s VARCHAR(10), d DECIMAL(10,2), ts TIMESTAMP, b BOOLEAN, f DOUBLE, "
        "dt DATE, c CLOB)"
    )
    row = (
        1,
        "x",
        decimal.Decimal("1.50"),
        datetime.datetime(2020, 1, 1, 2, 3),
        True,
        1.5,
        datetime.date(2020, 1, 2),
        "c",
    )
    cur.execute(f"INSERT INTO {t} VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", row)
    conn.commit()
    cur.execute(f"CREATE TABLE {u} AS SELECT t.*, d * 2 AS d2, (SELECT SUM(d) FROM {t}) AS total FROM {t} AS t")
    cur.execute(f"SELECT * FROM {u}")
    assert [tuple(r) for r in cur.fetchall()] == [(*row, decimal.Decimal("3.00"), decimal.Decimal("1.50"))]
    with pytest.raises(tique.ProgrammingError, match="already in use"):
        cur.execute(f"CREATE TABLE {u} AS SELECT 1 AS a")
    cur.execute(f"CREATE TABLE IF NOT EXISTS {u} AS SELECT 1 AS a")


def test_create_table_as_keeps_fractional_seconds_of_every_precision(
    connect: Callable[..., tique.Connection], unique_name
) -> None:
    """The new table's TIME and TIMESTAMP columns keep the source's precision: recorded as TIME, a TIME(6) column
    became TIME(0) and its fractions were cut (tique and plain tables alike, read back and in the catalog)."""
    t, u, p = unique_name("ctp"), unique_name("ctp_u"), unique_name("ctp_p")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, t6 TIME(6), t3 TIME(3), t0 TIME, s3 TIMESTAMP(3), s6 TIMESTAMP)")
    row = (
        1,
        datetime.time(1, 2, 3, 456789),
        datetime.time(1, 2, 3, 456000),
        datetime.time(1, 2, 3),
        datetime.datetime(2020, 1, 2, 3, 4, 5, 678000),
        datetime.datetime(2020, 1, 2, 3, 4, 5, 678901),
    )
    cur.execute(f"INSERT INTO {t} VALUES (%s, %s, %s, %s, %s, %s)", row)
    conn.commit()
    cur.execute(f"CREATE TABLE {u} AS SELECT * FROM {t}")
    cur.execute(f"CREATE TABLE {p} AS SELECT * FROM {t} -- tique: plain")
    conn.commit()
    # (named columns: a * over a plain table is the engine's, which the embedded C API hands over in milliseconds;
    # test_a_star_over_a_plain_table_keeps_microseconds)
    for table in (u, p):
        cur.execute(f"SELECT k, t6, t3, t0, s3, s6 FROM {table}")
        assert [tuple(r) for r in cur.fetchall()] == [row], table
        cur.execute(f"INSERT INTO {table} VALUES (%s, %s, %s, %s, %s, %s)", (2, *row[1:]))
        conn.commit()
        cur.execute(f"SELECT k, t6, t3, t0, s3, s6 FROM {table} WHERE k = 2")
        assert [tuple(r) for r in cur.fetchall()] == [(2, *row[1:])], table
    cur.execute(f"SELECT * FROM {u}")
    assert [tuple(r) for r in cur.fetchall()] == [row, (2, *row[1:])]
    info = conn.db.catalog.named(f"sys.{u}")
    assert info is not None
    kinds = ["INT", "TIME(6)", "TIME(3)", "TIME(0)", "TIMESTAMP(3)", "TIMESTAMP(6)"]
    assert [c.sql_type for c in info.columns] == kinds


def test_a_star_over_a_plain_table_keeps_microseconds(connect: Callable[..., tique.Connection], unique_name) -> None:
    """Known defect: a * over a plain table is left for the engine to spell out (a session outside tique may add a
    column), and the embedded C API hands TIME and TIMESTAMP values over in milliseconds (MAPI sends text)."""
    p = unique_name("star_p")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {p} (k INT PRIMARY KEY, t6 TIME(6), s6 TIMESTAMP) -- tique: plain")
    row = (1, datetime.time(1, 2, 3, 456789), datetime.datetime(2020, 1, 2, 3, 4, 5, 678901))
    cur.execute(f"INSERT INTO {p} VALUES (%s, %s, %s)", row)
    conn.commit()
    cur.execute(f"SELECT * FROM {p}")
    found = [tuple(r) for r in cur.fetchall()]
    if conn.db.url.kind == "embedded" and found != [row]:
        pytest.xfail("a * over a plain table reads TIME/TIMESTAMP in milliseconds on the embedded adapter")
    assert found == [row]


def test_create_table_as_of_a_type_tique_cannot_keep_is_refused_clearly(
    connect: Callable[..., tique.Connection], unique_name
) -> None:
    """An INTERVAL column (MonetDB types v * INTERVAL '1' SECOND so) is refused as CREATE TABLE refuses it: naming
    the column and the way out, leaving no table behind; '-- tique: plain' makes it."""
    t, u, p = unique_name("cti"), unique_name("cti_u"), unique_name("cti_p")
    conn = connect(autocommit=True)
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT)")
    cur.execute(f"INSERT INTO {t} VALUES (1, 10), (2, 20)")
    with pytest.raises(tique.NotSupportedError, match=r"column 'd' of '.*': column type INTERVAL SECOND.*tique: plain"):
        cur.execute(f"CREATE TABLE {u} AS SELECT k, v * INTERVAL '1' SECOND AS d FROM {t} WITH DATA")
    cur.execute(f"SELECT COUNT(*) FROM sys.tables WHERE name LIKE '{u}%'")
    assert cur.fetchone()[0] == 0
    cur.execute(f"CREATE TABLE {u} AS SELECT k FROM {t} WITH DATA")  # the name is free again
    cur.execute(f"CREATE TABLE {p} AS SELECT k, v * INTERVAL '1' SECOND AS d FROM {t} WITH DATA -- tique: plain")
    cur.execute(f"SELECT k, d FROM {p} ORDER BY k")
    assert [tuple(r) for r in cur.fetchall()] == [
        (1, datetime.timedelta(seconds=10)),
        (2, datetime.timedelta(seconds=20)),
    ]
