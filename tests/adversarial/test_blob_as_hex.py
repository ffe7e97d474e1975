"""BLOB columns of tique tables are kept as hex text in Storage and Cache, off MonetDB 11.41's BLOB allocator.

Why: a BLOB heap reuses freed space through a free list inside the heap file. A kill during the kernel's flush
can leave that file newer than the catalog the kernel restarts from, and committed BLOB values then read back
with other bytes (CI saw it on 2026-11-27 as an abort at open, on 2026-12-07 silently, in the kill loop of
test_attack_reopen.py). String heaps are append-only. That defect cannot be provoked on demand, so this file
checks its precondition is gone (no tique table has a BLOB heap) and that nothing a user sees changed:

- every read (tique on both adapters, the view T that other clients read) gives BLOB values, exactly, also for
  empty values, every byte value, NULL, keys, defaults, values moved by the checkpointer, bulk loads and CREATE
  TABLE AS;
- what Storage and Cache hold is the engine's own hex text (upper case), so that equal values are equal texts
  (keys, UNIQUE, the checkpointer's matching) - also for a value written in lower case or given as a string;
- a string that is not hexadecimal is refused as plain MonetDB refuses it, and nothing is stored (a DEFAULT that
  is not hexadecimal is refused at CREATE TABLE, where MonetDB accepts it and fails each INSERT that takes it);
- a key or UNIQUE lookup of a BLOB column selects on the hex text inside the projection (by the column's hash,
  not a cast of every row), and finds a value given as a lower-case string as the engine does;
- SQLAlchemy's reflection sees BLOB, with the default as written;
- a table made by an older tique (its BLOB columns BLOB) keeps working.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

import tique
import tique.sqla
from tests.test_sqlalchemy import sqlalchemy_url
from tique import catalog
from tique.catalog import ColumnSpec, TableInfo, table_info
from tique.checkpoint import Checkpointer
from tique.database import Database
from tique.engine.base import RawConnection
from tique.rewrite.dialect import MonetDB
from tique.rewrite.snapshot import snapshot_sql

EVERY_BYTE = bytes(range(256))
VALUES = [b"", b"\x00", EVERY_BYTE, b"\xff" * 1000, None, b"abc'\\"]


def _physical(raw: RawConnection, schema: str, name: str) -> dict[str, set[str]]:
    """Column -> the engine's types of it in Storage and Cache."""
    info = table_info(raw, schema, name)
    rows = raw.execute(
        "SELECT c.name, c.type FROM sys.columns c JOIN sys.tables t ON c.table_id = t.id JOIN sys.schemas s ON "
        f"t.schema_id = s.id WHERE s.name = '{info.physical_schema}' AND t.name IN ('{info.storage_name}', "
        f"'{info.cache_name}')"
    ).rows
    out: dict[str, set[str]] = {}
    for col, kind in rows:
        out.setdefault(str(col), set()).add(str(kind))
    return out


def _texts(raw: RawConnection, schema: str, name: str, column: str) -> list[str | None]:
    """What Storage and Cache hold in ``column``, as text."""
    info = table_info(raw, schema, name)
    return [
        r[0]
        for r in raw.execute(
            f'SELECT "{column}" FROM {info.storage} UNION ALL SELECT "{column}" FROM {info.cache}'
        ).rows
    ]


def _created(connect: Callable[..., tique.Connection], name: str, columns: str) -> tuple[tique.Connection, Any]:
    """A connection, its cursor, and table ``name`` of ``columns`` created and committed through them."""
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} ({columns})")
    conn.commit()
    return conn, cur


@pytest.fixture
def raw_of(url: str) -> Iterator[Callable[[], RawConnection]]:
    opened: list[RawConnection] = []

    def make() -> RawConnection:
        opened.append(Database.get(url).connect_raw())
        return opened[-1]

    yield make
    for r in opened:
        r.close()


def test_blob_values_round_trip_exactly_and_are_stored_as_upper_case_hex(
    connect: Callable[..., tique.Connection], raw_of: Callable[[], RawConnection], unique_name: Callable[[str], str]
) -> None:
    name = unique_name("hexv")
    conn, cur = _created(connect, name, "k INT PRIMARY KEY, b BLOB, d BLOB DEFAULT X'0aff'")
    cur.executemany(f"INSERT INTO {name} (k, b) VALUES (%s, %s)", list(enumerate(VALUES)))
    cur.execute(f"INSERT INTO {name} VALUES (100, X'abcdef', X'')")  # the engine computes these rows
    cur.execute(f"INSERT INTO {name} (k, b) VALUES (101, '00ff')")  # a string is read as hexadecimal
    conn.commit()
    expected = {**dict(enumerate(VALUES)), 100: b"\xab\xcd\xef", 101: b"\x00\xff"}
    defaults = {k: b"\n\xff" for k in expected} | {100: b""}
    raw = raw_of()
    assert _physical(raw, "sys", name)["b"] == {"clob"}  # no BLOB heap behind a tique table
    assert _physical(raw, "sys", name)["d"] == {"clob"}

    def check() -> None:
        cur.execute(f"SELECT k, b, d, LENGTH(b) FROM {name} ORDER BY k")
        got = cur.fetchall()
        assert [(r[0], None if r[1] is None else bytes(r[1]), bytes(r[2])) for r in got] == [
            (k, expected[k], defaults[k]) for k in sorted(expected)
        ]
        assert [r[3] for r in got] == [None if expected[k] is None else len(expected[k]) for k in sorted(expected)]
        assert [d[1] for d in cur.description[:3]] == ["int", "blob", "blob"]
        conn.commit()
        texts = [t for t in _texts(raw, "sys", name, "b") if t is not None]
        assert texts and all(t == t.upper() and bytes.fromhex(t) is not None for t in texts)
        # the view other clients read: BLOB again
        [[kind]] = raw.execute(
            f"SELECT type FROM sys.columns WHERE name = 'b' AND table_id = (SELECT id FROM "
            f"sys.tables WHERE name = '{name}')"
        ).rows
        assert kind == "blob"
        viewed = dict(raw.execute(f"SELECT k, b FROM sys.{name}").rows)
        assert {k: None if v is None else bytes(v) for k, v in viewed.items()} == expected

    check()
    cur.execute(f"UPDATE {name} SET b = d WHERE k = 0")  # from another BLOB column
    cur.execute(f"UPDATE {name} SET b = X'0a0B0c' WHERE k = 1")
    conn.commit()
    expected[0], expected[1] = b"\n\xff", b"\n\x0b\x0c"
    check()
    Checkpointer(raw).run_once()  # the versions move to Storage
    check()
    cur.execute(f"SELECT k FROM {name} WHERE b = X'0A0B0C' OR b = X'abcdef' ORDER BY k")
    assert cur.fetchall() == [(1,), (100,)]
    conn.commit()


def test_blob_keys_compare_as_the_engine_compares_them(
    connect: Callable[..., tique.Connection], raw_of: Callable[[], RawConnection], unique_name: Callable[[str], str]
) -> None:
    name = unique_name("hexk")
    conn, cur = _created(connect, name, "b BLOB PRIMARY KEY, u BLOB UNIQUE, n INT")
    cur.execute(f"INSERT INTO {name} VALUES (X'abcd', X'01', 1), (X'', X'02', 2)")
    conn.commit()
    with pytest.raises(tique.IntegrityError):  # the same key written in the other case
        cur.execute(f"INSERT INTO {name} VALUES (X'ABCD', X'03', 3)")
        conn.commit()
    conn.rollback()
    with pytest.raises(tique.IntegrityError):  # the same UNIQUE value as a parameter
        cur.execute(f"INSERT INTO {name} VALUES (X'00', %s, 4)", (b"\x01",))
        conn.commit()
    conn.rollback()
    cur.execute(f"UPDATE {name} SET n = 10 WHERE b = %s", (b"\xab\xcd",))
    assert cur.rowcount == 1
    cur.execute(f"DELETE FROM {name} WHERE b = X''")
    assert cur.rowcount == 1
    conn.commit()
    Checkpointer(raw_of()).run_once()
    cur.execute(f"SELECT b, u, n FROM {name}")
    assert [(bytes(b), bytes(u), n) for b, u, n in cur.fetchall()] == [(b"\xab\xcd", b"\x01", 10)]
    cur.execute(f"INSERT INTO {name} VALUES (X'', X'02', 5)")  # the deleted key again, after the move
    cur.execute(f"UPDATE {name} SET n = 11 WHERE b = X'AbCd'")
    conn.commit()
    cur.execute(f"SELECT b, n FROM {name} ORDER BY n")
    assert [(bytes(b), n) for b, n in cur.fetchall()] == [(b"", 5), (b"\xab\xcd", 11)]
    conn.commit()


def test_a_string_that_is_not_hexadecimal_is_refused_and_nothing_is_stored(
    connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    name = unique_name("hexbad")
    conn, cur = _created(connect, name, "k INT PRIMARY KEY, b BLOB")
    for bad in (
        "INSERT INTO {t} VALUES (1, 'zz')",
        "INSERT INTO {t} SELECT 2, 'abc'",
        "INSERT INTO {t} VALUES (3, %s)",
    ):
        with pytest.raises(tique.Error):
            cur.execute(bad.format(t=name), ("0g",) if "%s" in bad else None)
            conn.commit()
        conn.rollback()
    cur.execute(f"INSERT INTO {name} VALUES (4, X'01')")
    conn.commit()
    with pytest.raises(tique.Error):
        cur.execute(f"UPDATE {name} SET b = 'xyz' WHERE k = 4")
        conn.commit()
    conn.rollback()
    cur.execute(f"SELECT k, b FROM {name}")
    assert [(k, bytes(b)) for k, b in cur.fetchall()] == [(4, b"\x01")]
    conn.commit()
    with pytest.raises(tique.Error):
        cur.execute(f"CREATE TABLE {name}_d (k INT PRIMARY KEY, b BLOB DEFAULT 'zz')")
        conn.commit()
    conn.rollback()


def test_bulk_loads_alter_and_create_table_as_keep_hex(
    connect: Callable[..., tique.Connection],
    raw_of: Callable[[], RawConnection],
    unique_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    name = unique_name("hexl")
    conn, cur = _created(connect, name, "k INT PRIMARY KEY, b BLOB")
    cur.execute(f"CREATE TABLE {name}_n (b BLOB)")  # no key: hidden row ids
    conn.commit()
    csv = tmp_path / "b.csv"
    csv.write_text("1,00ff\n2,\n3,abCD\n")
    assert conn.bulk_load_csv(name, csv, null="") == 3
    assert conn.bulk_load(name, [(4, b"\x10"), (5, None)]) == 2
    assert conn.bulk_load(f"{name}_n", [(b"\x01\x02",), (b"",)]) == 2
    bad = tmp_path / "bad.csv"
    bad.write_text("6,zz\n")
    with pytest.raises(tique.Error):
        conn.bulk_load_csv(name, bad)
    cur.execute(f"ALTER TABLE {name} ADD COLUMN e BLOB DEFAULT X'beef'")
    conn.commit()
    cur.execute(f"CREATE TABLE {name}_c AS SELECT k, b, e FROM {name} WITH DATA")
    conn.commit()
    raw = raw_of()
    for table, cols in ((name, ("b", "e")), (f"{name}_n", ("b",)), (f"{name}_c", ("b", "e"))):
        kinds = _physical(raw, "sys", table)
        assert all(kinds[c] == {"clob"} for c in cols), kinds
        for c in cols:
            assert all(t == t.upper() for t in _texts(raw, "sys", table, c) if t is not None)
    expected = [
        (1, b"\x00\xff", b"\xbe\xef"),
        (2, None, b"\xbe\xef"),
        (3, b"\xab\xcd", b"\xbe\xef"),
        (4, b"\x10", b"\xbe\xef"),
        (5, None, b"\xbe\xef"),
    ]
    for table in (name, f"{name}_c"):
        cur.execute(f"SELECT k, b, e FROM {table} ORDER BY k")
        assert [(k, None if b is None else bytes(b), bytes(e)) for k, b, e in cur.fetchall()] == expected
    cur.execute(f"SELECT b FROM {name}_n ORDER BY LENGTH(b)")
    assert [bytes(r[0]) for r in cur.fetchall()] == [b"", b"\x01\x02"]
    conn.commit()
    Checkpointer(raw).run_once()
    cur.execute(f"SELECT COUNT(*) FROM {name} WHERE b = X'00FF' AND e = X'BEEF'")
    assert cur.fetchall() == [(1,)]
    conn.commit()


def test_a_table_an_older_tique_made_keeps_its_blob_columns(
    url: str,
    connect: Callable[..., tique.Connection],
    raw_of: Callable[[], RawConnection],
    unique_name: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Made with BLOB columns in Storage and Cache, and a spec without "hex", as before this change."""
    name = unique_name("hexold")
    placed = catalog.placed
    monkeypatch.setattr(
        catalog, "placed", lambda conn, info, base=None: replace(placed(conn, info, base), blob_hex=False)
    )
    conn, cur = _created(connect, name, "k INT PRIMARY KEY, b BLOB")
    monkeypatch.undo()
    raw = raw_of()
    assert _physical(raw, "sys", name)["b"] == {"blob"}
    assert not table_info(raw, "sys", name).hex_columns
    cur.execute(f"INSERT INTO {name} VALUES (1, X'0102'), (2, %s)", (EVERY_BYTE,))
    conn.commit()
    Checkpointer(raw).run_once()
    cur.execute(f"UPDATE {name} SET b = X'' WHERE k = 1")
    conn.commit()
    other = connect()  # another connection reads the catalog afresh
    ocur = other.cursor()
    ocur.execute(f"SELECT k, b FROM {name} ORDER BY k")
    assert [(k, bytes(b)) for k, b in ocur.fetchall()] == [(1, b""), (2, EVERY_BYTE)]
    other.commit()


def test_lookups_by_a_blob_value_find_it_in_any_spelling(
    connect: Callable[..., tique.Connection], raw_of: Callable[[], RawConnection], unique_name: Callable[[str], str]
) -> None:
    name = unique_name("hexs")
    conn, cur = _created(connect, name, "b BLOB PRIMARY KEY, u BLOB UNIQUE, n INT")
    cur.execute(f"INSERT INTO {name} VALUES (X'ABCD', X'0A', 1), (X'00', X'0B', 2)")
    conn.commit()
    for phase in ("in the Cache", "in Storage"):
        for sql, params in (
            (f"SELECT n FROM {name} WHERE b = %s", ("abcd",)),  # a string parameter, lower case
            (f"SELECT n FROM {name} WHERE b = 'abcd'", None),
            (f"SELECT n FROM {name} WHERE b IN ('abcd', X'ff')", None),
            (f"SELECT n FROM {name} WHERE b = %s", (b"\xab\xcd",)),
            (f"SELECT n FROM {name} WHERE u = '0a' OR u = X'77'", None),
            (f"SELECT n FROM {name} WHERE b = X'abcd' AND u = '0a'", None),
        ):
            for _ in range(2):  # the second run of a text is an EXEC of a prepared statement
                cur.execute(sql, params)
                assert cur.fetchall() == [(1,)], (phase, sql, params)
                conn.commit()
        with pytest.raises(tique.IntegrityError):  # the UNIQUE value again, as a lower-case string
            cur.execute(f"INSERT INTO {name} VALUES (X'01', '0a', 3)")
            conn.commit()
        conn.rollback()
        cur.execute(f"UPDATE {name} SET n = n WHERE b = 'abcd'")
        assert cur.rowcount == 1
        conn.commit()
        Checkpointer(raw_of()).run_once()  # then again, the rows in Storage


def test_key_and_unique_lookups_select_the_hex_text_inside() -> None:
    """The statement tique sends: the physical column compared with the value cast to BLOB, inside the projection
    that casts the column back (so the engine probes the column's hash); a range stays on the cast column."""
    info = TableInfo(
        1,
        "sys",
        "t",
        "tx",
        (ColumnSpec("b", "BLOB"), ColumnSpec("u", "BLOB"), ColumnSpec("n", "INT")),
        ("b",),
        data_schema="tique_data",
        data_base="sys__t",
    )
    key = sqlglot_parse('"b" = %s')
    point = snapshot_sql(info, "point", [key], alone=True)
    assert point.count('FROM "tique_data"."sys__t__storage" WHERE ("b" = CAST(') == 1
    assert point.count('FROM "tique_data"."sys__t__cache" WHERE ("b" = CAST(') == 2  # committed, own
    listed = snapshot_sql(info, "point", ["{t}\"b\" IN (BLOB 'ab', BLOB 'cd')"])
    assert listed.count("sys__t__storage\" WHERE (\"b\" IN (BLOB 'ab', BLOB 'cd'))") == 1
    assert listed.count("sys__t__cache\" WHERE (\"b\" IN (BLOB 'ab', BLOB 'cd'))") == 2
    unique = snapshot_sql(info, "analytical", row_preds=[sqlglot_parse("(\"u\" = X'0a') OR (\"u\" = X'0b')")])
    storage = unique.split('FROM "tique_data"."sys__t__storage"')[1].split(" AS tq_")[0]
    # (the last parenthesis closes the projection's subquery)
    assert storage == """ WHERE (("u" = CAST(X'0a' AS BLOB)) OR ("u" = CAST(X'0b' AS BLOB))))""", storage
    ranged = snapshot_sql(info, "analytical", row_preds=[sqlglot_parse("\"b\" > X'00'")])
    assert 'sys__t__storage" WHERE (TRUE)' in ranged  # no filter on the text for a range: the cast decides


def sqlglot_parse(sql: str) -> object:
    import sqlglot

    return sqlglot.parse_one(sql.replace("%s", "?"), read=MonetDB)


def test_sqlalchemy_reflects_blob_columns_as_blob(url: str, unique_name: Callable[[str], str]) -> None:
    name = unique_name("hexsa")
    conn = tique.connect(url)
    try:
        conn.cursor().execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, b BLOB DEFAULT X'beef', c BLOB)")
        conn.commit()
    finally:
        conn.close()
    engine = sa.create_engine(sqlalchemy_url(url))
    try:
        columns = {c["name"]: c for c in sa.inspect(engine).get_columns(name)}
    finally:
        engine.dispose()
    assert isinstance(columns["b"]["type"], sa.types.BLOB) and isinstance(columns["c"]["type"], sa.types.BLOB)
    assert columns["b"]["default"] == "'beef'" and columns["c"]["default"] is None
