"""Attack: a SIGKILL between two engine statements of an operation tique runs outside the commit protocol (DDL,
bulk_load), then a restart on the same embedded directory (recovery runs at open). Afterwards the name must be
whole or absent - usable (read, write, commit, checkpoint) or free for CREATE again -, other tables' committed
rows unchanged, and a half-done operation must end in a clear error, never a silent wrong answer.

Each kill runs in a subprocess (this file run as a module): it connects, arms a statement hook that SIGKILLs the
process right after the first engine statement matching a pattern (the statement has committed: the engine
autocommits), and runs the operation. A second subprocess reopens the directory and reports what it sees as
JSON. One base database (made once per module) is copied for every kill.

Found by these attacks and fixed: DROP TABLE, ALTER TABLE (ADD/RENAME COLUMN, RENAME TO), CREATE VIEW and DROP
VIEW killed between their steps left a catalog entry without its tables, a renamed Storage the catalog did not
know, a column that could never be added, or MonetDB's own view answering tique's reads; bulk_load left part of
its rows loaded and named tique's Storage table in its error; and a table renamed away kept the constraint names
a new table of the old name needed. Each now changes its tables and tique.tables in one engine transaction, and a
new table's Storage avoids names a renamed table's constraints hold.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, start_serve

KEEP = [[1, 11], [2, 20], [3, 30], [4, 40], [5, 50]]  # committed rows of the bystander table (Cache versions)
T_ROWS = [[1, 1, 1], [2, 2, 2]]
INTERNAL = re.compile(r"tique_data|__storage|__cache|tq_[a-z]", re.I)

OPERATIONS = {
    "create": "CREATE TABLE n (k INT PRIMARY KEY, v INT)",
    "drop": "DROP TABLE t",
    "rename_column": "ALTER TABLE t RENAME COLUMN v TO v2",
    "rename_table": "ALTER TABLE t RENAME TO t2",
    "add_column": "ALTER TABLE t ADD COLUMN c INT DEFAULT 7",
    "create_view": "CREATE VIEW nv AS SELECT k, v FROM keep",
    "drop_view": "DROP VIEW tv",
}


# ---- the subprocess side ----------------------------------------------------------------------------------


def _setup(url: str) -> None:
    import tique

    conn = tique.connect(url)
    cur = conn.cursor()
    cur.execute("CREATE TABLE keep (k INT PRIMARY KEY, v INT)")
    for k, v in KEEP:
        cur.execute("INSERT INTO keep VALUES (%s, %s)", (k, v))
        conn.commit()
    cur.execute("CREATE TABLE t (k INT PRIMARY KEY, v INT, w INT NOT NULL DEFAULT 0)")
    cur.execute("INSERT INTO t VALUES (1, 1, 1), (2, 2, 2)")
    conn.commit()
    cur.execute("CREATE TABLE b (k INT PRIMARY KEY, v INT)")
    cur.execute("CREATE VIEW tv AS SELECT k, v FROM keep")
    conn.commit()
    conn.close()


def _run(conn: Any, operation: str) -> None:
    if operation == "bulk_load":
        conn.bulk_load("b", [(i, i) for i in range(1, 2501)], batch=1000)
    else:
        conn.cursor().execute(OPERATIONS[operation])
    conn.commit()


def _kill(url: str, operation: str, pattern: str) -> None:
    """SIGKILL right after the first statement of ``operation`` matching ``pattern``; exit 3 if none did."""
    import tique

    conn = tique.connect(url)
    wanted = re.compile(pattern)

    def hook(sql: str, _seconds: float, error: Exception | None) -> None:
        if error is None and wanted.search(sql):
            print("killed after: " + sql[:200], flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

    conn.statement_hooks.append(hook)
    _run(conn, operation)
    conn.statement_hooks.clear()
    conn.close()
    sys.exit(3)


def _probe(url: str, operation: str) -> None:
    """Reopen (recovery runs), try what an application would, report each outcome as JSON."""
    import tique
    from tique.checkpoint import Checkpointer
    from tique.database import Database

    out: dict[str, Any] = {}
    conn = tique.connect(url)
    cur = conn.cursor()

    def attempt(name: str, fn: Callable[[], Any]) -> None:
        try:
            out[name] = fn()
            conn.commit()
        except Exception as exc:  # reported, not raised: the test decides
            out[name] = f"ERR {type(exc).__name__}: {exc}"
            try:
                conn.rollback()
            except Exception:
                pass

    def rows(sql: str) -> list[list[Any]]:
        cur.execute(sql)
        return [list(r) for r in cur.fetchall()]

    def write(table: str, insert: str) -> list[list[Any]]:
        cur.execute(insert)
        conn.commit()
        return rows(f"SELECT * FROM {table} ORDER BY 1")

    attempt("keep", lambda: rows("SELECT k, v FROM keep ORDER BY k"))
    attempt("keep_write", lambda: write("keep", "UPDATE keep SET v = v + 1000 WHERE k = 2"))
    if operation == "create":
        attempt("n", lambda: rows("SELECT * FROM n ORDER BY 1"))
        attempt("n_write", lambda: write("n", "INSERT INTO n VALUES (1, 1)"))
        attempt("n_outside", lambda: rows("SELECT COUNT(*) FROM sys.tables WHERE name = 'n' AND type = 1"))
    if operation in ("drop", "rename_column", "rename_table", "add_column"):
        attempt("t", lambda: rows("SELECT * FROM t ORDER BY 1"))
        attempt("t2", lambda: rows("SELECT * FROM t2 ORDER BY 1"))
        attempt("t_write", lambda: write("t", "INSERT INTO t (k) VALUES (100)"))
    if operation == "create_view":

        def own_write_through_view() -> list[list[Any]]:
            cur.execute("UPDATE keep SET v = 999 WHERE k = 3")
            seen = rows("SELECT v FROM nv WHERE k = 3")
            conn.rollback()
            return seen

        attempt("nv_own_write", own_write_through_view)
    if operation == "drop_view":
        attempt("tv", lambda: rows("SELECT * FROM tv ORDER BY 1"))
        attempt("tv_drop", lambda: (cur.execute("DROP VIEW tv"), "dropped")[1])
    if operation == "bulk_load":
        attempt("b_count", lambda: rows("SELECT COUNT(*) FROM b"))
        attempt("b_retry", lambda: (_run(conn, "bulk_load"), "loaded")[1])

    def checkpoint() -> dict[str, Any]:
        db = Database.get(url)
        raw = db.connect_raw()
        try:
            report = Checkpointer(raw).run_once()
            return {"errors": report.errors}
        finally:
            raw.close()

    attempt("checkpoint", checkpoint)
    attempt("redo", lambda: (_run(conn, operation), "ok")[1] if operation != "bulk_load" else "skipped")
    if operation == "rename_table":
        attempt("drop_t", lambda: (cur.execute("DROP TABLE t"), "dropped")[1])
        attempt("create_t", lambda: (cur.execute("CREATE TABLE t (k INT PRIMARY KEY)"), "created")[1])
    conn.close()
    print(json.dumps(out))


def _rename_then_create(url: str) -> None:
    """No kill: RENAME TO, then CREATE TABLE of the old name."""
    import tique

    conn = tique.connect(url)
    cur = conn.cursor()
    out: dict[str, Any] = {}
    cur.execute("ALTER TABLE t RENAME TO t2")
    try:
        cur.execute("CREATE TABLE t (k INT PRIMARY KEY, v INT)")
        out["create"] = "created"
    except Exception as exc:
        out["create"] = f"ERR {type(exc).__name__}: {exc}"
    conn.close()
    print(json.dumps(out))


# ---- the test side ----------------------------------------------------------------------------------------


def _child(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.adversarial.test_attack_ddl_kills", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("ddl_kills") / "base"
    made = _child("setup", f"monetdbe://{directory}")
    assert made.returncode == 0, made.stderr
    return directory


def _killed(base: Path, tmp_path: Path, operation: str, pattern: str) -> str:
    """A copy of the base database where ``operation`` was SIGKILLed right after the statement matching
    ``pattern``; its URL."""
    directory = tmp_path / "db"
    shutil.copytree(base, directory)
    url = f"monetdbe://{directory}"
    killed = _child("kill", url, operation, pattern)
    assert killed.returncode == -signal.SIGKILL, f"no statement matched {pattern!r}: {killed.stdout}{killed.stderr}"
    return url


def _probe_at(url: str, operation: str) -> dict[str, Any]:
    probed = _child("probe", url, operation)
    assert probed.returncode == 0, probed.stderr
    state: dict[str, Any] = json.loads(probed.stdout.strip().splitlines()[-1])
    assert state["keep"] == KEEP, state  # other tables' committed rows unchanged
    assert state["keep_write"][1] == [2, 1020], state  # and the database commits
    return state


def _error(value: Any) -> str:
    return value if isinstance(value, str) and value.startswith("ERR ") else ""


def _whole_or_absent(state: dict[str, Any], name: str, rows: list[list[Any]] | None = None) -> None:
    """``name`` reads (and then reads ``rows`` if given) and the checkpointer has nothing to complain about, or it
    is absent as a plain 'no such table'."""
    if _error(state[name]):
        assert f"no such table '{name}'" in state[name], state
    elif rows is not None:
        assert state[name] == rows, state
    assert state["checkpoint"] == {"errors": []}, state
    for key, value in state.items():
        assert not INTERNAL.search(_error(value)), f"{key} leaks tique's internal names: {value}"


# CREATE TABLE: Storage, Cache, the tique.tables row, the view T
@pytest.mark.parametrize("after", [r"CREATE TABLE .*__storage", r"INSERT INTO tique\.tables"])
def test_create_table_killed_leaves_it_whole_or_absent(base: Path, tmp_path: Path, after: str) -> None:
    state = _probe_at(_killed(base, tmp_path, "create", after), "create")
    _whole_or_absent(state, "n", [])
    if _error(state["n"]):
        assert state["redo"] == "ok", state  # absent: the name is free again
    else:
        assert state["n_write"] == [[1, 1]], state
        assert state["n_outside"] == [[1]], state  # the view T other clients read was made at reopen


def test_create_table_killed_before_its_view_gets_it_from_tique_serve(base: Path, tmp_path: Path) -> None:
    """Restart with ``tique serve`` instead: it too makes the missing view T, and tique reads and writes n."""
    url = _killed(base, tmp_path, "create", r"INSERT INTO tique\.tables")
    server = start_serve(Path(url.removeprefix("monetdbe://")))
    try:
        state = _probe_at(server.url, "create")
    finally:
        server.stop()
    assert state["n"] == [] and state["n_write"] == [[1, 1]] and state["n_outside"] == [[1]], state


def test_drop_table_killed_after_its_record_keeps_the_table(base: Path, tmp_path: Path) -> None:
    """Decided, its physical change not yet made: after the restart t is whole, and the DROP can be repeated."""
    state = _probe_at(_killed(base, tmp_path, "drop", r"SELECT tique\.decide|INSERT INTO tique\.outcomes"), "drop")
    _whole_or_absent(state, "t", T_ROWS)
    assert state["t_write"] == [*T_ROWS, [100, None, 0]], state
    assert state["redo"] == "ok", state


def test_drop_table_killed_after_its_drops_leaves_it_absent(base: Path, tmp_path: Path) -> None:
    """The view, both tables and the catalog row went in one engine transaction: t is gone, and free again."""
    state = _probe_at(_killed(base, tmp_path, "drop", r"DROP VIEW IF EXISTS"), "drop")
    _whole_or_absent(state, "t", T_ROWS)
    assert "no such table 't'" in state["t"], state


def test_drop_table_killed_between_its_physical_drops(base: Path, tmp_path: Path) -> None:
    state = _probe_at(_killed(base, tmp_path, "drop", r"DROP TABLE IF EXISTS .*__storage"), "drop")
    _whole_or_absent(state, "t", T_ROWS)


def test_rename_column_killed_between_storage_and_cache(base: Path, tmp_path: Path) -> None:
    state = _probe_at(
        _killed(base, tmp_path, "rename_column", r"ALTER TABLE .*__storage. RENAME COLUMN"), "rename_column"
    )
    _whole_or_absent(state, "t", T_ROWS)


def test_rename_table_killed_between_storage_and_cache(base: Path, tmp_path: Path) -> None:
    state = _probe_at(_killed(base, tmp_path, "rename_table", r"ALTER TABLE .*__storage. RENAME TO"), "rename_table")
    usable = [name for name in ("t", "t2") if not _error(state[name])]
    assert usable and state[usable[0]] == T_ROWS, state
    assert state["checkpoint"] == {"errors": []}, state


def test_add_column_killed_after_storage_can_be_repeated(base: Path, tmp_path: Path) -> None:
    state = _probe_at(_killed(base, tmp_path, "add_column", r"ALTER TABLE .*__storage. ADD COLUMN"), "add_column")
    _whole_or_absent(state, "t", T_ROWS)
    assert state["redo"] == "ok", state


def test_add_column_killed_before_its_commit_leaves_the_old_shape(base: Path, tmp_path: Path) -> None:
    """Killed after the catalog row's UPDATE, inside the change's engine transaction: nothing took effect."""
    state = _probe_at(_killed(base, tmp_path, "add_column", r"UPDATE tique\.tables"), "add_column")
    _whole_or_absent(state, "t", T_ROWS)
    assert state["redo"] == "ok", state


def test_add_column_killed_after_its_commit_has_taken_effect(base: Path, tmp_path: Path) -> None:
    state = _probe_at(_killed(base, tmp_path, "add_column", r"^COMMIT"), "add_column")
    _whole_or_absent(state, "t", [[1, 1, 1, 7], [2, 2, 2, 7]])
    assert state["t_write"] == [[1, 1, 1, 7], [2, 2, 2, 7], [100, None, 0, 7]], state
    assert "already exists" in state["redo"], state


def test_create_view_killed_before_its_catalog_row(base: Path, tmp_path: Path) -> None:
    state = _probe_at(_killed(base, tmp_path, "create_view", r"^CREATE VIEW nv"), "create_view")
    assert state["nv_own_write"] == [[999]] or "no such table 'nv'" in state["nv_own_write"], state


def test_drop_view_killed_before_its_catalog_row(base: Path, tmp_path: Path) -> None:
    state = _probe_at(_killed(base, tmp_path, "drop_view", r"^DROP VIEW tv"), "drop_view")
    assert state["tv_drop"] == "dropped" or "no such table 'tv'" in state["tv"], state


def test_bulk_load_killed_after_a_batch_then_retried(base: Path, tmp_path: Path) -> None:
    state = _probe_at(_killed(base, tmp_path, "bulk_load", r"INSERT INTO .*__storage"), "bulk_load")
    assert (
        state["b_count"] in ([[0]], [[2500]])
        or state["b_retry"] == "loaded"
        or ("'b'" in state["b_retry"] and not INTERNAL.search(state["b_retry"]))
    ), state


def test_rename_table_then_create_the_old_name(base: Path, tmp_path: Path) -> None:
    directory = tmp_path / "db"
    shutil.copytree(base, directory)
    ran = _child("rename_then_create", f"monetdbe://{directory}")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout.strip().splitlines()[-1]) == {"create": "created"}


if __name__ == "__main__":
    mode, target = sys.argv[1], sys.argv[2]
    if mode == "setup":
        _setup(target)
    elif mode == "kill":
        _kill(target, sys.argv[3], sys.argv[4])
    elif mode == "probe":
        _probe(target, sys.argv[3])
    elif mode == "rename_then_create":
        _rename_then_create(target)
