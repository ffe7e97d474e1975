"""The driver as an application uses it: DDL, writes, errors, DB-API behaviour; on both adapters."""

from __future__ import annotations

import datetime
import decimal
import threading
from collections.abc import Callable

import pytest

import tique
from tests.physical import cache, storage
from tique.errors import (
    DataError,
    IntegrityError,
    InterfaceError,
    NotSupportedError,
    ProgrammingError,
)

Connect = Callable[..., tique.Connection]
Names = Callable[[str], str]


def rows(conn: tique.Connection, sql: str, params: object = None) -> list[tuple[object, ...]]:
    cur = conn.cursor()
    cur.execute(sql, params)
    return cur.fetchall()


def own_cache_rows(conn: tique.Connection, table: str) -> int:
    """Rows the connection's running transaction has sent to ``table``'s Cache so far."""
    txid = conn.transaction().txid
    return int(conn._raw.execute(f"SELECT COUNT(*) FROM {cache(conn._raw, table)} WHERE tq_txid = {txid}").scalar())


@pytest.fixture
def kv(connect: Connect, unique_name: Names) -> str:
    name = unique_name("kv")
    conn = connect()
    conn.cursor().execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v VARCHAR(32), n INT DEFAULT 7)")
    conn.commit()
    return name


def test_module_interface() -> None:
    assert (tique.apilevel, tique.threadsafety, tique.paramstyle) == ("2.0", 1, "pyformat")
    assert issubclass(tique.SerializationFailure, tique.OperationalError)
    assert issubclass(tique.IntegrityError, tique.DatabaseError) and issubclass(tique.DatabaseError, tique.Error)
    assert tique.Connection.IntegrityError is tique.IntegrityError
    assert tique.NUMBER == "int" and tique.STRING == "varchar" and tique.DATETIME == "date"


def test_insert_forms_and_defaults(connect: Connect, kv: str) -> None:
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {kv} (k, v) VALUES (1, 'a')")
    assert cur.rowcount == 1
    cur.execute(f"INSERT INTO {kv} VALUES (%(k)s, %(v)s, %(n)s)", {"k": 2, "v": "b", "n": 2})
    cur.executemany(f"INSERT INTO {kv} (k, v) VALUES (%s, %s)", [(3, "c"), (4, "d")])
    assert cur.rowcount == 2
    cur.execute(f"INSERT INTO {kv} (k, v, n) VALUES (5, UPPER('e'), 1 + 1)")  # expressions: evaluated by MonetDB
    cur.execute(f"INSERT INTO {kv} (k, v) SELECT k + 10, v FROM {kv} WHERE k <= 2")  # INSERT ... SELECT
    conn.commit()
    assert rows(conn, f"SELECT k, v, n FROM {kv} ORDER BY k") == [
        (1, "a", 7),
        (2, "b", 2),
        (3, "c", 7),
        (4, "d", 7),
        (5, "E", 2),
        (11, "a", 7),
        (12, "b", 7),
    ]


def test_update_and_delete_with_any_where(connect: Connect, kv: str) -> None:
    conn = connect()
    cur = conn.cursor()
    cur.executemany(f"INSERT INTO {kv} (k, v) VALUES (%s, %s)", [(i, f"v{i}") for i in range(10)])
    conn.commit()
    cur.execute(f"UPDATE {kv} SET n = k * 2 WHERE k IN (SELECT k FROM {kv} WHERE k % 2 = 0)")
    assert cur.rowcount == 5
    cur.execute(f"DELETE FROM {kv} WHERE v LIKE %s AND n = 7 OR k > 8", ("v%",))  # odd ones kept the default
    conn.commit()
    assert rows(conn, f"SELECT k, n FROM {kv} ORDER BY k") == [(0, 0), (2, 4), (4, 8), (6, 12), (8, 16)]


def test_update_of_the_primary_key_moves_the_row(connect: Connect, kv: str) -> None:
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {kv} (k, v) VALUES (1, 'a'), (2, 'b')")
    conn.commit()
    cur.execute(f"UPDATE {kv} SET k = k + 100 WHERE k = 1")
    conn.commit()
    assert rows(conn, f"SELECT k, v FROM {kv} ORDER BY k") == [(2, "b"), (101, "a")]
    with pytest.raises(IntegrityError, match="duplicate key"):
        cur.execute(f"UPDATE {kv} SET k = 2 WHERE k = 101")


def test_duplicate_key_is_refused_at_the_insert_and_the_transaction_stays_usable(connect: Connect, kv: str) -> None:
    conn = connect(on_statement_error="continue")
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {kv} (k, v) VALUES (1, 'a')")
    conn.commit()
    with pytest.raises(IntegrityError) as info:
        cur.execute(f"INSERT INTO {kv} (k, v) VALUES (1, 'again')")
    assert "duplicate key (k=1)" in str(info.value) and info.value.sqlstate == "23505"
    cur.execute(f"INSERT INTO {kv} (k, v) VALUES (2, 'b')")
    with pytest.raises(IntegrityError):
        cur.execute(f"INSERT INTO {kv} (k, v) VALUES (2, 'b twice')")  # duplicate of the transaction's own
    cur.execute(f"DELETE FROM {kv} WHERE k = 1")
    cur.execute(f"INSERT INTO {kv} (k, v) VALUES (1, 'reborn')")  # after its own delete: fine
    conn.commit()
    assert rows(conn, f"SELECT k, v FROM {kv} ORDER BY k") == [(1, "reborn"), (2, "b")]


def test_constraint_and_type_errors(connect: Connect, kv: str) -> None:
    cur = connect(on_statement_error="continue").cursor()
    with pytest.raises(IntegrityError, match="NOT NULL"):
        cur.execute(f"INSERT INTO {kv} (k, v) VALUES (NULL, 'x')")
    with pytest.raises(DataError, match="too long"):
        cur.execute(f"INSERT INTO {kv} (k, v) VALUES (1, %s)", ("x" * 40,))
    with pytest.raises(DataError):
        cur.execute(f"INSERT INTO {kv} (k, v) VALUES (%s, 'x')", ("not a number",))
    with pytest.raises(ProgrammingError, match="column 'nope' does not exist"):
        cur.execute(f"INSERT INTO {kv} (k, nope) VALUES (1, 2)")
    with pytest.raises(ProgrammingError, match="has 2 values for 3 columns"):
        cur.execute(f"INSERT INTO {kv} VALUES (1, 'x')")


def test_table_without_primary_key_allows_duplicates(connect: Connect, unique_name: Names) -> None:
    name = unique_name("bag")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} (a INT, b VARCHAR(8))")
    cur.execute(f"INSERT INTO {name} VALUES (1, 'x'), (1, 'x'), (2, 'y')")
    conn.commit()
    cur.execute(f"SELECT * FROM {name} ORDER BY a")
    assert [d[0] for d in cur.description] == ["a", "b"]  # the hidden row id stays hidden
    assert cur.fetchall() == [(1, "x"), (1, "x"), (2, "y")]
    cur.execute(f"UPDATE {name} SET b = 'z' WHERE a = 1")
    assert cur.rowcount == 2
    cur.execute(f"DELETE FROM {name} WHERE a = 2")
    conn.commit()
    assert rows(conn, f"SELECT a, b FROM {name}") == [(1, "z"), (1, "z")]


def test_plain_table_is_left_to_monetdb(connect: Connect, unique_name: Names) -> None:
    name = unique_name("facts")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} (a INT, b INT) -- tique: plain")
    cur.execute(f"INSERT INTO {name} VALUES (1, 2)")
    assert rows(conn, f"SELECT a + b FROM {name}") == [(3,)]
    raw = conn.db.connect_raw()
    assert raw.execute(f"SELECT COUNT(*) FROM {name}").scalar() == 1  # a real MonetDB table of that name
    raw.close()


def test_drop_table_and_indexes(connect: Connect, unique_name: Names) -> None:
    name = unique_name("gone")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT)")
    cur.execute(f"CREATE INDEX {name}_v ON {name} (v)")
    cur.execute(f"INSERT INTO {name} VALUES (1, 1)")
    conn.commit()
    cur.execute(f"DROP TABLE {name}")
    with pytest.raises(ProgrammingError, match="no such table"):
        cur.execute(f"SELECT * FROM {name}")
    conn.rollback()
    cur.execute(f"DROP TABLE IF EXISTS {name}")
    cur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY)")  # the name is free again
    cur.execute(f"CREATE TABLE IF NOT EXISTS {name} (k INT PRIMARY KEY)")
    with pytest.raises(ProgrammingError, match="already in use"):
        cur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY)")


@pytest.mark.parametrize(
    ("statement", "construct"),
    [
        ("CREATE TABLE {t}_fk (a INT REFERENCES {t} (v))", "FOREIGN KEY .* primary key"),
        ("CREATE TABLE {t}_fk (a INT REFERENCES {t} (k) ON DELETE CASCADE)", "ON DELETE CASCADE"),
        ("ALTER TABLE {t} ADD CONSTRAINT {t}_u UNIQUE (v)", "ALTER TABLE"),
        ("ALTER TABLE {t} ALTER COLUMN v SET DATA TYPE VARCHAR(99)", "ALTER TABLE"),
        ("CREATE OR REPLACE VIEW {t}_view AS SELECT * FROM {t}", "CREATE OR REPLACE VIEW"),
        ("TRUNCATE {t}, {t}", "TRUNCATE"),
        ("INSERT INTO {t} (k, v) VALUES (1, 'a') ON CONFLICT DO NOTHING", "ON CONFLICT"),
    ],
)
def test_unsupported_constructs_are_named(connect: Connect, kv: str, statement: str, construct: str) -> None:
    cur = connect().cursor()
    with pytest.raises((NotSupportedError, ProgrammingError), match=construct):
        cur.execute(statement.format(t=kv))


def test_syntax_error_keeps_monetdbs_message(connect: Connect) -> None:
    with pytest.raises(ProgrammingError) as info:
        connect().cursor().execute("SELECT FROM WHERE 1")
    assert "syntax error" in str(info.value).lower()
    assert info.value.sqlstate == "42000"


def test_unknown_table_and_column_say_which(connect: Connect, kv: str) -> None:
    cur = connect(on_statement_error="continue").cursor()
    with pytest.raises(ProgrammingError, match="no_such_tbl"):
        cur.execute("SELECT * FROM no_such_tbl")
    with pytest.raises(ProgrammingError, match="no_such_col"):
        cur.execute(f"SELECT no_such_col FROM {kv}")


def test_parameters_are_quoted_not_pasted(connect: Connect, kv: str) -> None:
    conn = connect()
    evil = "x'); DROP TABLE " + kv + "; --"
    conn.cursor().execute(f"INSERT INTO {kv} (k, v) VALUES (%s, %s)", (1, evil[:32]))
    conn.cursor().execute(f"UPDATE {kv} SET v = %s WHERE k = %s", ("it's \\ fine", 1))
    conn.commit()
    assert rows(conn, f"SELECT v FROM {kv} WHERE v = %s", ("it's \\ fine",)) == [("it's \\ fine",)]
    with pytest.raises(ProgrammingError, match="parameters"):
        conn.cursor().execute(f"SELECT * FROM {kv} WHERE k = %s", (1, 2))


def test_types_round_trip_through_the_cache(connect: Connect, unique_name: Names) -> None:
    name = unique_name("typed")
    conn = connect()
    cur = conn.cursor()
    cur.execute(
        f"CREATE TABLE {name} (k BIGINT PRIMARY KEY, d DECIMAL(10,2), f DOUBLE, b BOOLEAN, dt DATE, ts TIMESTAMP)"
    )
    values = (
        2**40,
        decimal.Decimal("12.30"),
        0.5,
        True,
        datetime.date(2024, 2, 29),
        datetime.datetime(2024, 1, 2, 3, 4, 5),
    )
    cur.execute(f"INSERT INTO {name} VALUES (%s, %s, %s, %s, %s, %s)", values)
    assert rows(conn, f"SELECT * FROM {name}") == [values]
    conn.commit()
    assert rows(conn, f"SELECT * FROM {name} WHERE k = %s", (2**40,)) == [values]


def test_cursor_api(connect: Connect, kv: str) -> None:
    conn = connect()
    cur = conn.cursor()
    cur.executemany(f"INSERT INTO {kv} (k, v) VALUES (%s, %s)", [(i, str(i)) for i in range(5)])
    assert cur.description is None
    with pytest.raises(ProgrammingError):
        cur.fetchone()
    cur.execute(f"SELECT k FROM {kv} ORDER BY k")
    assert cur.rowcount == 5
    assert cur.fetchone() == (0,)
    cur.arraysize = 2
    assert cur.fetchmany() == [(1,), (2,)]
    assert list(cur) == [(3,), (4,)]
    assert cur.fetchone() is None
    cur.execute(f"SELECT k FROM {kv} ORDER BY k")  # re-executed: rows again
    assert cur.fetchone() == (0,)
    cur.close()
    with pytest.raises(InterfaceError):
        cur.execute("SELECT 1")


def test_autocommit_and_context_manager(connect: Connect, kv: str) -> None:
    conn = connect()
    conn.autocommit = True
    conn.cursor().execute(f"INSERT INTO {kv} (k, v) VALUES (1, 'auto')")
    assert rows(connect(), f"SELECT v FROM {kv}") == [("auto",)]
    conn.autocommit = False
    with conn:
        conn.cursor().execute(f"INSERT INTO {kv} (k, v) VALUES (2, 'ctx')")
    with pytest.raises(ZeroDivisionError), conn:
        conn.cursor().execute(f"INSERT INTO {kv} (k, v) VALUES (3, 'lost')")
        raise ZeroDivisionError
    assert rows(connect(), f"SELECT k FROM {kv} ORDER BY k") == [(1,), (2,)]


def test_explicit_transaction_statements(connect: Connect, kv: str) -> None:
    conn = connect()
    cur = conn.cursor()
    cur.execute("START TRANSACTION")
    cur.execute(f"INSERT INTO {kv} (k, v) VALUES (1, 'a')")
    cur.execute("ROLLBACK")
    cur.execute(f"INSERT INTO {kv} (k, v) VALUES (2, 'b')")
    cur.execute("COMMIT")
    assert rows(connect(), f"SELECT k FROM {kv}") == [(2,)]


def test_direct_write_mode(connect: Connect, kv: str) -> None:
    conn = connect(write_mode="direct")
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {kv} (k, v) VALUES (1, 'a'), (2, 'b')")
    assert conn.transaction().writes[f"sys.{kv}"].pending == {}  # already in the engine
    cur.execute(f"UPDATE {kv} SET v = 'c' WHERE k = 2")
    conn.commit()
    assert rows(connect(), f"SELECT k, v FROM {kv} ORDER BY k") == [(1, "a"), (2, "c")]


@pytest.mark.parametrize("formulation", ["point", "analytical"])
def test_both_snapshot_formulations_agree(connect: Connect, kv: str, formulation: str) -> None:
    writer = connect()
    cur = writer.cursor()
    cur.executemany(f"INSERT INTO {kv} (k, v) VALUES (%s, %s)", [(i, f"v{i}") for i in range(20)])
    writer.commit()
    cur.execute(f"UPDATE {kv} SET v = 'new' WHERE k < 5")
    cur.execute(f"DELETE FROM {kv} WHERE k >= 15")
    writer.commit()
    reader = connect(snapshot=formulation)
    expected = [(i, "new" if i < 5 else f"v{i}") for i in range(15)]
    assert rows(reader, f"SELECT k, v FROM {kv} ORDER BY k") == expected
    assert rows(reader, f"SELECT v FROM {kv} WHERE k = 3") == [("new",)]
    assert rows(reader, f"SELECT COUNT(*), MAX(k) FROM {kv}") == [(15, 14)]


def test_point_read_pushes_the_key_filter_into_storage_and_cache(server, unique_name: Names) -> None:  # type: ignore[no-untyped-def]
    # Over MAPI: the same kernel and optimizer as embedded, but PLAN through the embedded C API sometimes
    # returns an empty result (or the previous statement's count) instead of the plan.
    conn = tique.connect(server.url)
    kv = unique_name("kv")
    conn.cursor().execute(f"CREATE TABLE {kv} (k INT PRIMARY KEY, v VARCHAR(32), n INT DEFAULT 7)")
    raw = conn.db.connect_raw()
    # stable rows in Storage (an empty table is pruned from the plan by MonetDB, as the paper's Figure 6c shows)
    raw.execute(f"INSERT INTO {storage(raw, kv)} VALUES (42, 'stable', 1), (43, 'other', 1)")
    conn.cursor().execute(f"INSERT INTO {kv} (k, v) VALUES (50, 'recent')")  # and versions in the Cache
    conn.commit()
    sql = conn.rewrite(f"SELECT v FROM {kv} WHERE k = %s", (42,))
    planned = raw.execute(f"PLAN {sql}")
    raw.close()
    plan = "\n".join(str(r[0]) for r in planned.rows) or repr(planned)
    assert rows(conn, f"SELECT v FROM {kv} WHERE k = %s", (42,)) == [("stable",)]
    scans = [line for line in plan.splitlines() if f"{kv}__storage" in line or f"{kv}__cache" in line]
    assert any(f"{kv}__storage" in line for line in scans) and any(f"{kv}__cache" in line for line in scans), plan
    # in MonetDB's relational plan each scan sits under a select whose predicate list closes it: ") [ ... ]"
    filters = [line for line in plan.splitlines() if line.lstrip("=| ").startswith(") [") and '= int "42"' in line]
    on_storage = [f for f in filters if f"{kv}__storage" in f]
    on_cache = [f for f in filters if '"tq_c_1"."k" = int "42"' in f]
    assert len(on_storage) == 1 and len(on_cache) == 1, plan  # Storage and committed Cache versions
    # the snapshot carries only the columns the statement uses (and the key)
    assert '"n"' not in sql and '"v"' in sql
    # a pending write of another key stays in the client: no scan for the transaction's own versions
    conn.cursor().execute(f"UPDATE {kv} SET v = 'mine' WHERE k = 43")
    assert conn.rewrite(f"SELECT v FROM {kv} WHERE k = %s", (42,)).count(f"{kv}__cache") == 1
    # a read that needs it sends it to the Cache and reads it there (a second Cache scan), and so do later reads
    assert conn.rewrite(f"SELECT v FROM {kv} WHERE k = %s", (43,)).count(f"{kv}__cache") == 2
    assert rows(conn, f"SELECT v FROM {kv} WHERE k = %s", (43,)) == [("mine",)]
    assert conn.rewrite(f"SELECT v FROM {kv} WHERE k = %s", (42,)).count(f"{kv}__cache") == 2
    assert sql.count(f"{kv}__cache") == 1
    conn.close()


def test_writes_that_match_nothing_leave_the_transaction_read_only(connect: Connect, kv: str) -> None:
    # found by the model test: an empty DELETE used to send an empty write-set at COMMIT
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"DELETE FROM {kv} WHERE k = -1")
    cur.execute(f"UPDATE {kv} SET v = 'x' WHERE k = -1")
    assert cur.rowcount == 0
    conn.commit()
    assert conn.last_commit is not None and conn.last_commit.cts is None


def test_bulk_load_writes_stable_rows_to_storage(connect: Connect, kv: str, unique_name: Names) -> None:
    conn = connect()
    assert conn.bulk_load(kv, [(i, f"v{i}", i) for i in range(2500)]) == 2500
    assert rows(conn, f"SELECT COUNT(*), SUM(n) FROM {kv}") == [(2500, sum(range(2500)))]
    raw = conn.db.connect_raw()
    assert raw.execute(f"SELECT COUNT(*) FROM {cache(raw, kv)}").scalar() == 0  # no versions, no metadata
    raw.close()
    conn.cursor().execute(f"UPDATE {kv} SET v = 'new' WHERE k = 7")  # versions on top of stable rows
    conn.commit()
    assert rows(conn, f"SELECT v FROM {kv} WHERE k = 7") == [("new",)]
    with pytest.raises(IntegrityError):
        conn.bulk_load(kv, [(7, "again", 0)])  # Storage's primary key refuses a duplicate
    bag = unique_name("bag")
    conn.cursor().execute(f"CREATE TABLE {bag} (a INT)")
    conn.bulk_load(bag, [(1,), (1,)])
    conn.bulk_load(bag, [(2,), (2,)])  # a second load: its hidden row ids must not collide
    assert rows(conn, f"SELECT COUNT(*) FROM {bag}") == [(4,)]
    conn.cursor().execute(f"DELETE FROM {bag} WHERE a = 1")
    assert conn.execute(f"SELECT COUNT(*) FROM {bag}").fetchone() == (2,)
    conn.commit()
    assert rows(conn, f"SELECT a, COUNT(*) FROM {bag} GROUP BY a") == [(2, 2)]


def test_a_read_by_exact_key_flushes_pending_writes_only_when_one_has_that_key(connect: Connect, kv: str) -> None:
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {kv} (k, v) VALUES (1, 'a'), (2, 'b')")
    conn.commit()
    cur.execute(f"UPDATE {kv} SET v = 'new' WHERE k = %s", (1,))
    assert rows(conn, f"SELECT v FROM {kv} WHERE k = %s", (2,)) == [("b",)]
    assert own_cache_rows(conn, kv) == 0  # no pending write has key 2: nothing to send first
    assert rows(conn, f"SELECT v FROM {kv} WHERE k = %s", ("1",)) == [("new",)]  # a string for an INT key: flush
    assert own_cache_rows(conn, kv) == 1
    cur.execute(f"UPDATE {kv} SET v = 'newer' WHERE k = %s", (1,))
    assert rows(conn, f"SELECT v FROM {kv} WHERE k = %s", (1,)) == [("newer",)]
    cur.execute(f"UPDATE {kv} SET v = 'b2' WHERE k = %s", (2,))
    assert rows(conn, f"SELECT k, v FROM {kv} ORDER BY k") == [(1, "newer"), (2, "b2")]  # a scan flushes all
    conn.commit()
    assert rows(conn, f"SELECT k, v FROM {kv} ORDER BY k") == [(1, "newer"), (2, "b2")]


def test_insert_check_flush_defers_the_duplicate_check_to_the_next_read_or_commit(connect: Connect, kv: str) -> None:
    conn = connect(insert_check="flush", on_statement_error="continue")
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {kv} (k, v) VALUES (1, 'a')")
    conn.commit()
    cur.execute(f"INSERT INTO {kv} (k, v) VALUES (2, 'b')")
    with pytest.raises(tique.IntegrityError, match="duplicate key"):
        cur.execute(f"INSERT INTO {kv} (k, v) VALUES (2, 'again')")  # within the transaction: at once
    cur.execute(f"INSERT INTO {kv} (k, v) VALUES (1, 'dup')")  # against the snapshot: not yet checked
    with pytest.raises(tique.IntegrityError, match=r"duplicate key \(k=1\)"):
        cur.execute(f"SELECT v FROM {kv} WHERE k = 1")  # the read sends the rows: checked there
    with pytest.raises(tique.InterfaceError, match="rollback"):
        cur.execute(f"SELECT v FROM {kv}")
    conn.rollback()
    cur.execute(f"INSERT INTO {kv} (k, v) VALUES (1, 'dup')")
    with pytest.raises(tique.IntegrityError, match="duplicate key"):
        conn.commit()  # or at COMMIT, which then rolls back
    assert rows(conn, f"SELECT k, v FROM {kv} ORDER BY k") == [(1, "a")]


def test_insert_check_flush_checks_every_table_in_one_query_and_names_the_duplicate(
    connect: Connect, kv: str, unique_name: Names
) -> None:
    other = unique_name("other")
    conn = connect(insert_check="flush")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {other} (a INT, b INT, PRIMARY KEY (a, b))")
    cur.execute(f"INSERT INTO {other} VALUES (1, 1)")
    conn.commit()
    cur.execute(f"INSERT INTO {kv} (k, v) VALUES (5, 'new')")
    cur.execute(f"INSERT INTO {other} VALUES (1, 2), (1, 1)")  # (1, 1) exists: found when the rows are sent
    with pytest.raises(tique.IntegrityError, match=rf"duplicate key \(a=1, b=1\) in table '{other}'"):
        conn.commit()
    assert rows(conn, f"SELECT COUNT(*) FROM {kv}") == [(0,)] and rows(conn, f"SELECT COUNT(*) FROM {other}") == [(1,)]


def test_analytical_slots_queue_scans_but_not_point_reads(connect: Connect, kv: str) -> None:
    writer = connect()
    writer.cursor().execute(f"INSERT INTO {kv} (k, v) VALUES (1, 'a'), (2, 'b')")
    writer.commit()
    scanner, pointer = connect(analytical_slots=1), connect(analytical_slots=1)
    gate = scanner.db.analytical_gate(1)
    assert gate is pointer.db.analytical_gate(1)  # one turn per process, database and setting
    gate.acquire()  # someone else's analytical read holds the only slot
    got: list[object] = []
    waiting = threading.Thread(target=lambda: got.append(rows(scanner, f"SELECT COUNT(*) FROM {kv}")))
    waiting.start()
    waiting.join(0.5)
    assert waiting.is_alive() and not got  # the scan waits its turn
    assert rows(pointer, f"SELECT v FROM {kv} WHERE k = %s", (2,)) == [("b",)]  # a point read does not
    gate.release()
    waiting.join(30)
    assert got == [[(2,)]]


def test_a_read_pinning_part_of_a_composite_key_skips_unrelated_pending_writes(
    connect: Connect, unique_name: Names
) -> None:
    lines = unique_name("lines")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {lines} (o INT, n INT, qty INT, PRIMARY KEY (o, n))")
    cur.execute(f"INSERT INTO {lines} VALUES (1, 1, 10), (1, 2, 20), (2, 1, 30)")
    conn.commit()
    cur.execute(f"UPDATE {lines} SET qty = qty + 1 WHERE o = %s AND n = %s", (1, 2))
    assert rows(conn, f"SELECT SUM(qty) FROM {lines} WHERE o = %s", (2,)) == [(30,)]
    assert own_cache_rows(conn, lines) == 0  # order 2 has no pending line: nothing sent
    assert rows(conn, f"SELECT SUM(qty) FROM {lines} WHERE o = %s", (1,)) == [(31,)]  # order 1 has: sent first
    assert own_cache_rows(conn, lines) == 1
    cur.execute(f"DELETE FROM {lines} WHERE o = %s AND n = %s", (2, 1))
    assert rows(conn, f"SELECT COUNT(*) FROM {lines} WHERE n = %s", (1,)) == [(1,)]  # the tombstone matches n=1
    conn.commit()
    assert rows(conn, f"SELECT o, n, qty FROM {lines} ORDER BY o, n") == [(1, 1, 10), (1, 2, 21)]
