"""Keys that may have Cache rows, over MAPI, from the commit records (tique/record_keys.py): a read by key of a key
no record names reads Storage alone. Its set must never miss a key whose Cache row the reader's snapshot sees.
These tests attack the ways it could: commits in another process after the set was read, the checkpointer moving
versions and trimming their records (before, between and after reads of one transaction), an old snapshot, a
RENAME TO in another connection (records under the old name), the reader's own writes, whole re-reads of the
set, and a soak of transfers checked by their sum while the checkpointer runs. Each also checks that the
Storage-only form was used, so that none passes by never taking it."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import tique
from tique import cache_keys, record_keys
from tique.catalog import TableInfo
from tique.checkpoint import Checkpointer
from tique.engine import open_engine
from tique.record_keys import RecordKeys
from tique.transaction import Transaction

from .conftest import ROOT, ServeProcess
from .key_reads import STORED_READ, read_update, read_whole_of_storage, twice

KEYS = 100  # rows of the soak's table


@pytest.fixture
def kv(served: ServeProcess, unique_name: Callable[[str], str]) -> Iterator[tuple[str, str]]:
    name = unique_name("rk")
    conn = tique.connect(served.url)
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT, pad VARCHAR(20))")
    conn.bulk_load(name, [(k, 0, "p") for k in range(1, 21)])
    conn.close()
    yield served.url, name


@pytest.fixture
def checkpointer(served: ServeProcess) -> Iterator[Checkpointer]:
    cp = Checkpointer(open_engine(served.url).connect())
    yield cp
    cp.conn.close()


def recording(conn: tique.Connection) -> list[str]:
    sent: list[str] = []
    conn.statement_hooks.append(lambda sql, _s, _e: sent.append(sql))
    return sent


IN_ANOTHER_PROCESS = """
import sys, tique
c = tique.connect(sys.argv[1]); cur = c.cursor()
for sql in sys.argv[2:]:
    cur.execute(sql); c.commit()
c.close()
"""


def in_another_process(url: str, *statements: str) -> None:
    """Run each statement, then COMMIT, in a process of its own (its own records read, catalog and Cache keys)."""
    subprocess.run([sys.executable, "-c", IN_ANOTHER_PROCESS, url, *statements], check=True, cwd=ROOT, timeout=120)


def keys_of(conn: tique.Connection) -> RecordKeys:
    keys = conn.db.record_keys
    assert isinstance(keys, RecordKeys)
    return keys


def test_a_mapi_client_keeps_a_record_set(kv: tuple[str, str]) -> None:
    url, _ = kv
    conn = tique.connect(url)
    try:
        keys_of(conn)
    finally:
        conn.close()


def test_reads_find_commits_before_and_after_the_checkpointer_moves_and_trims(
    kv: tuple[str, str], checkpointer: Checkpointer
) -> None:
    url, name = kv
    writer, reader = tique.connect(url), tique.connect(url)
    sent = recording(reader)
    wcur, rcur = writer.cursor(), reader.cursor()
    try:
        expected = dict.fromkeys(range(1, 21), 0)
        for round_ in range(6):
            for k in range(1, 21):
                assert read_update(rcur, name, k) == expected[k], (round_, k)
            reader.commit()
            for k in (round_ + 1, round_ + 7):
                read_update(wcur, name, k, 10)
                expected[k] += 10
            writer.commit()
            if round_ % 2:
                checkpointer.run_once()
        stored = [s for s in sent if read_whole_of_storage(s)]
        ranked = [s for s in sent if STORED_READ in s and "__cache" in s]
        assert stored and ranked, (len(stored), len(ranked))
    finally:
        writer.close()
        reader.close()


def test_a_commit_in_another_process_after_the_set_was_read(kv: tuple[str, str], checkpointer: Checkpointer) -> None:
    """The set was read (and covers the reader's last snapshot); another process commits; the reader's next snapshot
    must see it, before and after the checkpointer moved it to Storage and trimmed its record."""
    url, name = kv
    reader = tique.connect(url)
    sent = recording(reader)
    rcur = reader.cursor()
    try:
        for k in range(1, 21):
            assert read_update(rcur, name, k) == 0
        reader.commit()
        for k in range(1, 21):  # read whole now: the Storage-only form for every key no record names
            assert read_update(rcur, name, k) == 0
        reader.commit()
        assert any(read_whole_of_storage(s) for s in sent)
        for step, k in enumerate((3, 4, 5)):
            in_another_process(url, f"UPDATE {name} SET v = v + 1 WHERE k = {k}")
            if step:
                checkpointer.run_once()  # moved to Storage, its Cache rows and record gone
            for j in range(1, 21):
                assert read_update(rcur, name, j) == (1 if 3 <= j <= k else 0), (k, j)
            reader.commit()
    finally:
        reader.close()


def test_an_old_snapshot_keeps_reading_its_versions_while_the_checkpointer_runs(
    kv: tuple[str, str], checkpointer: Checkpointer
) -> None:
    url, name = kv
    old, writer = tique.connect(url), tique.connect(url)
    ocur, wcur = old.cursor(), writer.cursor()
    try:
        assert read_update(ocur, name, 1) == 0  # the old snapshot begins
        for _ in range(3):
            for k in range(2, 6):
                read_update(wcur, name, k, 1)
            writer.commit()
            checkpointer.run_once()
        for k in range(2, 6):  # each key's first read in this transaction: from the engine, at the old snapshot
            assert read_update(ocur, name, k) == 0
            assert read_update(ocur, name, k) == 0
        old.rollback()
        for k in range(2, 6):
            assert read_update(ocur, name, k) == 3
        old.rollback()
    finally:
        old.close()
        writer.close()


def test_the_readers_own_writes_are_read_with_the_cache(kv: tuple[str, str]) -> None:
    """A transaction's own Cache rows have no commit record yet: a read whole of a key it wrote (sent, and no longer
    held) must not read Storage alone."""
    url, name = kv
    conn = tique.connect(url)
    sent = recording(conn)
    cur = conn.cursor()
    try:
        for _ in range(2):  # the plan learns to read whole
            assert read_update(cur, name, 4) == 0
            conn.rollback()
        cur.execute(f"UPDATE {name} SET v = 50 WHERE k = %s", (3,))
        cur.execute(f"SELECT COUNT(v) FROM {name}")  # the update is sent
        conn._txn.known.clear()  # type: ignore[union-attr]
        sent.clear()
        cur.execute(f"SELECT v FROM {name} WHERE k = %s", (3,))
        assert cur.fetchall() == [(50,)]
        assert not any(read_whole_of_storage(s) for s in sent), sent
        sent.clear()
        assert read_update(cur, name, 4) == 0
        assert any(read_whole_of_storage(s) for s in sent), sent  # the key it did not write: Storage alone
        conn.rollback()
    finally:
        conn.close()


def test_tables_swapping_names_in_another_process(kv: tuple[str, str], unique_name: Callable[[str], str]) -> None:
    """Two tables swap names in another process (their Cache tables go with them, and the records of their rows
    name the old tables): a's Cache had no row of key 1, b's had one. Hashes taken under the names alone would send
    the read of a's key 1 to Storage alone, where the row (b's, in its Cache only) is not."""
    url, a = kv
    b, spare = unique_name("rkb"), unique_name("rkc")
    conn = tique.connect(url)
    sent = recording(conn)
    try:
        other = tique.connect(url)
        ocur = other.cursor()
        ocur.execute(f"CREATE TABLE {b} (k INT PRIMARY KEY, v INT, pad VARCHAR(20))")
        ocur.execute(f"INSERT INTO {b} VALUES (1, 100, 'b')")
        other.commit()
        other.close()
        assert twice(conn, a, 1) == 0
        assert twice(conn, b, 1) == 100
        assert any(read_whole_of_storage(s) for s in sent)
        in_another_process(
            url, *(f"ALTER TABLE {old} RENAME TO {new}" for old, new in ((a, spare), (b, a), (spare, b)))
        )
        assert twice(conn, a, 1) == 100  # was b
        assert twice(conn, b, 1) == 0  # was a
    finally:
        conn.close()


def test_whole_rereads_of_the_records_keep_every_commit(
    kv: tuple[str, str], checkpointer: Checkpointer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The set read whole again at nearly every begin (and the Cache keys with it), the checkpointer trimming
    between: every read still sees every commit."""
    url, name = kv
    writer, reader = tique.connect(url), tique.connect(url)
    keys = keys_of(reader)
    monkeypatch.setattr(keys, "whole_after", 0)
    sent = recording(reader)
    wcur, rcur = writer.cursor(), reader.cursor()
    try:
        expected = dict.fromkeys(range(1, 21), 0)
        for round_ in range(8):
            for k in (round_ % 20 + 1, (round_ * 7) % 20 + 1):
                read_update(wcur, name, k, 1)
                expected[k] += 1
            writer.commit()
            if round_ % 3 == 2:
                checkpointer.run_once()
            for k in range(1, 21):
                assert read_update(rcur, name, k) == expected[k], (round_, k)
            reader.commit()
        assert any(read_whole_of_storage(s) for s in sent)
    finally:
        writer.close()
        reader.close()


def test_too_many_records_answer_maybe(kv: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    url, name = kv
    conn = tique.connect(url)
    keys = keys_of(conn)
    monkeypatch.setattr(keys, "max_hashes", 0)
    monkeypatch.setattr(keys, "_hashes", None)
    monkeypatch.setattr(keys, "_too_many_until", 0.0)
    cur = conn.cursor()
    cur.execute(f"UPDATE {name} SET v = 0 WHERE k = 1")
    conn.commit()  # at least one record
    sent = recording(conn)
    try:
        for _ in range(2):
            assert read_update(cur, name, 2) == 0
            conn.rollback()
        assert sent and not any(read_whole_of_storage(s) for s in sent)
    finally:
        conn.close()


def test_disabled_by_environment() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "from tique import record_keys as r; print(r.record_keys_for() is None)"],
        capture_output=True,
        text=True,
        env={"TIQUE_RECORD_KEYS": "0", "PATH": "/usr/bin:/bin"},
        cwd=ROOT,
        timeout=60,
    )
    assert out.stdout.strip() == "True", out.stderr[-2000:]
    assert record_keys.record_keys_for(True) is not None


def test_transfers_keep_their_sum_while_the_checkpointer_runs(
    served: ServeProcess, unique_name: Callable[[str], str]
) -> None:
    """Two writers move amounts between keys; a reader sums every key by point reads, each snapshot's sum must be
    the total; the checkpointer runs all the while (moving versions, trimming records), and the reader's set is
    read whole every few begins. A key the set missed reads its Storage row, an older version: a wrong sum."""
    url, name = served.url, unique_name("rks")
    conn = tique.connect(url)
    conn.cursor().execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT, pad VARCHAR(20))")
    conn.bulk_load(name, [(k, 0, "p") for k in range(1, KEYS + 1)])
    conn.close()
    stop = threading.Event()
    errors: list[BaseException] = []
    sums: list[int] = []
    stored = [0]

    def writer(seed: int) -> None:
        conn = tique.connect(url)
        cur = conn.cursor()
        i = seed
        try:
            while not stop.is_set():
                i += 1
                a, b = i % KEYS + 1, (i * 7 + seed) % KEYS + 1
                if a == b:
                    continue
                try:
                    read_update(cur, name, a, -1)
                    read_update(cur, name, b, 1)
                    conn.commit()
                    time.sleep(0.02)  # most keys are then quiet for a while: their records get trimmed
                except tique.SerializationFailure:
                    conn.rollback()
        except BaseException as exc:
            errors.append(exc)
        finally:
            conn.close()

    def checkpointing() -> None:
        cp = Checkpointer(open_engine(url).connect())
        try:
            while not stop.is_set():
                cp.run_once()
                time.sleep(0.05)
        except BaseException as exc:
            errors.append(exc)
        finally:
            cp.conn.close()

    reader = tique.connect(url)
    keys = keys_of(reader)
    keys.whole_after = 30
    absent = keys.absent

    def counted(*args: object) -> bool:  # (repeated reads are prepared: their text does not show the form)
        found = absent(*args)  # type: ignore[arg-type]
        stored[0] += found
        return found

    keys.absent = counted  # type: ignore[method-assign]
    threads = [threading.Thread(target=writer, args=(s,)) for s in (1, 2)] + [threading.Thread(target=checkpointing)]
    for t in threads:
        t.start()
    try:
        cur = reader.cursor()
        deadline = time.monotonic() + 12
        while time.monotonic() < deadline and not errors:
            total = 0
            for _ in range(2):  # the second pass reads whole: Storage alone where the set allows
                total = sum(read_update(cur, name, k) for k in range(1, KEYS + 1))
                assert total == 0, total
            reader.rollback()
            sums.append(total)
    finally:
        stop.set()
        for t in threads:
            t.join(60)
        reader.close()
    assert not errors, errors
    assert len(sums) > 5 and stored[0] > 20, (len(sums), stored[0])


def test_the_set_is_per_snapshot_of_a_priority_retry(kv: tuple[str, str]) -> None:
    """A transaction whose snapshot moves on (a priority retry takes a fresh one) reads the records up to it."""
    url, name = kv
    conn, other = tique.connect(url), tique.connect(url)
    try:
        txn_sts: list[int] = []
        cur, ocur = conn.cursor(), other.cursor()
        assert twice(conn, name, 7) == 0
        read_update(cur, name, 8)
        txn = conn._txn
        assert isinstance(txn, Transaction)
        txn_sts.append(txn.sts)
        read_update(ocur, name, 7, 5)
        other.commit()
        txn.reserve([123], 1000)  # the fresh snapshot sees the other commit
        assert txn.sts > txn_sts[0]
        txn.known.clear()
        assert read_update(cur, name, 7) == 5
        conn.rollback()
    finally:
        conn.close()
        other.close()


def test_a_cache_too_large_to_read_is_not_read_at_every_key_read(
    kv: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Cache with more rows than are read answers "may be cached", and is not read again at the next key reads
    (each read would scan it) until a while has passed."""
    url, name = kv
    conn = tique.connect(url)
    keys = keys_of(conn)
    cur = conn.cursor()
    cur.execute(f"UPDATE {name} SET v = 0 WHERE k IN (1, 2)")
    conn.commit()  # two Cache rows
    monkeypatch.setattr(keys, "max_cache_rows", 1)
    monkeypatch.setattr(keys, "_tables", {})
    cache_reads: list[str] = []

    def key_select(info: TableInfo, limit: int) -> str:
        cache_reads.append(info.cache)
        return cache_keys.key_select(info, limit)

    monkeypatch.setattr(record_keys, "key_select", key_select)
    sent = recording(conn)
    try:
        for _ in range(3):
            for k in range(5, 9):
                assert read_update(cur, name, k) == 0
            conn.rollback()
        assert len(cache_reads) == 1, cache_reads
        assert not any(read_whole_of_storage(s) for s in sent)
    finally:
        conn.close()


def test_a_rename_away_and_back_in_another_process(served: ServeProcess, unique_name: Callable[[str], str]) -> None:
    """Found by a review: another process renames b to c, commits an update of c (its record names c), renames c back
    to b. The table entry can then be the very one the reader read b's Cache keys under (same name, id, key and
    Cache table: so it is for a table that was renamed once before), so only the catalog version the reader's
    snapshot began with tells the Cache keys are stale. A read of the key from Storage alone would miss the update,
    and an UPDATE v = v + 1 built on it would lose it."""
    url = served.url
    a, b, c = unique_name("rka"), unique_name("rkb"), unique_name("rkc")
    setup = tique.connect(url)
    setup.cursor().execute(f"CREATE TABLE {a} (k INT PRIMARY KEY, v INT, pad VARCHAR(20))")
    setup.bulk_load(a, [(k, 0, "p") for k in range(1, 6)])
    setup.cursor().execute(f"ALTER TABLE {a} RENAME TO {b}")  # b's Cache table comes back under one name
    setup.close()
    reader = tique.connect(url)
    sent = recording(reader)
    try:
        assert twice(reader, b, 1) == 0
        assert any(read_whole_of_storage(s) for s in sent)  # b's Cache keys were read, and key 1 has none
        chain = [
            f"ALTER TABLE {b} RENAME TO {c}",
            f"UPDATE {c} SET v = v + 100 WHERE k = 1",
            f"ALTER TABLE {c} RENAME TO {b}",
        ]
        in_another_process(url, *chain)
        assert twice(reader, b, 1) == 100
        cur = reader.cursor()
        assert read_update(cur, b, 1, 1) == 100
        reader.commit()
        assert twice(reader, b, 1) == 101
    finally:
        reader.close()


def deferring_cache_cleans(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checkpointer's Cache DELETEs (and outcome trims) defer, as when they lose to appends more often than
    retried: both tables are appended to by every commit."""
    retrying = Checkpointer._retrying

    def deferring(self: Checkpointer, sql: str, report: Any) -> Any:
        if sql.startswith("DELETE FROM") and ("__cache" in sql or "tique.outcomes" in sql):
            return None
        return retrying(self, sql, report)

    monkeypatch.setattr(Checkpointer, "_retrying", deferring)


def test_a_committed_cache_row_keeps_its_record_when_its_clean_is_deferred(
    kv: tuple[str, str], checkpointer: Checkpointer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by a review: a run whose Cache clean deferred trimmed the commit records anyway. The committed row stayed
    in the Cache with no record, and the next run rewrote its Storage row (a DELETE, then an INSERT): a process whose
    records were read whole after the trim read Storage alone in between, and found no row."""
    url, name = kv
    # the earlier tests' Cache rows moved and cleaned first: rows of theirs left (the transfers test stops its
    # writers and checkpointer at any point) would be the lowest left, with nothing below them to trim
    checkpointer.run_once()
    writer = tique.connect(url)
    try:
        writer.bulk_load(name, [(21, 0, "p")])  # a commit record with no Cache row, below the update's
        read_update(writer.cursor(), name, 1, 100)
        writer.commit()
    finally:
        writer.close()
    with monkeypatch.context() as patched:
        deferring_cache_cleans(patched)
        report = checkpointer.run_once()
    assert report.moved and any(t.deferred for t in report.tables.values()), report.line()
    cache = checkpointer.catalog.named(f"sys.{name}").cache  # type: ignore[union-attr]
    orphans = checkpointer.conn.execute(
        f"SELECT COUNT(*) FROM {cache} AS c JOIN tique.outcomes AS o ON o.txid = c.tq_txid AND o.ok "
        "WHERE c.tq_txid NOT IN (SELECT txid FROM tique.commits)"
    ).scalar()
    assert int(orphans) == 0
    assert report.metadata_trimmed  # what lies below the rows left is trimmed still (the load's record)
    checkpointer.run_once()  # the clean goes through now, and the records with it
    assert int(checkpointer.conn.execute(f"SELECT COUNT(*) FROM {cache}").scalar()) == 0


KILL_AFTER_STORAGE_DELETE = """
import os, signal, sys
from tique.checkpoint import Checkpointer, algorithm
from tique.engine import open_engine
delete_keys = algorithm.Checkpointer._delete_keys
def deleting(self, info, keys):
    delete_keys(self, info, keys)
    if info.name == sys.argv[2]:
        os.kill(os.getpid(), signal.SIGKILL)  # the keys' Storage rows deleted, not yet inserted again
algorithm.Checkpointer._delete_keys = deleting
print(Checkpointer(open_engine(sys.argv[1]).connect()).run_once().line())
"""


def test_a_reader_during_a_rewrite_after_a_deferred_clean(
    kv: tuple[str, str], checkpointer: Checkpointer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The review's whole case: a process holds a table's Cache keys read before a commit whose record it never read;
    the commit's clean is deferred; the next checkpoint run is killed between deleting the key's Storage row and
    inserting it again; the process's records are then read whole. It must read the committed value."""
    url, name = kv
    keeper = tique.connect(url)  # holds the process's Database (its RecordKeys) while the reader's pin is gone
    keys = keys_of(keeper)
    try:
        reader = tique.connect(url)
        assert twice(reader, name, 1) == 0  # the records and the table's Cache keys read; key 1 has none
        reader.close()
        keys.whole_after = 0  # the next catch-up is a whole read
        keys._hashes.added = 1  # type: ignore[union-attr]
        in_another_process(url, f"UPDATE {name} SET v = 100 WHERE k = 1")
        with monkeypatch.context() as patched:
            deferring_cache_cleans(patched)
            assert checkpointer.run_once().moved
        killed = subprocess.run(
            [sys.executable, "-c", KILL_AFTER_STORAGE_DELETE, url, name], cwd=ROOT, timeout=120, capture_output=True
        )
        assert killed.returncode == -9, (killed.stdout, killed.stderr[-2000:])
        reader = tique.connect(url)
        assert keys_of(reader) is keys
        assert read_update(reader.cursor(), name, 1) == 100
        reader.close()
    finally:
        keeper.close()


def test_a_bulk_load_in_another_process(kv: tuple[str, str]) -> None:
    """Rows bulk-loaded by another process go to Storage with no Cache row and no key's record: a reader that knows
    the table's keys reads them from Storage alone, and finds them."""
    url, name = kv
    reader = tique.connect(url)
    keys = keys_of(reader)
    found: list[bool] = []
    absent = keys.absent
    keys.absent = lambda *args: found.append(absent(*args)) or found[-1]  # type: ignore[method-assign]
    code = (
        "import sys, tique\n"
        "c = tique.connect(sys.argv[1])\n"
        f"c.bulk_load('{name}', [(k, k * 10, 'l') for k in range(21, 26)]); c.close()\n"
    )
    try:
        assert twice(reader, name, 2) == 0
        subprocess.run([sys.executable, "-c", code, url], check=True, cwd=ROOT, timeout=120)
        for k in range(21, 26):
            assert twice(reader, name, k) == k * 10
        assert any(found), found
    finally:
        keys.absent = absent  # type: ignore[method-assign]
        reader.close()


def test_an_ordinary_user_reads_every_key_with_the_cache(
    served: ServeProcess, unique_name: Callable[[str], str]
) -> None:
    """Only the database owner's transactions use the set (it reads the Cache tables): an ordinary user granted the
    table reads and updates it as usual, and sees the owner's commits."""
    name, user = unique_name("rku"), unique_name("rkuser")
    admin = tique.connect(served.url)
    cur = admin.cursor()
    cur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT, pad VARCHAR(20))")
    admin.bulk_load(name, [(k, 0, "p") for k in range(1, 6)])
    cur.execute(f"CREATE USER {user} WITH PASSWORD 'pw' NAME 'U' SCHEMA sys")
    cur.execute(f"GRANT SELECT, UPDATE ON {name} TO {user}")
    admin.commit()
    ordinary = tique.connect(served.url.replace(f"monetdb:{served.password}@", f"{user}:pw@"))
    try:
        assert twice(ordinary, name, 1) == 0
        read_update(cur, name, 1, 5)
        admin.commit()
        ucur = ordinary.cursor()
        assert read_update(ucur, name, 1, 1) == 5
        assert ordinary._txn.cache_keys is None  # type: ignore[union-attr]
        ordinary.commit()
        assert twice(admin, name, 1) == 6
    finally:
        ordinary.close()
        admin.close()
