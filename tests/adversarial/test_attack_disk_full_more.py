"""A full disk during a bulk load, DDL, a checkpoint, and the open that recovers: test_disk_full.py covers commits.

What must hold (tique/storage.py): a full disk gets an error that says what failed and what to do (StorageFull);
nothing acknowledged is lost (every committed row, every load that returned), on the running database and after
a reopen; a load or DDL that failed leaves nothing half done visible; the checkpointer on a full disk reports an
error and keeps every version, and runs again once space returns; the database opens again after space is freed.

Each test runs its writer in a child process (one embedded kernel per process): this file is also the client,
``python -m tests.adversarial.test_attack_disk_full_more MODE URL DIR``, printing one JSON object. "Low" steps
leave the disk under tique's minimum free (TIQUE_MIN_FREE_MB, tique's own check must refuse); "burst" steps
leave it above the minimum but with less room than the write needs (the engine's own write fails).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROW = 100_000
MB = 1 << 20

# ---------------------------------------------------------------------------------------------------------------
# the client (runs in a child process)
# ---------------------------------------------------------------------------------------------------------------


def _err(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def leave_free(directory: str, room: int) -> None:
    """Write ``directory``/pad so that about ``room`` bytes stay free on its file system."""
    pad = os.path.join(directory, "pad")
    if os.path.exists(pad):
        os.remove(pad)
    fs = os.statvfs(directory)
    want = fs.f_bavail * fs.f_frsize - room
    with open(pad, "wb") as f:
        if want > 0:
            f.write(b"\1" * want)


def free_pad(directory: str) -> None:
    for name in ("pad", "ballast"):
        path = os.path.join(directory, name)
        if os.path.exists(path):
            os.remove(path)


def _blob(i: int, size: int = ROW) -> str:
    return f"{i}:" + "x" * size


def _attempt(conn: Any, row_id: int, size: int = 10) -> str | None:
    import tique

    cur = conn.cursor()
    try:
        cur.execute("INSERT INTO t VALUES (%s, %s)", (row_id, _blob(row_id, size)))
        conn.commit()
        return None
    except tique.Error as exc:
        try:
            conn.rollback()
        except tique.Error:
            pass
        return _err(exc)


def _commits_around_freeing(conn: Any, directory: str, first: int, acked: list[int]) -> tuple[str | None, str | None]:
    """A commit of row ``first`` on the still full disk, then, with the pad freed, one of ``first + 1`` and three
    more (the engine's log may be broken by then); the acknowledged ids go to ``acked``. The first two's errors
    (None: acknowledged)."""
    after = _attempt(conn, first)
    if after is None:
        acked.append(first)
    free_pad(directory)
    after_space = _attempt(conn, first + 1)
    if after_space is None:
        acked.append(first + 1)
    for i in range(first + 2, first + 5):
        if _attempt(conn, i) is None:
            acked.append(i)
    return after, after_space


def _ids(conn: Any, table: str = "t") -> list[int] | str:
    import tique

    try:
        cur = conn.cursor()
        cur.execute(f"SELECT id FROM {table}")
        found = sorted(int(r[0]) for r in cur.fetchall())
        conn.rollback()
        return found
    except tique.Error as exc:
        with_rollback(conn)
        return _err(exc)


def with_rollback(conn: Any) -> None:
    import tique

    try:
        conn.rollback()
    except tique.Error:
        pass


def _setup(conn: Any, n: int = 5, size: int = 10) -> list[int]:
    conn.cursor().execute("CREATE TABLE t (id INT PRIMARY KEY, v CLOB)")
    conn.commit()
    return [i for i in range(1, n + 1) if _attempt(conn, i, size) is None]


def _rows(start: int, n: int, size: int = ROW) -> Any:
    for i in range(start, start + n):
        yield (i, _blob(i, size))


def client_load(url: str, directory: str, how: str) -> dict[str, Any]:
    """A bulk load on a full disk. how: low (under tique's minimum before the load), low_mid (the load itself
    crosses the minimum), burst (one batch bigger than the room left: the engine's write fails), csv_low,
    csv_burst (bulk_load_csv)."""
    import tique

    conn = tique.connect(url)
    acked = _setup(conn)
    loaded: list[int] = []
    csv_path = f"/tmp/attack_disk/load_{os.getpid()}.csv"
    if how.startswith("csv"):
        os.makedirs("/tmp/attack_disk", exist_ok=True)
        with open(csv_path, "w") as f:
            for i, v in _rows(1000, 80):
                f.write(f"{i},{v}\n")
    if how in ("low", "csv_low"):
        leave_free(directory, 5 * MB)  # the minimum is 8 MB
    elif how == "low_mid":
        leave_free(directory, 11 * MB)  # 3 MB above the minimum; the load wants 8 MB, in batches of 5 rows
    else:
        leave_free(directory, 3 * MB)  # the minimum is 1 MB; the load wants 8 MB in one batch
    t0 = time.monotonic()
    try:
        if how.startswith("csv"):
            n = conn.bulk_load_csv("t", csv_path)
        else:
            n = conn.bulk_load("t", _rows(1000, 80), batch=5 if how == "low_mid" else 100)
        load_error = None
        loaded = list(range(1000, 1000 + n))
    except tique.Error as exc:
        load_error = _err(exc)
    load_s = time.monotonic() - t0
    running = _ids(conn)
    after, after_space = _commits_around_freeing(conn, directory, 100, acked)  # a commit on the still full disk
    try:  # a small load once space returned
        conn.bulk_load("t", _rows(5000, 3, 10))
        load_after_space = None
        loaded += [5000, 5001, 5002]
    except tique.Error as exc:
        load_after_space = _err(exc)
    result = {
        "acked": acked,
        "loaded": loaded,
        "load_error": load_error,
        "load_s": load_s,
        "running": running,
        "after": after,
        "after_space": after_space,
        "load_after_space": load_after_space,
        "running_end": _ids(conn),
    }
    conn.close()
    return result


def client_ddl(url: str, directory: str, how: str) -> dict[str, Any]:
    """DDL on a full disk. how: create_low / alter_low / drop_low (under tique's minimum: 8 MB, 5 MB left),
    create_burst / alter_burst / drop_burst (the minimum is 1 MB; the room left is smaller than the DDL writes)."""
    import tique

    conn = tique.connect(url)
    acked = _setup(conn)
    cur = conn.cursor()
    if how.startswith(("alter", "drop", "ctas")):
        cur.execute("CREATE TABLE big (id INT PRIMARY KEY, w INT)")
        conn.commit()
        conn.bulk_load("big", ((i, i) for i in range(1, 300_001)), batch=20_000)
    if how.startswith("drop"):
        cur.execute("CREATE TABLE d (id INT PRIMARY KEY, v CLOB)")
        conn.commit()
        cur.execute("INSERT INTO d VALUES (1, 'one')")
        conn.commit()
    if how.endswith("_low"):
        leave_free(directory, 5 * MB)
    else:
        # above the 1 MB floor, under what the DDL writes (ALTER: 2.4 MB of defaults; CTAS: ~10 MB); DROP writes
        # little: under the floor
        leave_free(
            directory, {"alter": 3 * MB // 2, "ctas": 3 * MB, "create": 40_000, "drop": 40_000}[how.split("_")[0]]
        )
    statement = {
        "create": "CREATE TABLE n (id INT PRIMARY KEY, a VARCHAR(20), b BIGINT, c DOUBLE, d CLOB)",
        "alter": "ALTER TABLE big ADD COLUMN x BIGINT DEFAULT 7",
        "drop": "DROP TABLE d",
        "ctas": "CREATE TABLE n AS SELECT id, w AS a, CAST(w AS BIGINT) AS b, CAST(w AS DOUBLE) AS c, "
        "CAST(w AS VARCHAR(12)) AS d FROM big",
    }[how.split("_")[0]]
    try:
        conn.cursor().execute(statement)
        conn.commit()
        ddl_error = None
    except tique.Error as exc:
        ddl_error = _err(exc)
        with_rollback(conn)
    state = ddl_state(conn, how)
    after = _attempt(conn, 100)
    if after is None:
        acked.append(100)
    free_pad(directory)
    after_space = _attempt(conn, 101)
    if after_space is None:
        acked.append(101)
    later = []  # a few more commits once space returned: the engine's log may be broken by then
    for i in (102, 103, 104):
        later.append(_attempt(conn, i))
        if later[-1] is None:
            acked.append(i)
    result = {
        "later": later,
        "acked": acked,
        "ddl_error": ddl_error,
        "state": state,
        "after": after,
        "after_space": after_space,
        "running": _ids(conn),
        "state_after_space": ddl_state(conn, how),
    }
    conn.close()
    return result


def ddl_state(conn: Any, how: str) -> dict[str, Any]:
    """What a reader sees of the table the DDL changed."""
    import tique

    kind = how.split("_")[0].replace("ctas", "create")
    cur = conn.cursor()
    sql = {
        "create": "SELECT COUNT(*) FROM n",
        "alter": "SELECT COUNT(*), MIN(x), MAX(x) FROM big",
        "drop": "SELECT COUNT(*) FROM d",
    }[kind]
    try:
        cur.execute(sql)
        row = [None if v is None else int(v) for v in cur.fetchone()]
        conn.rollback()
        state: dict[str, Any] = {"readable": True, "row": row}
    except tique.Error as exc:
        with_rollback(conn)
        state = {"readable": False, "error": _err(exc)}
    if kind == "alter":  # the table itself, without the new column
        try:
            cur.execute("SELECT COUNT(*), SUM(w) FROM big")
            state["base"] = [int(v) for v in cur.fetchone()]
            conn.rollback()
        except tique.Error as exc:
            with_rollback(conn)
            state["base"] = _err(exc)
    if kind == "create":  # is it usable as created?
        state["columns"] = _columns(conn, "n")
    return state


def _columns(conn: Any, table: str) -> list[str] | str:
    import tique

    try:
        cur = conn.cursor()
        cur.execute(f"SELECT * FROM {table} WHERE 1 = 0")
        names = [d[0] for d in cur.description]
        conn.rollback()
        return names
    except tique.Error as exc:
        with_rollback(conn)
        return _err(exc)


def client_ckpt(url: str, directory: str, how: str) -> dict[str, Any]:
    """A checkpoint on a full disk. how: low (under tique's minimum, 4 MB: refused at the start), burst (above the
    minimum, less room than moving the Cache into Storage takes)."""
    import tique
    from tique.checkpoint.algorithm import Checkpointer

    free_pad(directory)
    conn = tique.connect(url)
    conn.cursor().execute("CREATE TABLE t (id INT PRIMARY KEY, v CLOB)")
    conn.commit()
    acked = [i for i in range(1, 61) if _attempt(conn, i, ROW // 2) is None]  # 3 MB in the Cache
    # an update and a delete, so the checkpointer also deletes Storage rows and Cache versions
    raw = conn.db.connect_raw()
    ck = Checkpointer(raw)
    first = ck.run_once()
    cur = conn.cursor()
    cur.execute("UPDATE t SET v = %s WHERE id <= 20", (_blob(7777, ROW // 2),))
    cur.execute("DELETE FROM t WHERE id > 55")
    conn.commit()
    for i in range(56, 61):
        acked.remove(i)
    for i in range(61, 101):
        if _attempt(conn, i, ROW // 2) is None:
            acked.append(i)
    leave_free(directory, 2 * MB if how == "low" else int(1.5 * MB))  # low: the minimum is 4 MB
    try:
        report = ck.run_once()
        ckpt_error = None
        ckpt_report = {"errors": report.errors, "moved": report.moved, "cleaned": report.cleaned}
    except tique.Error as exc:
        ckpt_error = _err(exc)
        ckpt_report = None
    running = _ids(conn)
    updated = _count(conn, "SELECT COUNT(*) FROM t WHERE v LIKE '7777:%'")
    after, after_space = _commits_around_freeing(conn, directory, 200, acked)
    try:
        report = ck.run_once()
        resumed: Any = {"errors": report.errors, "moved": report.moved, "cleaned": report.cleaned}
    except tique.Error as exc:
        resumed = _err(exc)
    result = {
        "first_moved": first.moved,
        "acked": acked,
        "ckpt_error": ckpt_error,
        "ckpt_report": ckpt_report,
        "running": running,
        "updated": updated,
        "after": after,
        "after_space": after_space,
        "resumed": resumed,
        "running_end": _ids(conn),
        "updated_end": _count(conn, "SELECT COUNT(*) FROM t WHERE v LIKE '7777:%'"),
    }
    raw.close()
    conn.close()
    return result


def _count(conn: Any, sql: str) -> int | str:
    import tique

    try:
        cur = conn.cursor()
        cur.execute(sql)
        n = int(cur.fetchone()[0])
        conn.rollback()
        return n
    except tique.Error as exc:
        with_rollback(conn)
        return _err(exc)


def client_prepare_recovery(url: str, directory: str, how: str) -> dict[str, Any]:
    """Rows committed, some in Storage (checkpointed) and some in the Cache; with how=unfinished a commit record
    without outcome (a client that died in COMMIT: recovery at open writes its aborted outcome). Then the process
    ends without closing (the engine's log holds what it did not flush)."""
    import tique
    from tique.checkpoint.algorithm import Checkpointer

    conn = tique.connect(url)
    acked = _setup(conn, 20, ROW // 4)
    raw = conn.db.connect_raw()
    Checkpointer(raw).run_once()
    for i in range(21, 41):
        if _attempt(conn, i, ROW // 4) is None:
            acked.append(i)
    if how == "unfinished":
        raw.execute("INSERT INTO tique.commits VALUES (999999, 1, 999999, 42)")
    print(json.dumps({"acked": acked}), flush=True)
    os._exit(0)  # no close: a crash


def client_open(url: str, directory: str, how: str) -> dict[str, Any]:
    """Open the database and read ``t`` (and optionally ``n``, ``big``, ``d``); then try one commit."""
    import tique

    t0 = time.monotonic()
    try:
        conn = tique.connect(url)
    except tique.Error as exc:
        return {"open": _err(exc), "open_s": time.monotonic() - t0}
    except Exception as exc:  # the point: anything but a clear error is a finding
        return {"open": f"UNEXPECTED {_err(exc)}", "open_s": time.monotonic() - t0}
    result: dict[str, Any] = {"open": None, "open_s": time.monotonic() - t0, "ids": _ids(conn)}
    if how.startswith("ddl_"):
        result["state"] = ddl_state(conn, how[4:])
    if how == "write":
        result["write"] = _attempt(conn, 300)
    if how == "ckpt":
        from tique.checkpoint.algorithm import Checkpointer

        raw = conn.db.connect_raw()
        try:
            report = Checkpointer(raw).run_once()
            result["ckpt"] = {"errors": report.errors, "moved": report.moved}
        except tique.Error as exc:
            result["ckpt"] = _err(exc)
        raw.close()
        result["ids_after_ckpt"] = _ids(conn)
    conn.close()
    return result


CLIENTS = {
    "load": client_load,
    "ddl": client_ddl,
    "ckpt": client_ckpt,
    "prepare_recovery": client_prepare_recovery,
    "open": client_open,
}

# ---------------------------------------------------------------------------------------------------------------
# the tests
# ---------------------------------------------------------------------------------------------------------------

if __name__ != "__main__":
    from tests.adversarial.test_disk_full import small_disk  # noqa: F401 - the fixture: a 30 MB tmpfs
    from tests.conftest import ROOT, start_serve, thinned

    @pytest.fixture
    def disk(small_disk: Path) -> Path:  # noqa: F811 - test_disk_full.py's fixture
        return small_disk

    def run(mode: str, url: str, directory: Path, how: str, min_free_mb: str, timeout: float = 90) -> Any:
        env = {**os.environ, "TIQUE_MIN_FREE_MB": min_free_mb}
        done = subprocess.run(
            [sys.executable, "-m", "tests.adversarial.test_attack_disk_full_more", mode, url, str(directory), how],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=timeout,
            env=env,
        )
        lines = done.stdout.strip().splitlines()
        assert done.returncode == 0 and lines, (
            f"client {mode} {how} exited {done.returncode} (signal?): stderr {done.stderr[-3000:]!r} "
            f"stdout {done.stdout[-1000:]!r}"
        )
        return json.loads(lines[-1])

    class Findings:
        """Every broken rule of one test, reported together (a wrong error class must not hide a lost row)."""

        def __init__(self) -> None:
            self.found: list[str] = []

        def expect(self, ok: Any, message: str) -> None:
            if not ok:
                self.found.append(message)

        def clear(self, error: str | None, what: str) -> None:
            """A full disk's error: StorageFull, saying what to do."""
            if error is None:
                self.found.append(f"{what}: acknowledged although the disk was full (or the engine's log broken)")
            elif not error.startswith("StorageFull"):
                self.found.append(f"{what}: a full disk must raise StorageFull, got: {error[:400]}")
            elif not ("free space" in error or "restart" in error or "opened again" in error):
                self.found.append(f"{what}: the error must say what to do: {error[:400]}")

        def all_there(self, acked: list[int], found: Any, when: str) -> None:
            if not isinstance(found, list):
                self.found.append(f"reading {when} failed: {found}")
                return
            missing = sorted(set(acked) - set(found))
            self.expect(
                not missing, f"LOST: {len(missing)} of {len(acked)} acknowledged rows missing {when}: {missing}"
            )

        def done(self) -> None:
            assert not self.found, "\n".join(self.found)

    def check_load(f: Findings, result: dict[str, Any], how: str) -> None:
        f.clear(result["load_error"], f"bulk_load ({how})")
        running = result["running"]
        f.expect(isinstance(running, list), f"reads must still be served after a failed load: {running}")
        if isinstance(running, list):
            partial = [i for i in running if 1000 <= i < 2000]
            f.expect(not partial, f"a failed load left {len(partial)} of its rows visible: {partial[:5]}")
        f.all_there([i for i in result["acked"] if i < 100], running, "on the running database")
        if result["after"] is not None:
            f.clear(result["after"], "a commit on the full disk after the load")

    def check_reopen(f: Findings, url: str, directory: Path, result: dict[str, Any], min_free_mb: str) -> None:
        opened = run("open", url, directory, "write", min_free_mb)
        if opened["open"] is not None:
            f.found.append(f"the database must open again once space is freed: {opened['open']}")
            return
        loaded = result.get("loaded", [])
        f.all_there(result["acked"] + loaded, opened["ids"], "after close and reopen")
        stray = sorted(set(opened["ids"]) - set(result["acked"]) - set(loaded))
        f.expect(not any(1000 <= i < 2000 for i in stray), f"a failed load's rows appeared after reopen: {stray[:5]}")
        f.expect(opened["write"] is None, f"writes must resume after the reopen: {opened['write']}")

    # ---- (a) bulk loads ------------------------------------------------------------------------------------

    @pytest.mark.parametrize("how", ["low", "low_mid", "burst", "csv_low", "csv_burst"])
    def test_embedded_bulk_load_on_full_disk(disk: Path, how: str) -> None:
        """low: under tique's minimum before the load; low_mid: the load crosses it between batches; burst: one
        batch bigger than the room left (the engine's write fails); csv_*: bulk_load_csv (COPY INTO)."""
        f = Findings()
        min_free = "1" if how.endswith("burst") else "8"
        url = f"monetdbe://{disk / 'db'}"
        result = run("load", url, disk, how, min_free)
        check_load(f, result, how)
        if how.endswith("burst"):  # the engine failed a write: writes stop until the database is opened again
            f.clear(result["after_space"], "a commit after the engine failed the load's write, space freed")
        else:
            f.expect(result["after_space"] is None, f"writes must resume once space returns: {result['after_space']}")
            f.expect(result["load_after_space"] is None, f"loads must resume: {result['load_after_space']}")
        f.all_there(result["acked"] + result["loaded"], result["running_end"], "on the running database at the end")
        check_reopen(f, url, disk, result, min_free)
        f.done()

    def test_served_bulk_load_on_full_disk(disk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        f = Findings()
        monkeypatch.setenv("TIQUE_MIN_FREE_MB", "1")
        server = start_serve(disk / "db")
        try:
            result = run("load", server.url, disk, "burst", "1")
            check_load(f, result, "served burst")
            f.clear(result["after_space"], "a commit after the engine failed the load's write, space freed")
            server.stop(signal.SIGKILL)
            server = start_serve(disk / "db", port=server.port)
            check_reopen(f, server.url, disk, result, "1")
        finally:
            server.stop()
        f.done()

    # ---- (b) DDL -------------------------------------------------------------------------------------------

    # `make test`: each statement (create, alter, drop, ctas) and each room (low, burst), not every pair
    @pytest.mark.parametrize(
        "how",
        thinned(
            ["create_low", "alter_low", "drop_low", "create_burst", "alter_burst", "drop_burst", "ctas_burst"],
            [0, 2, 3, 4, 6],
        ),
    )
    def test_embedded_ddl_on_full_disk(disk: Path, how: str) -> None:
        """*_low: 5 MB free, under tique's 8 MB minimum; *_burst: minimum 1 MB, less room than the DDL writes
        (create/drop: 40 KB free, under the floor; alter: 1.5 MB for 2.4 MB of defaults; ctas: 3 MB for ~10 MB)."""
        f = Findings()
        min_free = "1" if how.endswith("burst") else "8"
        url = f"monetdbe://{disk / 'db'}"
        result = run("ddl", url, disk, how, min_free)
        kind = how.split("_")[0].replace("ctas", "create")
        state, error = result["state"], result["ddl_error"]
        f.all_there([i for i in result["acked"] if i < 100], result["running"], "on the running database")
        # all or nothing, as readers see it
        if kind == "create":
            done = state["readable"]
            if done:
                f.expect(state["columns"] == ["id", "a", "b", "c", "d"], f"half-created table readable: {state}")
                if how.startswith("ctas"):
                    f.expect(state["row"] == [300_000], f"a half-filled CREATE TABLE AS is readable: {state}")
        elif kind == "alter":
            f.expect(state["base"] == [300_000, 300_000 * 300_001 // 2], f"the altered table lost rows: {state}")
            done = state["readable"]
            if done:
                f.expect(state["row"] == [300_000, 7, 7], f"a half-altered table is readable as altered: {state}")
        else:
            done = not state["readable"]
            if not done:
                f.expect(state["row"] == [1], f"a half-dropped table is readable: {state}")
        f.expect(done == (error is None), f"the DDL {'failed' if error else 'returned'} but the table reads {state}")
        if error is not None:
            f.clear(error, f"DDL ({how})")
            if not error.startswith("StorageFull") and result["after"] is None:
                f.found.append("a commit on the full disk was acknowledged after the DDL's write failed")
        if how.endswith("_low"):  # under tique's minimum: refused before it reaches the engine's log
            f.expect(error is not None, "DDL ran on a disk under tique's minimum free (it writes the engine's log)")
        opened = run("open", url, disk, "ddl_" + how, min_free)
        if opened["open"] is not None:
            f.found.append(f"the database must open again once space is freed: {opened['open']}")
        else:
            f.all_there(result["acked"], opened["ids"], "after close and reopen")
            f.expect(
                opened["state"] == result["state_after_space"],
                f"the DDL's outcome changed across the reopen: {result['state_after_space']} -> {opened['state']}",
            )
        f.done()

    # ---- (c) the checkpointer ------------------------------------------------------------------------------

    @pytest.mark.parametrize("how", ["low", "burst"])
    def test_embedded_checkpoint_on_full_disk(disk: Path, how: str) -> None:
        """low: 2 MB free, under tique's 4 MB minimum; burst: minimum 1 MB, 1.5 MB free for ~4 MB of Cache
        versions (inserts, updates, deletes) to move into Storage."""
        f = Findings()
        min_free = "4" if how == "low" else "1"
        url = f"monetdbe://{disk / 'db'}"
        result = run("ckpt", url, disk, how, min_free)
        f.expect(result["first_moved"] > 0, f"the first checkpoint (enough space) moved nothing: {result}")
        failed = result["ckpt_error"] or (result["ckpt_report"] and result["ckpt_report"]["errors"])
        f.expect(failed, f"a checkpoint on a full disk must report an error: {result['ckpt_report']}")
        if result["ckpt_error"]:
            f.clear(result["ckpt_error"], f"checkpoint ({how})")
        f.all_there([i for i in result["acked"] if i < 200], result["running"], "after the failed checkpoint")
        f.expect(result["updated"] == 20, f"the failed checkpoint lost updated versions: {result['updated']}")
        if isinstance(result["running"], list):
            gone = [i for i in result["running"] if 56 <= i <= 60]
            f.expect(not gone, f"deleted rows came back after the failed checkpoint: {gone}")
        if how == "low":
            f.expect(result["after_space"] is None, f"writes must resume once space returns: {result['after_space']}")
            f.expect(
                isinstance(result["resumed"], dict) and not result["resumed"]["errors"],
                f"the checkpointer must resume once space returns: {result['resumed']}",
            )
        else:
            f.clear(result["after_space"], "a commit after the engine failed the checkpoint's write, space freed")
        f.all_there(result["acked"], result["running_end"], "on the running database at the end")
        f.expect(result["updated_end"] == 20, f"updated versions lost: {result['updated_end']}")
        opened = run("open", url, disk, "ckpt", min_free)
        if opened["open"] is not None:
            f.found.append(f"the database must open again once space is freed: {opened['open']}")
        else:
            f.all_there(result["acked"], opened["ids"], "after close and reopen")
            f.expect(
                isinstance(opened["ckpt"], dict) and not opened["ckpt"]["errors"], f"after reopen: {opened['ckpt']}"
            )
            f.all_there(result["acked"], opened["ids_after_ckpt"], "after the reopen's checkpoint")
            if isinstance(opened["ids_after_ckpt"], list):
                f.expect(not set(opened["ids_after_ckpt"]) & set(range(56, 61)), "deleted rows came back")
        f.done()

    # ---- (d) recovery at open ------------------------------------------------------------------------------

    # `make test`: each way the process ended and each room, not every pair
    @pytest.mark.parametrize(
        ("room", "how"),
        thinned([(0, "crashed"), (0, "unfinished"), (300_000, "crashed"), (300_000, "unfinished")], [1, 2]),
    )
    def test_embedded_open_on_full_disk(disk: Path, how: str, room: int) -> None:
        """A process that committed (some rows checkpointed, some in the Cache; with 'unfinished' a commit record
        without outcome, which recovery settles by writing) ends without closing; the disk fills; open."""
        f = Findings()
        url = f"monetdbe://{disk / 'db'}"
        prepared = run("prepare_recovery", url, disk, how, "1")
        leave_free(str(disk), room)
        opened = run("open", url, disk, "write", "1")
        if opened["open"] is not None:
            f.clear(opened["open"], f"opening a database on a full disk ({room} bytes free)")
        else:  # it opened on the full disk: reads served, every acknowledged row there, no write acknowledged
            f.all_there(prepared["acked"], opened["ids"], f"when opened with {room} bytes free")
            if opened["write"] is not None:
                f.clear(opened["write"], "a commit right after opening on a full disk")
            else:
                prepared["acked"].append(300)
        free_pad(str(disk))
        again = run("open", url, disk, "write", "1")
        if again["open"] is not None:
            f.found.append(f"the database must open once space is freed: {again['open']}")
        else:
            f.all_there(prepared["acked"], again["ids"], "after space was freed and the database opened")
            f.expect(again["write"] is None, f"writes must resume once space is freed: {again['write']}")
        f.done()


if __name__ == "__main__":
    print(json.dumps(CLIENTS[sys.argv[1]](sys.argv[2], sys.argv[3], sys.argv[4])), flush=True)
