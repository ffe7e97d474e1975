"""Attacks on the rows a process shares across its transactions (tique/shared_rows.py), beyond
test_shared_rows_never_stale.py: DDL that leaves a table's spec as it was while its rows changed, a table too big
to keep, a table whose columns changed, many tables read by key (the begin statement), an ordinary user, and
priority retries. Each checks that sharing happened where it should, so it cannot pass by sharing nothing."""

from __future__ import annotations

import datetime
import itertools
import random
import threading
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import pytest

import tique
from tests.adversarial.clients import Client
from tests.adversarial.test_shared_rows_never_stale import _quiet_at_once, hits, read, setup, warm  # noqa: F401
from tests.conftest import ServeProcess, start_serve
from tique import shared_rows
from tique.database import Database
from tique.errors import SerializationFailure
from tique.shared_rows import SharedRows


def test_a_column_dropped_and_added_again_is_read_as_the_engine_has_it(
    url: str, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    """DROP COLUMN c then ADD COLUMN c with the same spec: tique's catalog is as before, but every row's c is the
    DEFAULT now. DDL takes effect at once, so a transaction that began before it (or ran it) reads the new
    values from the engine, and rows it holds are forgotten (known_rows.py); rows shared from before the DDL
    must not answer it either."""
    table = unique_name("sr_readd")
    conn = connect()
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, c INT DEFAULT 0)")
    conn.commit()
    cur.executemany(f"INSERT INTO {table} VALUES (%s, %s)", [(i, 5) for i in range(1, 8)])
    conn.commit()
    reader, ddl = connect(), connect()

    def c_of(who: tique.Connection, key: int) -> Any:
        got = who.cursor()
        got.execute(f"SELECT c FROM {table} WHERE id = %s", (key,))
        return got.fetchall()

    for _ in range(4):
        for k in range(1, 8):
            c_of(reader, k)
        reader.commit()
    before = hits(url)
    assert c_of(reader, 1) == [(5,)]  # the reader's transaction is open from here
    assert hits(url) > before
    ddl.cursor().execute(f"ALTER TABLE {table} DROP COLUMN c")
    ddl.cursor().execute(f"ALTER TABLE {table} ADD COLUMN c INT DEFAULT 0")
    # another session's DDL of a table the transaction uses fails its next statement (README), so no row shared
    # from before the DDL can answer it; the next transaction reads the rows as the engine has them now
    with pytest.raises(tique.SerializationFailure):
        c_of(reader, 3)
    reader.rollback()
    for k in range(3, 6):
        assert c_of(reader, k) == [(0,)], f"key {k}: a row shared from before the DDL answered a read after it"
    reader.commit()
    assert c_of(ddl, 2) == [(0,)]
    ddl.commit()

    # the same by the reader's own DDL, in its transaction
    for _ in range(4):
        for k in range(1, 8):
            c_of(reader, k)
        reader.commit()
    ddl.cursor().execute(f"UPDATE {table} SET c = 9")
    ddl.commit()
    for _ in range(4):
        for k in range(1, 8):
            assert c_of(reader, k) == [(9,)]
        reader.commit()
    before = hits(url)
    assert c_of(reader, 1) == [(9,)]
    assert hits(url) > before
    reader.cursor().execute(f"ALTER TABLE {table} DROP COLUMN c")
    reader.cursor().execute(f"ALTER TABLE {table} ADD COLUMN c INT DEFAULT 0")
    for k in range(4, 7):
        assert c_of(reader, k) == [(0,)], f"key {k}: a row shared from before its own DDL answered a read after it"
    reader.commit()


def record_parts(
    monkeypatch: pytest.MonkeyPatch, after: int, part: int | None = None, keep: int | None = None, url: str = ""
) -> list[tuple[int, int]]:
    """A quiet table read whole after ``after`` misses, ``part`` rows per transaction, kept when it has at most
    ``keep`` rows (in the process of ``url``), where given; the (offset, rows) of each part from now on."""
    monkeypatch.setattr(shared_rows, "WHOLE_AFTER", after)
    if part is not None:
        monkeypatch.setattr(shared_rows, "WHOLE_PART", part)
    if keep is not None:
        monkeypatch.setattr(Database.get(url).shared_rows, "max_rows", keep)
    parts: list[tuple[int, int]] = []
    put_part = SharedRows.put_part

    def recorded(self: SharedRows, info: Any, offset: int, found: Any, last: bool, sts: int, version: int) -> None:
        parts.append((offset, len(found)))
        put_part(self, info, offset, found, last, sts, version)

    monkeypatch.setattr(SharedRows, "put_part", recorded)
    return parts


def bulk_loaded(connect: Callable[..., tique.Connection], table: str, rows: int) -> tique.Connection:
    """``setup``'s table with rows 1 to ``rows - 1`` in its Storage (a bulk load) and none in its Cache."""
    conn = setup(connect, table, rows=1)
    conn.bulk_load(table, [(i, f"n{i}", Decimal(f"{i}.50")) for i in range(1, rows)])
    return conn


def test_a_table_too_big_to_keep_is_read_whole_once(
    url: str,
    connect: Callable[..., tique.Connection],
    unique_name: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A quiet table that keeps missing is read whole; when it does not fit, that read (up to 100,001 whole rows
    at the real limit) is thrown away, so it must not be repeated every WHOLE_AFTER misses."""
    parts = record_parts(monkeypatch, after=3, keep=5, url=url)
    table = unique_name("sr_big")
    setup(connect, table, rows=30)
    reader = connect()
    warm(reader, table, range(1, 2))
    for _ in range(3):
        for k in range(2, 30):
            assert read(reader, table, k) == (f"n{k}", Decimal(f"{k}.50"))
        reader.commit()
    assert parts == [(0, 29)], f"the table that did not fit was read whole {len(parts)} times: {parts}"


def test_a_table_whose_storage_alone_is_too_big_is_never_read_in_parts(
    url: str,
    connect: Callable[..., tique.Connection],
    unique_name: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each part of a whole read sorts the table's snapshot: a 1M-row quiet table took 11 parts of 45-135 ms
    before the rows kept overflowed. A Storage holding more rows than are kept is refused before any part; every
    read still answers as the engine does."""
    parts = record_parts(monkeypatch, after=3, part=4, keep=5, url=url)
    table = unique_name("sr_stored_big")
    bulk_loaded(connect, table, rows=30)
    reader = connect()
    warm(reader, table, range(1, 2))
    counted: list[str] = []
    reader.statement_hooks.append(lambda sql, _s, _e: counted.append(sql) if "COUNT(*)" in sql else None)
    for _ in range(3):
        for k in range(2, 31):
            assert read(reader, table, k) == ((f"n{k}", Decimal(f"{k}.50")) if k < 30 else None)
        reader.commit()
    assert parts == [], f"a table whose Storage alone does not fit was read in parts: {parts}"
    assert len(counted) == 1, f"its Storage was counted {len(counted)} times"


def test_sharing_resumes_after_a_column_is_added(
    url: str, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    """ALTER TABLE ADD COLUMN changes the table's columns (not its id): its rows start again, shared as before."""
    table = unique_name("sr_added")
    setup(connect, table)
    reader, other = connect(), connect()
    warm(reader, table, range(1, 4))
    other.cursor().execute(f"ALTER TABLE {table} ADD COLUMN extra INT DEFAULT 7")
    other.commit()
    warm(reader, table, range(1, 4))
    before = hits(url)
    assert read(reader, table, 2) == ("n2", Decimal("2.50"))
    reader.commit()
    assert hits(url) > before, "the table is never shared again after its columns changed"


def test_many_tables_read_by_key_keep_the_begin_statement_prepared(
    url: str, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    """Each begin reads the write marks of the tables tracked (the 32 read by key most recently). A process that
    reads more tables than that in turn changes the set at every begin: the begin statement must stay one of a
    few the session has prepared, not a new text MonetDB parses and optimizes (and tique keeps) each time."""
    count = shared_rows.TRACKED + 8
    admin = connect()
    tables = [unique_name("sr_many") for _ in range(count)]
    for name in tables:
        admin.cursor().execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, v INT)")
    admin.commit()
    conn = connect()
    sent: list[str] = []
    conn.statement_hooks.append(lambda sql, _s, _error: sent.append(sql))
    for _ in range(2):
        for name in tables:
            conn.cursor().execute(f"SELECT v FROM {name} WHERE id = %s", (1,))
            conn.commit()
    sent.clear()
    for name in tables:
        conn.cursor().execute(f"SELECT v FROM {name} WHERE id = %s", (1,))
        conn.commit()
    parsed = [s for s in sent if "last_write" in s and not s.lstrip().upper().startswith("EXEC")]
    assert len(parsed) <= 2, f"{len(parsed)} of {count} begins were parsed anew, e.g. {parsed[0][:200]}"


def test_a_priority_retry_reads_the_rows_of_its_new_snapshot(
    url: str, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    """A priority retry takes a fresher snapshot after its begin (Transaction.reserve): the shared rows it reads
    must be those of that snapshot, not of the begin's."""
    item, stock = unique_name("sr_pitem"), unique_name("sr_pstock")
    setup(connect, item)
    admin = connect()
    admin.cursor().execute(f"CREATE TABLE {stock} (id INT PRIMARY KEY, qty INT)")
    admin.commit()
    admin.cursor().execute(f"INSERT INTO {stock} VALUES (1, 100)")
    admin.commit()
    conn, other = connect(), connect()
    warm(conn, item, range(1, 4))
    seen: list[Any] = []

    def work(c: tique.Connection) -> None:
        seen.append(read(c, item, 2))
        cur = c.cursor()
        cur.execute(f"UPDATE {stock} SET qty = qty - 1 WHERE id = 1")
        if len(seen) == 1:  # the first attempt loses to a commit that also changed the item
            other.cursor().execute(f"UPDATE {item} SET name = 'late' WHERE id = 2")
            other.cursor().execute(f"UPDATE {stock} SET qty = 0 WHERE id = 1")
            other.commit()

    conn.run(work, priority=True)
    assert seen == [("n2", Decimal("2.50")), ("late", Decimal("2.50"))]
    cur = conn.cursor()
    cur.execute(f"SELECT qty FROM {stock} WHERE id = 1")
    assert cur.fetchall() == [(-1,)]
    conn.commit()
    with pytest.raises(SerializationFailure):  # the same without a retry: the attempt really lost
        seen.clear()
        conn.run(work, retries=0)


# ---- an ordinary user --------------------------------------------------------------------------------------

PASSWORD = "bob's pw"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    server = start_serve(tmp_path_factory.mktemp("sr_users") / "sr_users")
    admin = tique.connect(server.url, autocommit=True)
    cur = admin.cursor()
    cur.execute("CREATE TABLE sr_items (id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(6,2))")
    cur.executemany("INSERT INTO sr_items VALUES (%s, %s, %s)", [(i, f"n{i}", f"{i}.50") for i in range(1, 20)])
    cur.execute("CREATE USER bob WITH PASSWORD 'bob''s pw' NAME 'Bob' SCHEMA sys")
    cur.execute("GRANT SELECT, UPDATE ON sr_items TO bob")
    admin.close()
    yield server
    server.stop()


def test_an_ordinary_user_shares_rows_and_its_commits_end_them(served: ServeProcess) -> None:
    """bob's begin reads write marks and his commit raises them (tique.last_write / tique.wrote, granted to
    PUBLIC): he shares rows, the admin's commits end his, and his commits end the admin's."""
    bob_url = served.url.replace(f"monetdb:{served.password}@", "bob:bob%27s%20pw@")
    bob, admin = tique.connect(bob_url), tique.connect(served.url)
    try:
        warm(bob, "sr_items", range(1, 4))
        warm(admin, "sr_items", range(1, 4))
        before = Database.get(bob_url).shared_rows.hits
        assert read(bob, "sr_items", 2) == ("n2", Decimal("2.50"))
        bob.commit()
        assert Database.get(bob_url).shared_rows.hits > before, "bob shared no row"
        before = Database.get(served.url).shared_rows.hits
        assert read(admin, "sr_items", 3) == ("n3", Decimal("3.50"))
        admin.commit()
        assert Database.get(served.url).shared_rows.hits > before, "the admin shared no row"

        admin.cursor().execute("UPDATE sr_items SET name = 'by admin' WHERE id = 2")
        admin.commit()
        assert read(bob, "sr_items", 2) == ("by admin", Decimal("2.50"))
        bob.commit()
        bob.cursor().execute("UPDATE sr_items SET name = 'by bob' WHERE id = 3")
        bob.commit()
        assert read(admin, "sr_items", 3) == ("by bob", Decimal("3.50"))
        admin.commit()
    finally:
        bob.close()
        admin.close()


# ---- the SQL sequencer -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sql_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    server = start_serve(tmp_path_factory.mktemp("sr_sql") / "sr_sql")  # installs the SQL sequencer too
    yield server
    server.stop()


def test_the_sql_sequencer_shares_nothing_and_reads_every_commit(sql_served: ServeProcess) -> None:
    """The SQL sequencer has no write marks: its begins read none, and no row is shared."""
    url = sql_served.url
    reader, writer = tique.connect(url, sequencer="sql"), tique.connect(url, sequencer="sql")
    try:
        setup(lambda: writer, "sr_sqlseq")
        warm(reader, "sr_sqlseq", range(1, 4))
        writer.cursor().execute("UPDATE sr_sqlseq SET name = 'later' WHERE id = 2")
        writer.commit()
        assert read(reader, "sr_sqlseq", 2) == ("later", Decimal("2.50"))
        reader.commit()
        assert Database.get(url, "sql").shared_rows.hits == 0
    finally:
        reader.close()
        writer.close()


# ---- typed keys, answered from a table read whole ----------------------------------------------------------

TYPED = [
    ("DECIMAL(6,2)", [Decimal("1.50"), Decimal("2.00"), Decimal("-0.01")],
     [Decimal("1.5"), Decimal("2"), 2, Decimal("0.00"), Decimal("1.505"), Decimal("-0.010"), Decimal("7.77")]),
    ("VARCHAR(10)", ["a", "A", "a b", "", "\u00e9"], ["a", "a ", "A", "", "e\u0301", "\u00e9", " a", "a b"]),
    ("CHAR(3)", ["ab", "x"], ["ab", "ab ", "x", "x  ", "AB"]),
    ("DATE", [datetime.date(2020, 1, 1), datetime.date(1999, 12, 31)],
     [datetime.datetime(2020, 1, 1), datetime.date(1999, 12, 31), "2020-01-01", datetime.date(2000, 1, 1)]),
    ("DOUBLE", [0.0, 1.5, 1e300, -2.25], [-0.0, 1, 1e300, 2**53 + 1, Decimal("1.5"), 3.0]),
    ("BIGINT", [0, 2**62, -1], [-0, 2**62 + 0.0, True, Decimal(-1), 5]),
]  # fmt: skip


@pytest.mark.parametrize(("sql_type", "stored", "probes"), TYPED, ids=[t[0] for t in TYPED])
def test_a_table_read_whole_answers_typed_keys_as_the_engine(
    url: str,
    connect: Callable[..., tique.Connection],
    unique_name: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
    sql_type: str,
    stored: list[Any],
    probes: list[Any],
) -> None:
    """Once a table is read whole, a key with no row there is answered "no row" without the engine: every
    spelling of a key the engine finds must be found there too (and none it does not)."""
    parts = record_parts(monkeypatch, after=2)
    table = unique_name("sr_typed")
    admin = connect()
    admin.cursor().execute(f"CREATE TABLE {table} (k {sql_type} PRIMARY KEY, v INT)")
    admin.commit()
    admin.cursor().executemany(f"INSERT INTO {table} VALUES (%s, %s)", [(k, i) for i, k in enumerate(stored)])
    admin.commit()
    reader, engine = connect(), connect(shared_rows=False, held_rows=False)
    query = f"SELECT k, v FROM {table} WHERE k = %s"

    def answer(conn: tique.Connection, key: Any) -> Any:
        cur = conn.cursor()
        try:
            cur.execute(query, (key,))
        except tique.Error as exc:
            conn.rollback()
            return type(exc).__name__
        return sorted(map(tuple, cur.fetchall()), key=repr)

    for _ in range(4):  # quiet, and missed: the first probe that misses gets it read whole
        for key in stored:
            answer(reader, key)
        reader.commit()
    before = hits(url)
    for key in (*stored, *probes):
        assert answer(reader, key) == answer(engine, key), f"key {key!r}"
    reader.commit()
    engine.commit()
    assert hits(url) > before
    assert parts == [(0, len(stored))], "the table was not read whole"


# ---- threads ------------------------------------------------------------------------------------------------


def test_readers_in_threads_never_see_a_shared_row_other_than_their_snapshot(
    url: str, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    """Readers on several threads begin, read keys by key (shared when they can) and then the same keys in a
    form that always goes to the engine (``id + 0``), at the same snapshot, while a writer now and then commits
    new values: begins validate out of order, rows are put from older snapshots, whole reads race with writes."""
    table = unique_name("sr_threads")
    setup(connect, table, rows=12)
    stop = time.monotonic() + 3
    mismatches: list[str] = []
    errors: list[BaseException] = []

    def engine_read(conn: tique.Connection, keys: list[int]) -> list[tuple[object, ...] | None]:
        cur = conn.cursor()
        direct = []
        for k in keys:
            cur.execute(f"SELECT name, price FROM {table} WHERE id + 0 = %s", (k,))
            got = cur.fetchall()
            direct.append(tuple(got[0]) if got else None)
        return direct

    def reader() -> None:
        conn = connect()
        try:
            rng = random.Random(threading.get_ident())
            while time.monotonic() < stop:
                keys = [rng.randrange(1, 14) for _ in range(3)]
                shared = [read(conn, table, k) for k in keys]
                direct = engine_read(conn, keys)
                if shared != direct:
                    # MonetDB 11.41 itself was seen answering such a scan with '' for a stored string while other
                    # sessions commit (embedded and over MAPI, shared rows off: README "Engine facts"): only an
                    # answer the engine gives again at the same snapshot counts against the shared rows
                    again = [engine_read(conn, keys) for _ in range(2)]
                    if again[0] == again[1] and again[0] != shared:
                        mismatches.append(f"keys {keys}: shared {shared}, engine {again[0]}")
                conn.commit()
        except BaseException as exc:
            errors.append(exc)
        finally:
            conn.close()

    def writer() -> None:
        conn = connect()
        try:
            n = 0
            while time.monotonic() < stop:
                n += 1
                cur = conn.cursor()
                try:
                    cur.execute(f"UPDATE {table} SET name = %s WHERE id = %s", (f"w{n}", 1 + n % 13))
                    if n % 3 == 0:
                        cur.execute(f"DELETE FROM {table} WHERE id = %s", (1 + (n * 7) % 13,))
                    if n % 4 == 0:
                        cur.execute(f"INSERT INTO {table} VALUES (%s, 'ins', 1.00)", (1 + (n * 5) % 13,))
                    conn.commit()
                except tique.IntegrityError:  # the key inserted is there
                    conn.rollback()
                time.sleep(0.05)
        except BaseException as exc:
            errors.append(exc)
        finally:
            conn.close()

    before = hits(url)
    threads = [threading.Thread(target=reader) for _ in range(3)] + [threading.Thread(target=writer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert not mismatches, mismatches[:5]
    assert hits(url) > before


@pytest.mark.xfail(
    strict=True,
    reason="not fixed: a transaction learns of another process's DDL only when a transaction of its own process "
    "begins (the catalog version); the rows it holds (known_rows.py) have the same limit",
)
def test_a_column_dropped_and_added_again_by_another_process(
    url: str, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    if not url.startswith("monetdb://"):
        pytest.xfail("one embedded database has one process")
    table = unique_name("sr_readd_proc")
    conn = connect()
    conn.cursor().execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, c INT DEFAULT 0)")
    conn.commit()
    conn.cursor().executemany(f"INSERT INTO {table} VALUES (%s, %s)", [(i, 5) for i in range(1, 8)])
    conn.commit()
    reader = connect()

    def c_of(key: int) -> Any:
        got = reader.cursor()
        got.execute(f"SELECT c FROM {table} WHERE id = %s", (key,))
        return got.fetchall()

    for _ in range(4):
        for k in range(1, 8):
            c_of(k)
        reader.commit()
    before = hits(url)
    assert c_of(1) == [(5,)]
    assert hits(url) > before
    other = Client(url)
    try:
        other.ok(f"ALTER TABLE {table} DROP COLUMN c")
        other.ok(f"ALTER TABLE {table} ADD COLUMN c INT DEFAULT 0")
    finally:
        other.close()
    for k in range(3, 6):
        assert c_of(k) == [(0,)], f"key {k}: a row shared from before another process's DDL"
    reader.commit()


def test_a_bulk_load_during_an_open_transaction_is_read_as_the_engine_has_it(
    url: str,
    connect: Callable[..., tique.Connection],
    unique_name: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bulk load writes Storage at once, for every snapshot: a transaction open across it (another connection
    of the process loads, nobody begins meanwhile) finds the loaded rows, also where the table was read whole and
    an absent key was answered without the engine."""
    monkeypatch.setattr(shared_rows, "WHOLE_AFTER", 2)
    table = unique_name("sr_load_open")
    setup(connect, table)
    reader, loader = connect(), connect()
    warm(reader, table, range(1, 4))
    for k in range(4, 10):  # misses: read whole
        read(reader, table, k)
    reader.commit()
    before = hits(url)
    assert read(reader, table, 90) is None  # the transaction is open from here
    assert hits(url) > before
    loader.bulk_load(table, [(90, "loaded", 3), (91, "loaded", 4)])
    assert read(reader, table, 91) == ("loaded", Decimal("4.00"))
    with pytest.raises(tique.SerializationFailure):  # it read the table before and after the load: not one state
        reader.commit()


def test_threads_missing_at_once_read_a_quiet_table_whole_once(
    url: str,
    connect: Callable[..., tique.Connection],
    unique_name: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The client threads of a process miss on a quiet table together; one of them reads it whole and the others
    go on reading by key meanwhile (each whole read of TPC-C's item took 6-9 s of a 4-client run's start when all
    four read it). A whole read that is slow to arrive (here: held 0.5 s before it is kept) must not be repeated."""
    monkeypatch.setattr(shared_rows, "WHOLE_AFTER", 3)
    wholes: list[int] = []
    put_whole = SharedRows.put_whole

    def slow(self: SharedRows, info: Any, found: Any, sts: int, version: int) -> None:
        wholes.append(len(found))
        time.sleep(0.5)
        put_whole(self, info, found, sts, version)

    monkeypatch.setattr(SharedRows, "put_whole", slow)
    table = unique_name("sr_once")
    setup(connect, table, rows=40)
    readers = [connect() for _ in range(4)]
    errors: list[BaseException] = []

    def reader(conn: tique.Connection, seed: int) -> None:
        rng = random.Random(seed)
        try:
            until = time.monotonic() + 2.0
            while time.monotonic() < until:
                for _ in range(5):
                    k = rng.randrange(1, 45)
                    assert read(conn, table, k) == ((f"n{k}", Decimal(f"{k}.50")) if k < 40 else None)
                conn.commit()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(conn, n)) for n, conn in enumerate(readers)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    assert wholes == [39], f"the quiet table was read whole {len(wholes)} times: {wholes}"
    before = hits(url)
    assert read(readers[0], table, 44) is None and read(readers[0], table, 7) == ("n7", Decimal("7.50"))
    assert hits(url) == before + 2  # answered from the whole table, the absent key too


def test_a_quiet_table_is_read_whole_a_part_per_transaction(
    url: str,
    connect: Callable[..., tique.Connection],
    unique_name: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Read at once, one transaction of each process waited for all of a quiet table (TPC-C's item over MAPI:
    about 3 s under load, the NewOrder p99 of a run with clients as processes). It is read a part per transaction,
    in key order; every key, and every absent one, is answered without the engine once the last part came."""
    parts = record_parts(monkeypatch, after=3, part=50)
    table = unique_name("sr_parts")
    setup(connect, table, rows=200)
    reader = connect()
    warm(reader, table, range(1, 2))
    fresh = iter(range(2, 200))  # keys not read yet: each transaction misses, as TPC-C's random items do
    for _ in range(12):
        before = len(parts)
        for k in itertools.islice(fresh, 8):
            assert read(reader, table, k) == (f"n{k}", Decimal(f"{k}.50"))
        reader.commit()
        assert len(parts) - before <= 1, "a transaction read more than one part"
    assert parts == [(0, 50), (50, 50), (100, 50), (150, 49)]
    before = hits(url)
    for k in (150, 199, 200, 999):
        assert read(reader, table, k) == ((f"n{k}", Decimal(f"{k}.50")) if k < 200 else None)
    reader.commit()
    assert hits(url) - before == 4, "a read of the table read whole went to the engine"


def test_a_commit_between_the_parts_of_a_whole_read_starts_it_again(
    url: str,
    connect: Callable[..., tique.Connection],
    unique_name: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Parts read before a commit that wrote the table are of an older snapshot: kept with the parts after it,
    the whole would mix two states. A write seen between them drops them; the read starts again at the first
    part, and every answer is the engine's."""
    parts = record_parts(monkeypatch, after=3, part=50)
    table = unique_name("sr_parts_w")
    setup(connect, table, rows=200)
    reader, writer = connect(), connect()
    warm(reader, table, range(1, 2))
    changed: set[int] = set()

    def expected(k: int) -> tuple[object, ...]:
        return ("changed" if k in changed else f"n{k}", Decimal(f"{k}.50"))

    keys = itertools.cycle(range(2, 200))
    written = -1
    for _ in range(40):
        for k in itertools.islice(keys, 8):
            assert read(reader, table, k) == expected(k), f"key {k}"
        reader.commit()
        if len(parts) == 2 and written < 0:
            wrote = writer.cursor()
            wrote.execute(f"UPDATE {table} SET name = 'changed' WHERE id IN (3, 170)")
            writer.commit()
            changed.update((3, 170))
            written = len(parts)
    for k in (3, 170, 4, 171):
        assert read(reader, table, k) == expected(k), f"key {k}"
    reader.commit()
    later = parts[written:]
    assert written == 2 and later[:1] == [(0, 50)], f"the whole read went on with parts of before the commit: {parts}"
    assert (150, 49) in later, f"the whole read did not finish after the commit: {parts}"
