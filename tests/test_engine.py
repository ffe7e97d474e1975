"""The engine adapters against the real kernel: the same tests embedded and over MAPI."""

from __future__ import annotations

import datetime
import decimal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tique.engine import RawConnection, open_engine
from tique.engine.base import Engine
from tique.errors import DataError, IntegrityError, InterfaceError, OperationalError, ProgrammingError

Names = Callable[[str], str]


def raw_kind(conn: RawConnection) -> str:
    return conn.engine.kind  # type: ignore[attr-defined]


def test_ddl_insert_point_read(raw: RawConnection, unique_name: Names) -> None:
    t = unique_name("kv")
    raw.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v VARCHAR(20))")
    inserted = raw.execute(f"INSERT INTO {t} VALUES (1, 'one'), (2, 'two'), (3, NULL)").rowcount
    # the MAPI listener of the embedded kernel sends no update counts: unknown, as PEP 249 allows
    assert inserted == (3 if raw_kind(raw) == "embedded" else -1)
    result = raw.execute(f"SELECT v FROM {t} WHERE k = 2")
    assert result.rows == [("two",)]
    assert [c.name for c in result.columns] == ["v"]
    assert raw.execute(f"SELECT v FROM {t} WHERE k = 3").rows == [(None,)]
    assert raw.execute(f"SELECT v FROM {t} WHERE k = 99").rows == []


def test_window_function_and_union_all(raw: RawConnection, unique_name: Names) -> None:
    a, b = unique_name("a"), unique_name("b")
    raw.execute(f"CREATE TABLE {a} (k INT, v INT)")
    raw.execute(f"CREATE TABLE {b} (k INT, v INT)")
    raw.execute(f"INSERT INTO {a} VALUES (1, 10), (2, 20)")
    raw.execute(f"INSERT INTO {b} VALUES (1, 11), (3, 30)")
    rows = raw.execute(
        f"SELECT k, v FROM (SELECT k, v, RANK() OVER (PARTITION BY k ORDER BY v DESC) AS rk "
        f"FROM (SELECT k, v FROM {a} UNION ALL SELECT k, v FROM {b}) u) r WHERE rk = 1 ORDER BY k"
    ).rows
    assert rows == [(1, 11), (2, 20), (3, 30)]


def test_reexecuted_statement_fetches_rows_again(raw: RawConnection) -> None:
    # the monetdbe 0.11 Python cursor returned None from fetchone() when executed again (fetchall() was right)
    for _ in range(3):
        assert raw.execute("SELECT 41 + 1").rows == [(42,)]


def test_sum_of_bigint_and_hugeint(raw: RawConnection, unique_name: Names) -> None:
    t = unique_name("big")
    raw.execute(f"CREATE TABLE {t} (v BIGINT)")
    raw.execute(f"INSERT INTO {t} VALUES (9000000000000000000), (9000000000000000000)")
    with pytest.raises(DataError, match="overflow"):
        raw.execute(f"SELECT SUM(v) FROM {t}")
    assert raw.execute(f"SELECT SUM(CAST(v AS HUGEINT)) FROM {t}").scalar() == 18000000000000000000
    assert raw.execute(f"SELECT SUM(v / 1000) FROM {t}").scalar() == 18000000000000000
    assert raw.execute("SELECT CAST(170141183460469231731687303715884105727 AS HUGEINT)").scalar() == 2**127 - 1
    assert raw.execute("SELECT CAST(NULL AS HUGEINT)").scalar() is None


def test_types_round_trip(raw: RawConnection) -> None:
    row = raw.execute(
        "SELECT CAST(1.25 AS DECIMAL(10,2)), 2.5e0, true, DATE '2024-02-29', "
        "TIMESTAMP '2024-02-29 13:14:15.250', TIME '01:02:03', 'it''s', CAST(NULL AS INT), CAST(NULL AS DOUBLE)"
    ).rows[0]
    assert row == (
        decimal.Decimal("1.25"),
        2.5,
        True,
        datetime.date(2024, 2, 29),
        datetime.datetime(2024, 2, 29, 13, 14, 15, 250000),
        datetime.time(1, 2, 3),
        "it's",
        None,
        None,
    )


@pytest.mark.parametrize("extra", [0, 1])
def test_results_on_either_side_of_the_held_fetch_read_alike(
    raw: RawConnection, unique_name: Names, extra: int
) -> None:
    """Embedded results of at most HELD_FETCH_ROWS rows are fetched and cleaned up keeping the GIL, larger ones
    letting it go: both read every type, NULLs and strings the same."""
    from tique.engine.monetdbe_values import HELD_FETCH_ROWS

    n = HELD_FETCH_ROWS + extra
    t = unique_name("held")
    raw.execute(f"CREATE TABLE {t} (i INT, s VARCHAR(12), d DOUBLE, ts TIMESTAMP, b BOOLEAN)")
    raw.execute(
        f"INSERT INTO {t} VALUES "
        + ", ".join(
            f"({v}, {'NULL' if v % 7 == 0 else repr(f'r{v}')}, {v / 4.0!r}, "
            f"TIMESTAMP '2024-01-01 00:00:00' + INTERVAL '{v}' SECOND, {str(v % 2 == 0).upper()})"
            for v in range(n)
        )
    )
    got = raw.execute(f"SELECT i, s, d, ts, b FROM {t} ORDER BY i").rows
    start = datetime.datetime(2024, 1, 1)
    want = [
        (v, None if v % 7 == 0 else f"r{v}", v / 4.0, start + datetime.timedelta(seconds=v), v % 2 == 0)
        for v in range(n)
    ]
    assert got == want
    with pytest.raises(ProgrammingError):  # an error after a held fetch still says what failed
        raw.execute(f"SELECT nosuch FROM {t}")
    assert raw.execute(f"SELECT COUNT(*) FROM {t}").scalar() == n


@pytest.mark.parametrize("limit", [None, 10])
def test_execute_atomically_is_all_or_nothing(
    raw: RawConnection, unique_name: Names, monkeypatch: pytest.MonkeyPatch, limit: int | None
) -> None:
    # limit: over MAPI, statements longer than ONE_TEXT_LIMIT go one by one inside START TRANSACTION ... COMMIT
    if limit is not None:
        monkeypatch.setattr("tique.engine.server.ONE_TEXT_LIMIT", limit)
    a, b = unique_name("a"), unique_name("b")
    raw.execute(f"CREATE TABLE {a} (v INT)")
    raw.execute(f"CREATE TABLE {b} (v INT)")
    raw.execute_atomically(
        [f"INSERT INTO {a} VALUES (1)", f"INSERT INTO {b} VALUES (2)", f"INSERT INTO {a} VALUES (3)"]
    )
    assert raw.execute(f"SELECT v FROM {a} ORDER BY v").rows == [(1,), (3,)]
    assert raw.execute(f"SELECT v FROM {b}").rows == [(2,)]
    with pytest.raises(ProgrammingError):
        raw.execute_atomically([f"INSERT INTO {a} VALUES (4)", "INSERT INTO no_such_table VALUES (5)"])
    with pytest.raises(DataError):
        raw.execute_atomically([f"INSERT INTO {b} VALUES (6)", f"INSERT INTO {a} VALUES (1 / 0)"])
    assert raw.execute(f"SELECT v FROM {a} ORDER BY v").rows == [(1,), (3,)]  # nothing of either stayed
    assert raw.execute(f"SELECT v FROM {b}").rows == [(2,)]
    raw.execute(f"INSERT INTO {a} VALUES (7)")  # back in autocommit: a single statement commits on its own
    other = raw.engine.connect()  # type: ignore[attr-defined]
    try:
        assert other.execute(f"SELECT COUNT(*) FROM {a}").scalar() == 3
    finally:
        other.close()


def test_syntax_error_keeps_monetdb_message(raw: RawConnection) -> None:
    with pytest.raises(ProgrammingError) as info:
        raw.execute("SELEC 1")
    assert info.value.sqlstate == "42000"
    assert "syntax error" in str(info.value) and "selec" in str(info.value).lower()


def test_unknown_table_names_it(raw: RawConnection) -> None:
    with pytest.raises(ProgrammingError) as info:
        raw.execute("SELECT * FROM no_such_table_here")
    assert "no_such_table_here" in str(info.value)


def test_duplicate_key_is_integrity_error(raw: RawConnection, unique_name: Names) -> None:
    t = unique_name("dup")
    raw.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY)")
    raw.execute(f"INSERT INTO {t} VALUES (1)")
    with pytest.raises(IntegrityError):
        raw.execute(f"INSERT INTO {t} VALUES (1)")


def test_user_ddl_that_cannot_be_prepared(raw: RawConnection, unique_name: Names) -> None:
    # the monetdbe 0.11 Python cursor PREPAREs every statement, and ALTER USER cannot be prepared
    user = unique_name("u")
    raw.execute(f"CREATE USER \"{user}\" WITH PASSWORD 'first' NAME 'Test' SCHEMA sys")
    raw.execute(f"ALTER USER \"{user}\" WITH UNENCRYPTED PASSWORD 'second'")
    assert raw.execute(f"SELECT COUNT(*) FROM sys.users WHERE name = '{user}'").scalar() == 1


def test_closed_connection_refuses(engine: Engine) -> None:
    conn = engine.connect()
    conn.close()
    assert conn.closed
    with pytest.raises(InterfaceError):
        conn.execute("SELECT 1")


def test_threads_run_in_parallel_sessions(engine: Engine, unique_name: Names) -> None:
    t = unique_name("par")
    setup = engine.connect()
    setup.execute(f"CREATE TABLE {t} (thread INT, i INT)")
    errors: list[BaseException] = []

    def work(n: int) -> None:
        conn = engine.connect()
        try:
            for i in range(50):
                conn.execute(f"INSERT INTO {t} VALUES ({n}, {i})")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            conn.close()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert setup.execute(f"SELECT COUNT(*), COUNT(DISTINCT thread) FROM {t}").rows == [(200, 4)]
    setup.close()


def test_second_embedded_database_in_one_process_is_refused(embedded_engine: Engine, tmp_path: Path) -> None:
    embedded_engine.connect().close()
    keep = embedded_engine.connect()  # the session database stays open
    other = open_engine(f"monetdbe://{tmp_path / 'other'}")
    with pytest.raises(OperationalError) as info:
        other.connect()
    assert "one database per process" in str(info.value)
    assert not (tmp_path / "other").exists()  # nothing written
    keep.close()


def test_missing_parent_directory(tmp_path: Path) -> None:
    with pytest.raises(OperationalError) as info:
        open_engine(f"monetdbe://{tmp_path / 'missing' / 'db'}")
    assert "does not exist" in str(info.value)
    assert not (tmp_path / "missing").exists()


def test_server_not_running() -> None:
    from tests.conftest import free_port

    port = free_port()
    engine = open_engine(f"monetdb://monetdb:monetdb@127.0.0.1:{port}/nothing")
    with pytest.raises(OperationalError) as info:
        engine.connect()
    assert "is it running" in str(info.value) and f"--port {port}" in str(info.value)


def test_exit_without_closing_is_clean_and_keeps_committed_data(tmp_path: Path) -> None:
    # The kernel could segfault at exit (its store manager racing the shutdown); committed data must survive.
    import subprocess
    import sys

    from tests.conftest import ROOT

    url = f"monetdbe://{tmp_path / 'db'}"
    for round_ in range(3):
        write = (
            "import tique\n"
            f"c = tique.connect({url!r})\n"
            "c.cursor().execute('CREATE TABLE IF NOT EXISTS kept (k INT PRIMARY KEY)')\n"
            f"rows = [(i,) for i in range({round_ * 50}, {round_ * 50 + 50})]\n"
            "c.cursor().executemany('INSERT INTO kept VALUES (%s)', rows)\n"
            "c.commit()\n"
        )
        read = (
            f"import tique\nc = tique.connect({url!r})\nprint(c.execute('SELECT COUNT(*) FROM kept').fetchone()[0])\n"
        )
        wrote = subprocess.run([sys.executable, "-c", write], capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert wrote.returncode == 0, wrote.stderr  # not -11 (SIGSEGV)
        got = subprocess.run([sys.executable, "-c", read], capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert got.returncode == 0 and got.stdout.strip() == str(50 * (round_ + 1)), got.stderr


def test_running_out_of_kernel_sessions_says_what_to_do(tmp_path: Path) -> None:
    """The embedded kernel admits 64 client sessions per process; the 65th open must say so, not just 'Failed to
    initialize client' (a fresh process, so the suite's shared database keeps its sessions)."""
    script = (
        "from tique.engine import open_engine\n"
        "import sys\n"
        f"engine = open_engine('monetdbe://{tmp_path}/db')\n"
        "sessions = []\n"
        "try:\n"
        "    for _ in range(100):\n"
        "        sessions.append(engine.connect())\n"
        "except Exception as exc:\n"
        "    print(len(sessions), exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120).stdout
    assert "64 client sessions" in out and "conn.close()" in out, out
