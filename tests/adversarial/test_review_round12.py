"""Review of 60e86d9..HEAD: a large write's judge (StorageGuard.raise_if_large_write_failed) must not take an
ordinary error for a full disk.

Its StorageFull is not a local refusal: it calls tique.storage_failed(), after which the C
module refuses every commit of every client until the database is opened again. So it must fire only on a write
the engine failed for want of space. Each case runs in a child process on a database of its own (the C module's
"broken" flag and free-space watch are per process, and this process holds the session's embedded database).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

CHILD = r"""
import json, sys
import tique
from tique import errors, storage

url, case = sys.argv[1], sys.argv[2]
# MonetDB's words for a lost conflict, which a log write that failed for want of space also gives
CONFLICT = "40000!COMMIT: transaction is aborted because of concurrency conflicts, will ROLLBACK instead"


# the first call of owner.name that matches its arguments raises CONFLICT; returns the list of refused calls
def refuse_once(owner, name, matches=lambda *args: True):
    real, refused = getattr(owner, name), []

    def call(*args, **kwargs):
        if not refused and matches(*args):
            refused.append(args)
            raise errors.from_monetdb(CONFLICT)
        return real(*args, **kwargs)

    setattr(owner, name, call)
    return refused

conn = tique.connect(url)
cur = conn.cursor()
cur.execute("CREATE TABLE t (k VARCHAR(40) PRIMARY KEY, v INT)")
conn.commit()
cur.execute("INSERT INTO t VALUES ('disk full', 1)")
conn.commit()
first = None
try:
    if case == "load_refused":
        # the key was committed and is not checkpointed yet: bulk_load refuses it (IntegrityError), naming the key
        conn.bulk_load("t", [("disk full", 2)])
    elif case == "ddl_name_taken":
        cur.execute('CREATE TABLE "append failed" (k INT PRIMARY KEY)')
        conn.commit()
        cur.execute('CREATE TABLE "append failed" (k INT PRIMARY KEY)')  # ProgrammingError: name in use
    elif case == "ddl_conflict_above_minimum":
        # 32 MB above tique's minimum: commits are accepted (by tique and by the C module, which sees the real
        # disk); a genuine DDL-vs-DDL conflict (MonetDB's 40000 "concurrency conflicts", as another session's
        # concurrent DDL gives it) is simulated
        storage.free_bytes = lambda directory: storage.min_free_bytes() + (32 << 20)
        import tique.connection as connection

        def conflicting(*args, **kwargs):
            raise errors.from_monetdb(CONFLICT)

        connection.run_ddl = conflicting
        cur.execute("CREATE TABLE u (k INT PRIMARY KEY)")
    elif case.startswith("load_move_conflicts_"):
        # the move of a load into Storage fails with MonetDB's 40000 "concurrency conflicts" on every try, as a
        # log append that failed for want of space reads: its retries end in a SerializationFailure (40001) whose
        # cause is that conflict. 32 MB above the minimum (within a load's slack) that is a full disk; 512 MB above,
        # a conflict to run again
        room = 32 if case.endswith("near_minimum") else 512
        storage.free_bytes = lambda directory: storage.min_free_bytes() + (room << 20)
        import tique.bulk_load as bulk_load

        def conflicting(*args, **kwargs):
            raise errors.from_monetdb(CONFLICT)

        bulk_load._cache_may_hide = conflicting
        conn.bulk_load("t", [("loaded", 2)])
    elif case.startswith("load_move_refused_once_"):
        # the same conflict on the first try only: the retry succeeds, but the engine may have lost the failed
        # write's log (later commits acknowledged and not kept), so near the minimum it must not go on
        room = 0 if case.endswith("near_minimum") else 512  # within a small write's slack: at the minimum
        storage.free_bytes = lambda directory: storage.min_free_bytes() + (room << 20)
        import tique.bulk_load as bulk_load

        refuse_once(bulk_load, "_cache_may_hide")
        conn.bulk_load("t", [("loaded", 2)])
    elif case.startswith("alter_add_column_refused_once_"):
        # ADD COLUMN ... DEFAULT writes a value for every row: its physical step refused once, then retried
        room = 0 if case.endswith("near_minimum") else 512  # within a small write's slack: at the minimum
        storage.free_bytes = lambda directory: storage.min_free_bytes() + (room << 20)
        refused = refuse_once(conn._raw, "execute", lambda sql, *rest: "ADD COLUMN" in sql)
        cur.execute("ALTER TABLE t ADD COLUMN w INT DEFAULT 7")
        assert refused, "the ALTER sent no ADD COLUMN"
    elif case.startswith("checkpoint_delete_refused_once_"):
        # the checkpointer's DELETE of moved Cache rows, refused once as a failed log write reads, then retried
        from tique.checkpoint.algorithm import Checkpointer
        from tique.database import Database

        raw = Database.get(url).connect_raw()
        refused = refuse_once(raw, "execute", lambda sql, *rest: sql.startswith("DELETE FROM") and "__cache" in sql)
        checkpointer = Checkpointer(raw)
        room = 0 if case.endswith("near_minimum") else 512  # a DELETE's log is small: its slack is too
        storage.free_bytes = lambda directory: storage.min_free_bytes() + (room << 20)
        checkpointer.run_once()
        assert refused, "the checkpointer deleted no Cache row"
except tique.Error as exc:
    first = type(exc).__name__
try:
    conn.rollback()
except tique.Error:
    pass
other = tique.connect(url)
try:
    other.cursor().execute("INSERT INTO t (k, v) VALUES ('x', 3)")
    other.commit()
    later = None
except tique.Error as exc:
    later = f"{type(exc).__name__}: {exc}"[:200]
print(json.dumps({"first": first, "later": later}))
"""


def run_child(tmp_path: Path, case: str) -> dict[str, object]:
    url = f"monetdbe://{tmp_path / 'db'}"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, url, case], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("load_refused", "UniqueViolation"),  # (an IntegrityError) user data ('disk full') in tique's own message
        ("ddl_name_taken", "ProgrammingError"),  # a user's table name ('append failed') in the message
        ("ddl_conflict_above_minimum", "SerializationFailure"),  # a genuine conflict, disk above the minimum
    ],
)
def test_an_ordinary_error_does_not_stop_every_commit(tmp_path: Path, case: str, expected: str) -> None:
    result = run_child(tmp_path, case)
    assert result["first"] == expected, result
    assert result["later"] is None, f"a later commit of another connection was refused: {result}"


def test_a_load_whose_move_fails_on_every_try_near_a_full_disk_stops_commits(tmp_path: Path) -> None:
    """retried_on_conflict's last SerializationFailure (40001) carries the engine's 40000 as its cause: judged as
    the conflict it is (it was taken for a plain conflict, and later commits went on while the log may miss the
    write)."""
    (tmp_path / "near").mkdir()
    (tmp_path / "far").mkdir()
    near = run_child(tmp_path / "near", "load_move_conflicts_near_minimum")
    assert near["first"] == "StorageFull", near
    assert near["later"] is not None and "StorageFull" in str(near["later"]), near
    far = run_child(tmp_path / "far", "load_move_conflicts_far_from_minimum")
    assert far["first"] == "SerializationFailure", far
    assert far["later"] is None, far


@pytest.mark.parametrize("write", ["load_move", "checkpoint_delete", "alter_add_column"])
def test_a_conflict_near_a_full_disk_stops_commits_even_when_the_retry_succeeds(tmp_path: Path, write: str) -> None:
    """A write retried on conflict (a load's move into Storage, the checkpointer's DELETE of moved Cache rows, an
    ADD COLUMN's physical step)
    whose first try MonetDB refused with "concurrency conflicts" near the minimum free space: that may be its log
    write failing for want of space, after which the engine acknowledges commits it does not keep. Each refusal is
    judged before the retry (only the last one was): near the minimum writes stop; far from it the retry runs."""
    (tmp_path / "near").mkdir()
    (tmp_path / "far").mkdir()
    near = run_child(tmp_path / "near", f"{write}_refused_once_near_minimum")
    assert near["first"] == "StorageFull", near
    assert near["later"] is not None and "StorageFull" in str(near["later"]), near
    far = run_child(tmp_path / "far", f"{write}_refused_once_far_from_minimum")
    assert far["first"] is None, far
    assert far["later"] is None, far


def test_over_mapi_a_refused_load_naming_a_key_does_not_stop_the_server(tmp_path: Path) -> None:
    """The same through ``tique serve`` (a client logged in as the owner may call storage_failed())."""
    from tests.conftest import start_serve

    server = start_serve(tmp_path / "served")
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, server.url, "load_refused"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        result = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        server.stop()
    assert result["first"] == "UniqueViolation", result  # an IntegrityError
    assert result["later"] is None, f"a later commit of another connection was refused: {result}"


def test_over_mapi_a_refusal_is_judged_by_the_servers_room_over_the_minimum(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over MAPI the slack of a large write's judge was not applied (only "under the minimum" could be asked): the
    C module now tells the room over the minimum (tique.storage_room()), so a refusal within a write's slack of
    a full disk stops writes there as embedded."""
    import tique
    from tests.conftest import start_serve
    from tique import storage

    free = storage.free_bytes(str(tmp_path))
    assert free is not None
    monkeypatch.setenv(storage.MIN_FREE_ENV, str((free >> 20) - 512))  # the server keeps all but ~512 MB free
    server = start_serve(tmp_path / "served")
    try:
        conn = tique.connect(server.url)
        raw = conn._raw
        room = int(raw.execute("SELECT tique.storage_room()").scalar())
        assert 256 << 20 < room < 768 << 20, room
        guard = storage.StorageGuard(None, remote=True)
        assert not guard._low(raw, 64 << 20)  # a load's slack: far from full
        assert guard._low(raw, 2 << 30)  # a write as large as 2 GB would not fit
        conn.close()
    finally:
        server.stop()
