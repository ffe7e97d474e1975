"""A statement is atomic: when it fails, none of its rows is written and the transaction goes on.

Each case runs a good write, a statement that fails part-way (on its second row, or on a key it moves), and
another good write, then commits: the table must equal the state without the failed statement. Every
combination of write_mode (buffered: rows wait in the client; direct: sent at once) and insert_check
(immediate: keys checked at the statement; flush: checked when the rows are sent) is covered.

With insert_check='flush' and buffered writes, a key clashing with the snapshot is only found when the rows are
sent (that is what the setting means): the statement returns, and the COMMIT raises IntegrityError and commits
nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

import tique
from tique.errors import DatabaseError, IntegrityError

Names = Callable[[str], str]
MODES = [(w, c) for w in ("buffered", "direct") for c in ("immediate", "flush")]


@pytest.fixture
def table(embedded_url: str, unique_name: Names) -> Iterator[str]:
    name = unique_name("atom")
    conn = tique.connect(embedded_url, on_statement_error="continue")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT NOT NULL, w INT)")
    # w is NULL on row 3 only: SET v = w fails there, and succeeds on every other row first or after
    cur.executemany(
        f"INSERT INTO {name} VALUES (%s, %s, %s)", [(k, k, None if k == 3 else k * 10) for k in range(1, 6)]
    )
    conn.commit()
    yield name
    conn.close()


def contents(url: str, table: str) -> list[tuple[int, int, int | None]]:
    conn = tique.connect(url, on_statement_error="continue")
    cur = conn.cursor()
    cur.execute(f"SELECT k, v, w FROM {table} ORDER BY k")
    rows = [tuple(r) for r in cur.fetchall()]
    conn.close()
    return rows  # type: ignore[return-value]


def run_case(
    url: str, table: str, mode: tuple[str, str], failing: str, deferred: bool = False, error: type = IntegrityError
) -> None:
    """Good write, failing statement, good write, commit; the table is as if the failing one never ran."""
    write_mode, insert_check = mode
    before = contents(url, table)
    conn = tique.connect(url, write_mode=write_mode, insert_check=insert_check, on_statement_error="continue")
    cur = conn.cursor()
    try:
        cur.execute(f"UPDATE {table} SET w = -1 WHERE k = 5")
        if deferred and mode == ("buffered", "flush"):
            cur.execute(failing)  # the clash is found when the rows are sent: at COMMIT, which commits nothing
            with pytest.raises(IntegrityError):
                conn.commit()
            assert contents(url, table) == before
            return
        with pytest.raises(error):
            cur.execute(failing)
        cur.execute(f"INSERT INTO {table} VALUES (100, 100, 100)")
        cur.execute(f"SELECT k, v, w FROM {table} ORDER BY k")
        seen = [tuple(r) for r in cur.fetchall()]
        conn.commit()
    finally:
        conn.close()
    expected = sorted([r if r[0] != 5 else (5, r[1], -1) for r in before] + [(100, 100, 100)])
    assert seen == expected, "the transaction saw part of the failed statement"
    assert contents(url, table) == expected, "part of the failed statement committed"


@pytest.mark.parametrize("mode", MODES)
def test_multi_row_insert_with_a_duplicate_second_row(embedded_url: str, table: str, mode: tuple[str, str]) -> None:
    run_case(embedded_url, table, mode, f"INSERT INTO {table} VALUES (50, 50, 50), (2, 2, 2), (51, 51, 51)", True)


@pytest.mark.parametrize("mode", MODES)
def test_multi_row_insert_with_a_null_second_row(embedded_url: str, table: str, mode: tuple[str, str]) -> None:
    run_case(embedded_url, table, mode, f"INSERT INTO {table} VALUES (50, 50, 50), (51, NULL, 51)")


@pytest.mark.parametrize("mode", MODES)
def test_insert_select_with_a_duplicate_row(embedded_url: str, table: str, mode: tuple[str, str]) -> None:
    run_case(embedded_url, table, mode, f"INSERT INTO {table} SELECT k + 2, v, w FROM {table} WHERE k <= 2", True)


@pytest.mark.parametrize("mode", MODES)
def test_update_hitting_not_null_part_way(embedded_url: str, table: str, mode: tuple[str, str]) -> None:
    run_case(embedded_url, table, mode, f"UPDATE {table} SET v = w WHERE k < 5")


@pytest.mark.parametrize("mode", MODES)
def test_update_moving_a_key_onto_another(embedded_url: str, table: str, mode: tuple[str, str]) -> None:
    # row 1 moves onto key 3, which stays; rows 2 and 4 change in place and must not keep their change
    failing = f"UPDATE {table} SET k = CASE WHEN k = 1 THEN 3 ELSE k END, v = v + 1000 WHERE k < 5"
    run_case(embedded_url, table, mode, failing, True)


@pytest.mark.parametrize("mode", MODES)
def test_update_moving_two_keys_onto_one(embedded_url: str, table: str, mode: tuple[str, str]) -> None:
    failing = f"UPDATE {table} SET k = CASE WHEN k IN (1, 2) THEN 60 ELSE k END, v = v + 1000 WHERE k < 5"
    run_case(embedded_url, table, mode, failing)


@pytest.mark.parametrize("mode", MODES)
def test_failed_write_after_a_read_of_own_writes(embedded_url: str, table: str, mode: tuple[str, str]) -> None:
    """The failing UPDATE first sends earlier writes to the engine (to read them): those stay, its own do not."""
    write_mode, insert_check = mode
    conn = tique.connect(embedded_url, write_mode=write_mode, insert_check=insert_check, on_statement_error="continue")
    cur = conn.cursor()
    try:
        cur.execute(f"INSERT INTO {table} VALUES (7, 7, 70)")
        with pytest.raises(IntegrityError):
            cur.execute(f"UPDATE {table} SET v = w WHERE k >= 2")
        conn.commit()
    finally:
        conn.close()
    rows = contents(embedded_url, table)
    assert rows == [(k, k, None if k == 3 else k * 10) for k in range(1, 6)] + [(7, 7, 70)]


@pytest.mark.parametrize("insert_check", ["immediate", "flush"])
def test_direct_write_the_engine_refuses_is_undone(embedded_url: str, table: str, insert_check: str) -> None:
    """In direct mode a statement's rows go to the engine at once; when the engine refuses them (a value out of
    the column's range), none was written, and the statement is forgotten like any failed one."""
    run_case(
        embedded_url,
        table,
        ("direct", insert_check),
        f"INSERT INTO {table} VALUES (50, 50, 50), (51, 51, {2**40})",
        error=DatabaseError,
    )
