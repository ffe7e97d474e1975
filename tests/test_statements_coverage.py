"""Statements applications send to MonetDB, on tique tables: UPDATE ... FROM, COPY INTO inside a transaction,
DEFAULT NEXT VALUE FOR, SAMPLE and EXPLAIN of the snapshot, and clear refusals (RETURNING, MERGE, TABLESAMPLE)
naming the alternative."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import tique
from tests.conftest import ServeProcess


def _pair(conn: tique.Connection, t: str, u: str) -> tique.Cursor:
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, v INT)")
    cur.execute(f"CREATE TABLE {u} (id INT PRIMARY KEY, w INT)")
    cur.execute(f"INSERT INTO {t} VALUES (1, 1), (2, 2), (3, 3)")
    cur.execute(f"INSERT INTO {u} VALUES (1, 10), (2, 20)")
    conn.commit()
    return cur


def test_update_from(connect: Callable[..., tique.Connection], unique_name) -> None:
    t, u = unique_name("upd_t"), unique_name("upd_u")
    a = connect(on_statement_error="continue")
    cur = _pair(a, t, u)
    cur.execute(f"UPDATE {u} SET w = 11 WHERE id = 1")  # uncommitted: the UPDATE ... FROM must read it
    cur.execute(f"UPDATE {t} AS x SET v = y.w + x.v FROM {u} AS y WHERE x.id = y.id")
    assert cur.rowcount == 2
    cur.execute(f"SELECT id, v FROM {t} ORDER BY id")
    assert cur.fetchall() == [(1, 12), (2, 22), (3, 3)]
    a.commit()
    cur.execute(f"INSERT INTO {u} VALUES (4, 1)")
    with pytest.raises(tique.ProgrammingError, match="several rows"):
        cur.execute(f"UPDATE {t} SET v = 0 FROM {u} WHERE {u}.w < 20 AND {t}.id = 1")  # two rows of u match id 1
    cur.execute(f"SELECT v FROM {t} WHERE id = 1")
    assert cur.fetchone()[0] == 12  # refused whole


def test_update_from_conflicts_like_any_update(connect: Callable[..., tique.Connection], unique_name) -> None:
    t, u = unique_name("upd_t"), unique_name("upd_u")
    a, b = connect(), connect()
    _pair(a, t, u)
    a.cursor().execute(f"UPDATE {t} SET v = {u}.w FROM {u} WHERE {t}.id = {u}.id")
    b.cursor().execute(f"UPDATE {t} SET v = 99 WHERE id = 2")
    b.commit()
    with pytest.raises(tique.SerializationFailure):
        a.commit()


def test_copy_into_is_part_of_the_transaction(
    connect: Callable[..., tique.Connection], unique_name, tmp_path: Path
) -> None:
    t = unique_name("copy")
    a, b = connect(on_statement_error="continue"), connect(on_statement_error="continue")
    cur = a.cursor()
    cur.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, name VARCHAR(10) DEFAULT 'none', n INT)")
    a.commit()
    data = tmp_path / "rows.csv"
    data.write_text("1,one,1\n2,,2\n")
    cur.execute(f"COPY INTO {t} FROM '{data}' USING DELIMITERS ',', E'\\n' NULL AS ''")
    cur.execute(f"SELECT id, name, n FROM {t} ORDER BY id")
    assert cur.fetchall() == [(1, "one", 1), (2, None, 2)]  # its own rows, not yet anyone else's
    other = b.cursor()
    other.execute(f"SELECT COUNT(*) FROM {t}")
    assert other.fetchone()[0] == 0
    data.write_text("3\n")
    cur.execute(f"COPY INTO {t} (id) FROM '{data}'")  # columns left out take their defaults
    with pytest.raises(tique.IntegrityError):
        cur.execute(f"COPY INTO {t} (id) FROM '{data}'")  # key 3 again: the statement is refused whole
    other.execute(f"INSERT INTO {t} VALUES (2, 'b', 0)")  # a concurrent writer of key 2
    a.commit()
    with pytest.raises(tique.SerializationFailure):
        b.commit()
    cur.execute(f"SELECT id, name FROM {t} ORDER BY id")
    assert cur.fetchall() == [(1, "one"), (2, None), (3, "none")]


def test_a_copy_that_fails_names_the_table_it_was_given(
    connect: Callable[..., tique.Connection], unique_name, tmp_path: Path
) -> None:
    """The engine loads a COPY into a staging table of tique's: its error named it ("Failed to import table
    'tq_copy_1'"), a name the user never wrote. It names the user's table now, and nothing is loaded."""
    t = unique_name("copyerr")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, n INT)")
    conn.commit()
    data = tmp_path / "bad.csv"
    data.write_text("1,1\n2,x\n")
    with pytest.raises(tique.DatabaseError, match=rf"table '{t}', line 2") as failed:
        cur.execute(f"COPY INTO {t} FROM '{data}' USING DELIMITERS ','")
    assert "tq_copy" not in str(failed.value)
    conn.rollback()
    assert conn.execute(f"SELECT COUNT(*) FROM {t}").fetchall() == [(0,)]


def test_a_bulk_load_refused_for_a_null_gives_no_key_hint(
    connect: Callable[..., tique.Connection], unique_name
) -> None:
    t = unique_name("loadnull")
    conn = connect()
    conn.cursor().execute(f"CREATE TABLE {t} (id INT PRIMARY KEY, n INT NOT NULL)")
    conn.commit()
    with pytest.raises(tique.IntegrityError, match="NOT NULL") as refused:
        conn.bulk_load(t, [(1, None)])
    assert "a key already in the table" not in str(refused.value)
    with pytest.raises(tique.IntegrityError, match="a key already in the table, or given twice"):
        conn.bulk_load(t, [(1, 1), (1, 2)])


def test_default_next_value_for(connect: Callable[..., tique.Connection], unique_name) -> None:
    t, s = unique_name("seqd"), unique_name("seq")
    a, b = connect(), connect()
    cur = a.cursor()
    cur.execute(f"CREATE SEQUENCE {s}")
    cur.execute(f"CREATE TABLE {t} (id BIGINT DEFAULT NEXT VALUE FOR {s} PRIMARY KEY, v INT)")
    a.commit()
    cur.execute(f"INSERT INTO {t} (v) VALUES (1), (2)")
    b.cursor().execute(f"INSERT INTO {t} VALUES (DEFAULT, 3)")
    cur.execute(f"INSERT INTO {t} (v) SELECT v + 10 FROM {t}")
    a.commit()
    b.commit()  # every row took its own value: no key conflict
    cur.execute(f"SELECT id FROM {t} ORDER BY v")
    ids = [r[0] for r in cur.fetchall()]
    assert len(ids) == 5 and len(set(ids)) == 5


def test_sample_reads_the_snapshot(connect: Callable[..., tique.Connection], unique_name) -> None:
    t = unique_name("sample")
    a = connect()
    cur = a.cursor()
    cur.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY)")
    a.commit()
    cur.execute(f"INSERT INTO {t} VALUES (1), (2)")  # uncommitted: only this transaction sees them
    cur.execute(f"SELECT id FROM {t} SAMPLE 5")
    assert sorted(cur.fetchall()) == [(1,), (2,)]
    with pytest.raises(tique.NotSupportedError, match="SAMPLE"):
        cur.execute(f"SELECT * FROM {t} TABLESAMPLE (50)")  # MonetDB has no TABLESAMPLE: never ignored silently


def test_explain_shows_the_rewritten_statement(server: ServeProcess, unique_name) -> None:
    t = unique_name("explain")
    conn = tique.connect(server.url)
    try:
        cur = conn.cursor()
        cur.execute(f"CREATE TABLE {t} (id INT PRIMARY KEY)")
        cur.execute(f"EXPLAIN SELECT id FROM {t}")
        plan = "\n".join(str(r[0]) for r in cur.fetchall())
        assert "__cache" in plan and "__storage" in plan  # the engine explains the snapshot read
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("statement", "named", "alternative"),
    [
        ("DELETE FROM {t} WHERE id = 1 RETURNING id", "DELETE ... RETURNING", "SELECT the rows before"),
        ("UPDATE {t} SET v = 0 RETURNING id", "UPDATE ... RETURNING", "SELECT the updated rows"),
        ("INSERT INTO {t} VALUES (9, 9) RETURNING id", "INSERT ... RETURNING", "lastrowid"),
        ("MERGE INTO {t} USING {u} ON {t}.id = {u}.id WHEN MATCHED THEN UPDATE SET v = 0", "MERGE", "UPDATE"),
        ("DELETE FROM {t} USING {u} WHERE {t}.id = {u}.id", "DELETE ... USING", "EXISTS"),
    ],
)
def test_refusals_name_the_alternative(
    connect: Callable[..., tique.Connection], unique_name, statement: str, named: str, alternative: str
) -> None:
    t, u = unique_name("ref_t"), unique_name("ref_u")
    cur = _pair(connect(), t, u)
    with pytest.raises(tique.NotSupportedError) as refused:
        cur.execute(statement.format(t=t, u=u))
    assert named in str(refused.value) and alternative in str(refused.value)
