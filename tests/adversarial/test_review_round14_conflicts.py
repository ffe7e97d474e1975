"""Conflict handling around bulk loads (b34e53e and engine.base.retried_on_conflict):

1. A bulk load's move into Storage also DELETEs from the table's Cache so that MonetDB refuses it when any commit
   appended to that Cache meanwhile: an ordinary, designed-in conflict. Since b34e53e every such refusal is judged
   with a fixed 64 MB slack (LARGE_WRITE_SLACK) whatever the load's size, so a 2-row load meeting one ordinary
   conflict while the disk is 40 MB above tique's minimum (commits are still accepted there) is taken for a failed
   log write: StorageFull, and every later commit of every client is refused until the database is reopened.
   storage.py's own rule: a conflict counts within a slack "as large as the write", since "a real conflict taken
   for a full disk stops every writer".
2. errors.lost_to_concurrency takes any DatabaseError whose text holds "conflict" or "update failed" for a
   concurrency conflict: a bulk load refused for a duplicate key into a table named conflict_log (or with the key
   'update failed') is retried 20 times and reported as a retryable SerializationFailure ("lost to concurrent
   changes ... run it again"), not the IntegrityError it is: a retrying application loops for ever."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

import tique

CHILD = textwrap.dedent(
    """
    import json, os, sys
    directory = sys.argv[1]
    st = os.statvfs(directory)
    os.environ["TIQUE_MIN_FREE_MB"] = str((st.f_bavail * st.f_frsize >> 20) - 40)  # 40 MB above the minimum
    import tique, tique.bulk_load as bl
    from tique.database import Database
    url = f"monetdbe://{directory}/db"
    conn = tique.connect(url)
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (k INT PRIMARY KEY, v INT)")
    conn.commit()
    real, tries = bl._cache_may_hide, []

    def racing(raw, info):
        tries.append(1)
        if len(tries) == 1:  # a commit appends to t's Cache while the load moves its rows: MonetDB's conflict
            other = Database.get(url).connect_raw()
            cols = "(k, v, tq_txid, tq_seq, tq_deleted)"
            other.execute(f"INSERT INTO {info.cache} {cols} VALUES (100, 100, -7, 0, false)")
            other.close()
        return real(raw, info)

    bl._cache_may_hide = racing
    out = {}
    try:
        out["loaded"] = conn.bulk_load("t", [(1, 1), (2, 2)])
    except tique.Error as exc:
        out["loaded"] = f"{type(exc).__name__}: {exc}"
    try:
        cur.execute("INSERT INTO t VALUES (3, 3)")
        conn.commit()
        out["later"] = None
    except tique.Error as exc:
        out["later"] = f"{type(exc).__name__}: {exc}"
    out["tries"] = len(tries)
    print(json.dumps(out))
    """
)


def test_an_ordinary_conflict_of_a_small_load_above_the_minimum_does_not_stop_commits(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["tries"] == 2, out  # the conflict happened, and the load ran again
    assert out["loaded"] == 2, out
    assert out["later"] is None, out


@pytest.mark.parametrize(
    ("table", "key_type", "key"), [("conflict_log", "INT", 1), ("skeys", "VARCHAR(20)", "update failed")]
)
def test_a_load_refused_for_a_key_is_no_concurrency_conflict(
    embedded_url: str, unique_name: Callable[[str], str], table: str, key_type: str, key: object
) -> None:
    name = unique_name(table)
    conn = tique.connect(embedded_url)
    try:
        cur = conn.cursor()
        cur.execute(f"CREATE TABLE {name} (k {key_type} PRIMARY KEY, v INT)")
        conn.commit()
        if isinstance(key, str):  # a key written since the last checkpoint
            cur.execute(f"INSERT INTO {name} VALUES (%s, 1)", (key,))
            conn.commit()
        else:  # a key already in Storage
            conn.bulk_load(name, [(key, 1)])
        with pytest.raises(tique.IntegrityError):
            conn.bulk_load(name, [(key, 2)])
    finally:
        conn.rollback()
        conn.close()
