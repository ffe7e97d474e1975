"""Keys that may have Cache rows (tique/cache_keys.py): a read by key of keys with none reads Storage alone. The set
must never miss a key whose Cache row a snapshot could see; these tests attack the ways it could: rows sent while
it is rebuilt, an interrupted send, DDL meanwhile, the checkpointer cleaning, a kernel serving MAPI clients, and
the reader's own pending writes."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

import tique
from tique.cache_keys import CacheKeys, cache_keys_of
from tique.catalog import ColumnSpec, TableInfo
from tique.checkpoint import Checkpointer
from tique.engine import open_engine
from tique.errors import DatabaseError

from .key_reads import STORED_READ, read_update, read_whole_of_storage, twice


def table(name: str = "t", key_type: str = "INT") -> TableInfo:
    columns = (ColumnSpec("k", key_type, True), ColumnSpec("v", "INT"))
    return TableInfo(table_id=1, schema="sys", name=name, kind="tx", columns=columns, key=("k",))


# ---- the protocol, without the engine ----------------------------------------------------------------------


def test_unknown_until_built_then_exact_and_growing() -> None:
    keys, t = CacheKeys(), table()
    assert keys.absent(t, [(1,)]) is None
    assert keys.rebuild(t, lambda limit: [(1,), (2,)])
    assert keys.absent(t, [(1,)]) is False and keys.absent(t, [(3,)]) is True
    with keys.sending([(t, [(3,)])]):
        assert keys.absent(t, [(3,)]) is False  # cached from before its statement runs
    assert keys.absent(t, [(3,)]) is False  # and after: only a rebuild takes it out
    assert keys.rebuild(t, lambda limit: [(1,)])
    assert keys.absent(t, [(2,)]) is True and keys.absent(t, [(3,)]) is True


def test_reads_pinning_part_of_the_key_see_every_key_with_those_values() -> None:
    """A projection on some key columns is made at its first use and grows with every key sent after, also
    while a rebuild reads; a rebuild starts it again from what it read."""
    columns = (ColumnSpec("a", "INT", True), ColumnSpec("b", "BIGINT", True), ColumnSpec("c", "SMALLINT", True))
    t = TableInfo(table_id=1, schema="sys", name="g", kind="tx", columns=columns, key=("a", "b", "c"))
    keys = CacheKeys()
    assert keys.absent(t, [(1, 2)], (0, 1)) is None
    assert keys.rebuild(t, lambda limit: [(1, 2, 3)])
    assert keys.absent(t, [(1, 2)], (0, 1)) is False and keys.absent(t, [(1, 3)], (0, 1)) is True
    assert keys.absent(t, [(3,)], (2,)) is False and keys.absent(t, [(2, 3)], (1, 2)) is False
    with keys.sending([(t, [(1, 3, 9)])]):
        assert keys.absent(t, [(1, 3)], (0, 1)) is False  # the projection made before the send grows
        assert keys.absent(t, [(1, 9)], (0, 2)) is False  # and one made after it has the key
    assert keys.absent(t, [(1, 3)], (0, 1)) is False

    def read(limit: int) -> list[tuple[Any, ...]]:
        with keys.sending([(t, [(5, 5, 5)])]):
            pass
        return [(1, 2, 3)]

    assert keys.rebuild(t, read)
    assert keys.absent(t, [(1, 3)], (0, 1)) is True  # (1, 3, 9) is not in the Cache any more
    assert keys.absent(t, [(5, 5)], (0, 1)) is False and keys.absent(t, [(1, 2)], (0, 1)) is False


def test_rows_sent_while_a_rebuild_reads_are_kept() -> None:
    """The rebuild's SELECT may have begun before a send committed: the key must survive the rebuild."""
    keys, t = CacheKeys(), table()
    keys.rebuild(t, lambda limit: [])

    def read(limit: int) -> list[tuple[Any, ...]]:
        with keys.sending([(t, [(7,)])]):  # begins and ends while the rebuild reads; its SELECT did not see it
            pass
        return []

    assert keys.rebuild(t, read)
    assert keys.absent(t, [(7,)]) is False


def test_rows_being_sent_when_a_rebuild_begins_are_kept() -> None:
    keys, t = CacheKeys(), table()
    keys.rebuild(t, lambda limit: [])
    inside, release = threading.Event(), threading.Event()

    def send() -> None:
        with keys.sending([(t, [(8,)])]):
            inside.set()
            release.wait(5)

    sender = threading.Thread(target=send)
    sender.start()
    assert inside.wait(5)

    def read(limit: int) -> list[tuple[Any, ...]]:
        release.set()  # the send commits after the SELECT began: the SELECT does not see it
        sender.join(5)
        return []

    assert keys.rebuild(t, read)
    assert keys.absent(t, [(8,)]) is False


def test_a_send_after_the_read_before_the_install_is_kept() -> None:
    """A key sent between the rebuild's SELECT and its install goes into the set that is installed."""
    keys, t = CacheKeys(), table()
    keys.rebuild(t, lambda limit: [])
    sent = threading.Event()

    def read(limit: int) -> list[tuple[Any, ...]]:
        threading.Thread(target=lambda: (keys.sending([(t, [(9,)])]).__enter__(), sent.set())).start()
        assert sent.wait(5)
        return []

    keys.rebuild(t, read)
    assert keys.absent(t, [(9,)]) is False


def test_a_send_while_the_rebuild_converts_what_it_read_is_kept() -> None:
    """Between the rebuild's read and its install, sends must still reach what it installs."""
    keys, t = CacheKeys(), table()
    keys.rebuild(t, lambda limit: [])

    class Row(tuple):  # type: ignore[type-arg]
        def __iter__(self) -> Any:
            with keys.sending([(t, [(11,)])]):
                pass
            return super().__iter__()

    assert keys.rebuild(t, lambda limit: [Row((1,))])
    assert keys.absent(t, [(11,)]) is False and keys.absent(t, [(1,)]) is False


def test_overlapping_rebuilds_each_keep_their_own_window() -> None:
    """A rebuild that begins and ends while another reads must not take the other's window with it: a key sent
    after it ended, while the first still reads, is kept (found by CI: the windows compared equal by value)."""
    keys, t = CacheKeys(), table()
    keys.rebuild(t, lambda limit: [])

    def outer(limit: int) -> list[tuple[Any, ...]]:
        assert keys.rebuild(t, lambda limit: [])
        with keys.sending([(t, [(12,)])]):
            pass
        return []

    assert keys.rebuild(t, outer)
    assert keys.absent(t, [(12,)]) is False


def test_an_interrupted_send_stays_cached_through_rebuilds() -> None:
    """Ctrl-C as the INSERT runs: the engine may still commit it after any later SELECT began."""
    keys, t = CacheKeys(), table()
    keys.rebuild(t, lambda limit: [])
    with pytest.raises(KeyboardInterrupt), keys.sending([(t, [(5,)])]):
        raise KeyboardInterrupt
    assert keys.rebuild(t, lambda limit: [])
    assert keys.absent(t, [(5,)]) is False
    with pytest.raises(DatabaseError), keys.sending([(t, [(6,)])]):  # the engine refused it: nothing was written
        raise DatabaseError("refused")
    assert keys.rebuild(t, lambda limit: [])
    assert keys.absent(t, [(6,)]) is True


def test_ddl_forgets_everything_and_voids_a_rebuild_that_overlaps_it() -> None:
    keys, t = CacheKeys(), table()
    keys.rebuild(t, lambda limit: [])
    with keys.changing():
        assert keys.absent(t, [(1,)]) is False  # while DDL runs: may be cached
    assert keys.absent(t, [(1,)]) is None

    def read(limit: int) -> list[tuple[Any, ...]]:
        with keys.changing():
            pass
        return []

    assert not keys.rebuild(t, read)
    assert keys.absent(t, [(1,)]) is None


def test_a_cache_too_large_to_read_answers_maybe_until_rebuilt() -> None:
    keys, t = CacheKeys(max_keys=3), table()
    assert not keys.rebuild(t, lambda limit: [(i,) for i in range(limit)])
    assert keys.absent(t, [(99,)]) is False  # not None: a read would otherwise read the keys again each time
    assert keys.tracked(t)
    assert keys.rebuild(t, lambda limit: [(1,)])
    assert keys.absent(t, [(99,)]) is True


def test_only_integer_keyed_tables_are_kept() -> None:
    keys, t = CacheKeys(), table(key_type="VARCHAR(10)")
    assert not keys.rebuild(t, lambda limit: [("a",)])
    assert keys.absent(t, [("b",)]) is None


# ---- through the driver, embedded --------------------------------------------------------------------------


@pytest.fixture
def kv(embedded_url: str, unique_name: Callable[[str], str]) -> tuple[str, str]:
    name = unique_name("ck")
    conn = tique.connect(embedded_url)
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT, pad VARCHAR(20))")
    conn.bulk_load(name, [(k, 0, "p") for k in range(1, 21)])
    conn.close()
    return embedded_url, name


def test_reads_find_commits_before_and_after_the_checkpointer_cleans(kv: tuple[str, str]) -> None:
    url, name = kv
    writer, reader = tique.connect(url), tique.connect(url)
    sent: list[str] = []
    reader.statement_hooks.append(lambda sql, _s, _e: sent.append(sql))
    wcur, rcur = writer.cursor(), reader.cursor()
    checkpointer = Checkpointer(open_engine(url).connect())
    try:
        assert cache_keys_of(checkpointer.conn) is not None
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
        plain = [s for s in sent if "__storage" in s and not read_whole_of_storage(s) and "__cache" not in s]
        assert stored and ranked and plain, (len(stored), len(ranked), len(plain))
    finally:
        checkpointer.conn.close()
        writer.close()
        reader.close()


def test_an_old_snapshot_keeps_reading_its_versions_while_the_checkpointer_runs(kv: tuple[str, str]) -> None:
    url, name = kv
    old, writer = tique.connect(url), tique.connect(url)
    ocur, wcur = old.cursor(), writer.cursor()
    checkpointer = Checkpointer(open_engine(url).connect())
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
        checkpointer.conn.close()
        old.close()
        writer.close()


def test_the_readers_own_pending_write_is_sent_before_it_chooses(kv: tuple[str, str]) -> None:
    """A read whole of a key the transaction wrote (not yet sent) and no longer holds: held rows are forgotten while
    writes stay pending (DDL elsewhere in the process, a priority retry; forgotten by hand here). The write must
    reach the Cache (and the set) before the read chooses the Storage-only form."""
    url, name = kv
    conn = tique.connect(url)
    sent: list[str] = []
    conn.statement_hooks.append(lambda sql, _s, _e: sent.append(sql))
    cur = conn.cursor()
    try:

        def own_rows_sent() -> None:  # the plan of a read differs once the transaction's rows are in the Cache
            cur.execute(f"UPDATE {name} SET v = 1 WHERE k = %s", (9,))
            cur.execute(f"SELECT COUNT(v) FROM {name}")  # it names v: the update is sent first
            assert cur.fetchall() == [(20,)]

        for _ in range(2):  # that plan learns to read whole (and then reads so)
            own_rows_sent()
            assert read_update(cur, name, 4) == 0
            conn.rollback()
        own_rows_sent()
        cur.execute(f"UPDATE {name} SET v = 50 WHERE k = %s", (3,))
        conn._txn.known.clear()  # type: ignore[union-attr]
        sent.clear()
        cur.execute(f"SELECT v FROM {name} WHERE k = %s", (3,))
        assert cur.fetchall() == [(50,)]
        assert any(STORED_READ in s or read_whole_of_storage(s) for s in sent), sent  # read whole, either form
        conn.rollback()
    finally:
        conn.close()


def test_tables_swapping_names_in_another_connection(kv: tuple[str, str], unique_name: Callable[[str], str]) -> None:
    """Two tables swap names (their Cache tables go with them) while a set was known for each name: a's Cache
    had no row of key 1, b's had one. A set kept across the DDL would send the read of a's key 1 to Storage alone,
    where the row (b's, in its Cache only) is not."""
    url, a = kv
    b, spare = unique_name("ckb"), unique_name("ckc")
    conn, other = tique.connect(url), tique.connect(url)
    ocur = other.cursor()
    try:
        ocur.execute(f"CREATE TABLE {b} (k INT PRIMARY KEY, v INT, pad VARCHAR(20))")
        ocur.execute(f"INSERT INTO {b} VALUES (1, 100, 'b')")
        other.commit()
        assert twice(conn, a, 1) == 0
        assert twice(conn, b, 1) == 100
        for old, new in ((a, spare), (b, a), (spare, b)):
            ocur.execute(f"ALTER TABLE {old} RENAME TO {new}")
        assert twice(conn, a, 1) == 100  # was b
        assert twice(conn, b, 1) == 0  # was a
    finally:
        conn.close()
        other.close()


def test_a_kernel_serving_mapi_clients_keeps_no_set() -> None:
    """Under ``tique serve`` other processes write the Cache over MAPI: nothing here could see their keys."""
    import subprocess
    import sys

    code = (
        "import socket, tempfile\n"
        "from tique.engine.embedded import EmbeddedEngine\n"
        "from tique.engine.url import parse_url\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]; s.close()\n"
        "d = tempfile.mkdtemp()\n"
        "e = EmbeddedEngine(parse_url(f'monetdbe://{d}/db'), mapi_port=port)\n"
        "c = e.connect()\n"
        "print(c.cache_keys is None)\n"
        "e.close()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "True", out.stderr[-2000:]


def test_an_embedded_kernel_without_listener_keeps_one(embedded_url: str) -> None:
    conn = open_engine(embedded_url).connect()
    try:
        assert cache_keys_of(conn) is not None
    finally:
        conn.close()


def test_duplicate_checks_of_inserted_keys(kv: tuple[str, str]) -> None:
    """An INSERT's keys are checked against the snapshot when sent: by Storage alone when no Cache row has them
    (a key only in Storage is a duplicate; a key whose delete the checkpointer moved is free again), with the
    Cache otherwise (a delete still there frees the key)."""
    url, name = kv
    conn = tique.connect(url)
    sent: list[str] = []
    conn.statement_hooks.append(lambda sql, _s, _e: sent.append(sql))
    cur = conn.cursor()
    checkpointer = Checkpointer(open_engine(url).connect())
    try:
        twice(conn, name, 1)  # the table's set is built

        def insert(k: int) -> None:
            sent.clear()
            cur.execute(f"INSERT INTO {name} VALUES (%s, 7, 'new')", (k,))
            conn.commit()

        with pytest.raises(tique.IntegrityError, match="duplicate"):
            insert(5)  # in Storage only
        assert any("tq_dup" in s and "__cache" not in s for s in sent), sent  # the check read Storage alone
        conn.rollback()
        cur.execute(f"DELETE FROM {name} WHERE k = %s", (6,))
        conn.commit()
        insert(6)  # its delete is in the Cache: the key is free
        cur.execute(f"DELETE FROM {name} WHERE k = %s", (6,))
        conn.commit()
        checkpointer.run_once()  # the delete reaches Storage; the Cache rows go
        checkpointer.run_once()
        insert(6)
        cur.execute(f"SELECT v, pad FROM {name} WHERE k = %s", (6,))
        assert cur.fetchall() == [(7, "new")]
        with pytest.raises(tique.IntegrityError, match="duplicate"):
            insert(6)
        conn.rollback()
    finally:
        checkpointer.conn.close()
        conn.close()


def test_a_rebuild_by_a_stale_table_entry_is_not_used_for_the_table_now_under_its_name() -> None:
    """A Cache table's name outlives its table: DROP and CREATE (or RENAME) put another table under it. A rebuild by
    an entry read before that DDL (a checkpointer's run, a plan) reads the new table's rows by the old key columns:
    its set must not answer for the new table."""
    keys = CacheKeys()
    old = table()
    new = TableInfo(
        table_id=2,
        schema="sys",
        name="t",
        kind="tx",
        columns=(ColumnSpec("k", "INT", True), ColumnSpec("j", "INT", True), ColumnSpec("v", "INT")),
        key=("k", "j"),
    )
    assert old.cache == new.cache
    assert keys.rebuild(old, lambda limit: [(1,)])  # the new table's row (1, 2), read by the old key column
    assert keys.absent(new, [(1, 2)]) is not True
    assert not keys.tracked(new)  # the checkpointer does not rebuild it by that entry either
    assert not keys.rebuild(old, lambda limit: [("a",)])  # a column of another type now: nothing installed


def test_the_checkpointer_rebuilding_by_a_table_entry_older_than_a_drop_and_create(
    embedded_url: str, unique_name: Callable[[str], str]
) -> None:
    """The checkpointer reads the catalog once per run; the table it cleans may be dropped and created again (same
    name, same Cache table name, another key) before it rebuilds that table's set."""
    name = unique_name("ckst")
    conn, other = tique.connect(embedded_url), tique.connect(embedded_url)
    cur, ocur = conn.cursor(), other.cursor()
    checkpointer = Checkpointer(open_engine(embedded_url).connect())
    try:
        cur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT)")
        cur.execute(f"INSERT INTO {name} VALUES (1, 10), (2, 20)")
        conn.commit()
        cur.execute(f"SELECT v FROM {name} WHERE k = %s", (1,))  # the table's set is built: tracked
        assert cur.fetchall() == [(10,)]
        conn.commit()
        current: list[TableInfo] = []
        done: list[bool] = []
        table_step = checkpointer._table

        def spy(info: TableInfo, *args: Any) -> Any:
            current.append(info)
            return table_step(info, *args)

        def hook(step: str) -> None:
            if step != "cleaned" or current[-1].name != name or done:
                return
            done.append(True)
            ocur.execute(f"DROP TABLE {name}")
            ocur.execute(f"CREATE TABLE {name} (k INT, j INT, v INT, PRIMARY KEY (k, j))")
            ocur.execute(f"INSERT INTO {name} VALUES (1, 2, 42)")
            other.commit()
            ocur.execute(f"SELECT v FROM {name} WHERE k = %s AND j = %s", (1, 2))  # the new table's set is built
            assert ocur.fetchall() == [(42,)]
            other.commit()

        checkpointer._table = spy  # type: ignore[method-assign]
        checkpointer.step_hook = hook
        report = checkpointer.run_once()
        assert done, report
        cur.execute(f"SELECT v FROM {name} WHERE k = %s AND j = %s", (1, 2))
        assert cur.fetchall() == [(42,)]
        conn.commit()
    finally:
        checkpointer.conn.close()
        conn.close()
        other.close()


def test_a_second_sequencer_on_an_open_embedded_database_is_refused(tmp_path: Any) -> None:
    """A Database of another sequencer kind on the kernel open in the process would run recovery, which gives every
    commit without an outcome an aborted one - the first Database's commits in flight. It is refused before it
    opens anything (on MonetDB 11.41 the SQL sequencer's install refuses it too, but only after that check)."""
    import subprocess
    import sys

    code = (
        "import tique\n"
        f"url = 'monetdbe://{tmp_path}/db'\n"
        "a = tique.connect(url)\n"
        "try:\n"
        "    tique.connect(url, sequencer='sql')\n"
        "    print('opened')\n"
        "except tique.InterfaceError as exc:\n"
        "    print('refused', \"sequencer='c'\" in str(exc))\n"
        "a.close()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.split() == ["refused", "True"], out.stdout + out.stderr[-2000:]
