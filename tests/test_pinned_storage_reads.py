"""Reads that pin part of a key (Delivery's order lines by order: three of four key columns) read Storage alone
when no Cache row's key has the pinned values (Transaction.storage_only, tique/cache_keys.py). Attacked here: the
reader's own pending writes in the group (sent first when the read needs them, left out when it does not), other
connections' commits before and after the snapshot, the checkpointer moving them under an old snapshot, values
the key columns compare otherwise than Python does, DDL in another connection, and writers, readers and the
checkpointer together. Every answer is also checked against the same statements with the choice turned off."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import tique
from tests.bursts import run_in_bursts
from tests.conftest import sized
from tique.checkpoint import Checkpointer
from tique.engine import open_engine

GROUPS = [(w, d, o) for w in (1, 2) for d in (1, 2) for o in (1, 2, 3)]
LINES = 4
VALUE = 10


class Sent:
    """The statements a connection sends, a prepared one's run as the text it runs (not the key set's rebuilds,
    which read the Cache on purpose)."""

    def __init__(self, conn: tique.Connection) -> None:
        self.sql: list[str] = []
        raw = conn._raw

        def seen(sql: str, _s: object, _e: object) -> None:
            run = re.match(r"EXEC (\d+)\(", sql)
            self.sql.append((raw.prepared_text(int(run.group(1))) or sql) if run else sql)

        conn.statement_hooks.append(seen)

    def storage_only(self, name: str) -> bool:
        """Did the last statement reading ``name`` read its Storage alone?"""
        last = [s for s in self.sql if f"{name}__" in s and "LIMIT 200001" not in s][-1]
        return f"{name}__storage" in last and f"{name}__cache" not in last


def load(url: str, name: str) -> None:
    conn = tique.connect(url)
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} (w INT, d INT, o INT, n INT, v INT, note VARCHAR(10), PRIMARY KEY (w, d, o, n))")
    conn.bulk_load(name, [(*g, n, VALUE, "x") for g in GROUPS for n in range(1, LINES + 1)])
    conn.close()


@pytest.fixture
def lines(embedded_url: str, unique_name: Callable[[str], str]) -> tuple[str, str]:
    name = unique_name("pl")
    load(embedded_url, name)
    return embedded_url, name


@pytest.fixture
def checkpointer(lines: tuple[str, str]) -> Iterator[Checkpointer]:
    runner = Checkpointer(open_engine(lines[0]).connect())
    try:
        yield runner
    finally:
        runner.conn.close()


def group_sum(cur: tique.Cursor, name: str, group: tuple[Any, ...]) -> tuple[int, int]:
    cur.execute(f"SELECT SUM(v), COUNT(*) FROM {name} WHERE w = %s AND d = %s AND o = %s", group)
    s, n = cur.fetchone()  # type: ignore[misc]
    return int(s or 0), int(n)


def test_a_group_with_no_cache_row_is_read_and_updated_from_storage_alone(lines: tuple[str, str]) -> None:
    url, name = lines
    conn = tique.connect(url)
    sent = Sent(conn)
    cur = conn.cursor()
    try:
        assert group_sum(cur, name, (1, 1, 1)) == (LINES * VALUE, LINES)
        assert sent.storage_only(name)
        cur.execute(f"UPDATE {name} SET note = 'd' WHERE w = %s AND d = %s AND o = %s", (1, 1, 2))
        assert cur.rowcount == LINES and sent.storage_only(name)
        # the pending UPDATE changed no column the SUM reads: left in the client, Storage still answers
        assert group_sum(cur, name, (1, 1, 2)) == (LINES * VALUE, LINES) and sent.storage_only(name)
        cur.execute(f"UPDATE {name} SET note = 'e' WHERE w = %s AND d = %s AND o = %s", (1, 1, 3))
        assert cur.rowcount == LINES and sent.storage_only(name)  # another group's pending rows do not matter
        cur.execute(f"SELECT COUNT(*) FROM {name} WHERE w = %s AND d = %s AND note = %s", (1, 1, "d"))
        assert cur.fetchone() == (LINES,)  # a read needing them: they are sent first, and found
        assert not sent.storage_only(name)
        conn.commit()
        cur.execute(f"SELECT o, COUNT(*) FROM {name} WHERE w = 1 AND d = 1 AND note <> 'x' GROUP BY o ORDER BY o")
        assert cur.fetchall() == [(2, LINES), (3, LINES)]
        conn.rollback()
    finally:
        conn.close()


@pytest.mark.parametrize(
    "write, read, expected",
    [
        # a pending change of a column the read uses: sent before the read, which sees it
        ("UPDATE {t} SET v = v + 1 WHERE w = 1 AND d = 1 AND o = 1", "SUM", (LINES * VALUE + LINES, LINES)),
        ("INSERT INTO {t} VALUES (1, 1, 1, 9, 5, 'n')", "SUM", (LINES * VALUE + 5, LINES + 1)),
        ("DELETE FROM {t} WHERE w = 1 AND d = 1 AND o = 1 AND n = 2", "SUM", ((LINES - 1) * VALUE, LINES - 1)),
        ("UPDATE {t} SET o = 7 WHERE w = 1 AND d = 1 AND o = 1 AND n = 1", "SUM", ((LINES - 1) * VALUE, LINES - 1)),
        (
            "UPDATE {t} SET o = 1, n = 9 WHERE w = 1 AND d = 1 AND o = 2 AND n = 1",
            "SUM",
            ((LINES + 1) * VALUE, LINES + 1),
        ),
        ("DELETE FROM {t} WHERE w = 1 AND d = 1 AND o = 1", "SUM", (0, 0)),
        ("UPDATE {t} SET v = 0 WHERE w = 1 AND d = 1 AND o = 1", "UPDATE", None),
        ("DELETE FROM {t} WHERE w = 1 AND d = 1 AND o = 1 AND n = 3", "UPDATE", None),
    ],
)
def test_the_readers_own_pending_writes_in_the_group(
    lines: tuple[str, str], monkeypatch: pytest.MonkeyPatch, write: str, read: str, expected: tuple[int, int] | None
) -> None:
    """Each answer equals the one read with every Cache branch (the choice turned off)."""
    url, name = lines
    conn = tique.connect(url)
    cur = conn.cursor()

    def run() -> Any:
        cur.execute(write.format(t=name))
        if read == "SUM":
            got: Any = group_sum(cur, name, (1, 1, 1))
        else:  # an UPDATE by the group after the write: the rows it finds and their values after
            cur.execute(f"UPDATE {name} SET v = v * 2 WHERE w = %s AND d = %s AND o = %s", (1, 1, 1))
            got = (cur.rowcount, group_sum(cur, name, (1, 1, 1)))
        conn.rollback()
        return got

    try:
        got = run()
        if expected is not None:
            assert got == expected
        monkeypatch.setattr(tique.transaction.Transaction, "storage_only", lambda self, *_: frozenset())
        assert got == run()
    finally:
        conn.close()


def test_commits_by_others_before_and_after_the_snapshot_and_the_checkpointer(
    lines: tuple[str, str], checkpointer: Checkpointer
) -> None:
    url, name = lines
    reader, writer = tique.connect(url), tique.connect(url)
    sent = Sent(reader)
    rcur, wcur = reader.cursor(), writer.cursor()
    try:
        assert group_sum(rcur, name, (2, 2, 2)) == (LINES * VALUE, LINES)  # the old snapshot begins
        wcur.execute(f"UPDATE {name} SET v = v + 1 WHERE w = 2 AND d = 2 AND o = 2")
        wcur.execute(f"INSERT INTO {name} VALUES (2, 2, 2, 99, 100, 'n')")
        writer.commit()
        checkpointer.run_once()  # may move nothing the old snapshot must not see
        assert group_sum(rcur, name, (2, 2, 2)) == (LINES * VALUE, LINES)
        assert not sent.storage_only(name)
        assert group_sum(rcur, name, (2, 2, 1)) == (LINES * VALUE, LINES)  # a group nobody wrote
        assert sent.storage_only(name)
        reader.rollback()
        assert group_sum(rcur, name, (2, 2, 2)) == (LINES * VALUE + LINES + 100, LINES + 1)
        reader.rollback()
        checkpointer.run_once()  # now it moves them, and the group has no Cache row left
        assert group_sum(rcur, name, (2, 2, 2)) == (LINES * VALUE + LINES + 100, LINES + 1)
        assert sent.storage_only(name)
        reader.rollback()
        # a commit after the reader's snapshot began, into a group the reader then reads
        assert group_sum(rcur, name, (1, 2, 3)) == (LINES * VALUE, LINES)
        wcur.execute(f"DELETE FROM {name} WHERE w = 1 AND d = 2 AND o = 3 AND n = 1")
        writer.commit()
        assert group_sum(rcur, name, (1, 2, 3)) == (LINES * VALUE, LINES)
        assert not sent.storage_only(name)
        reader.rollback()
        assert group_sum(rcur, name, (1, 2, 3)) == ((LINES - 1) * VALUE, LINES - 1)
        reader.rollback()
    finally:
        reader.close()
        writer.close()


@pytest.mark.parametrize(
    "given", [1, "1", 1.0, 1.5, True, Decimal("1.0"), 2**31, -(2**31) + 1, 2**63 - 1, "1 ", None], ids=repr
)
def test_pinned_values_the_engine_compares_by_its_own_rules(
    lines: tuple[str, str], monkeypatch: pytest.MonkeyPatch, given: Any
) -> None:
    """A value of another type than the column's, or one it converts, leaves the choice to the engine's rules:
    the answer (or the error) is the one read with every Cache branch."""
    url, name = lines
    conn = tique.connect(url)
    cur = conn.cursor()
    writer = tique.connect(url)
    writer.cursor().execute(f"UPDATE {name} SET v = 1000 WHERE w = 1 AND d = 1 AND o = 1 AND n = 1")
    writer.commit()
    writer.close()

    def run() -> Any:
        try:
            cur.execute(f"SELECT n, v FROM {name} WHERE w = %s AND d = 1 AND o = %s ORDER BY n", (1, given))
            return cur.fetchall()
        except tique.Error as exc:
            return type(exc)
        finally:
            conn.rollback()

    try:
        got = run()
        monkeypatch.setattr(tique.transaction.Transaction, "storage_only", lambda self, *_: frozenset())
        assert got == run()
    finally:
        conn.close()


def test_a_table_dropped_and_created_again_in_another_connection(lines: tuple[str, str]) -> None:
    """The set read for the old table must not answer for the new one, whose Cache has a committed row."""
    url, name = lines
    reader, other = tique.connect(url), tique.connect(url)
    rcur, ocur = reader.cursor(), other.cursor()
    try:
        assert group_sum(rcur, name, (1, 1, 1)) == (LINES * VALUE, LINES)  # the old table's set: empty
        reader.rollback()
        ocur.execute(f"DROP TABLE {name}")
        other.commit()
        ocur.execute(
            f"CREATE TABLE {name} (w INT, d INT, o INT, n INT, v INT, note VARCHAR(10), PRIMARY KEY (w, d, o, n))"
        )
        other.commit()
        ocur.execute(f"INSERT INTO {name} VALUES (1, 1, 1, 1, 7, 'new')")
        other.commit()
        assert group_sum(rcur, name, (1, 1, 1)) == (7, 1)
        reader.rollback()
    finally:
        reader.close()
        other.close()


def test_group_transfers_readers_and_the_checkpointer_together(tmp_path: Path) -> None:
    """Writers move amounts between the lines of one group, or delete a line and insert another carrying its
    amount; readers check every group's sum by the group's key values, whichever form the reads take, and both
    forms must have run. In a process and database of their own (see test_stored_tables' transfers)."""
    url = f"monetdbe://{tmp_path / 'db'}"
    code = f"import json, tests.test_pinned_storage_reads as t; print(json.dumps(t.transfers({url!r})))"
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=root)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert not result["errors"], result["errors"]
    assert result["forms"]["storage"] >= 5 and result["forms"]["cache"] >= 5, result["forms"]


def transfers(url: str, seconds: float = 20) -> dict[str, Any]:
    """The run of test_group_transfers_readers_and_the_checkpointer_together."""
    name = "pl"
    load(url, name)
    stop, writing = threading.Event(), threading.Event()
    errors: list[str] = []
    forms = {"storage": 0, "cache": 0}
    total = LINES * VALUE

    def writer(seed: int) -> None:
        import random

        rng = random.Random(seed)
        conn = tique.connect(url)
        cur = conn.cursor()
        try:
            while not stop.is_set():
                if not writing.wait(0.05):
                    cur.execute("SELECT 1")  # a begin moves this session's snapshot pin on
                    conn.rollback()
                    continue
                group = rng.choice(GROUPS)
                try:
                    cur.execute(f"SELECT n, v FROM {name} WHERE w = %s AND d = %s AND o = %s", group)
                    rows = cur.fetchall()
                    (a, va), (b, _) = rng.sample(rows, 2)
                    amount = rng.randint(1, 5)
                    if rng.random() < 0.5:
                        cur.execute(f"UPDATE {name} SET v = v - %s WHERE w = %s AND d = %s AND o = %s AND n = %s",
                                    (amount, *group, a))  # fmt: skip
                        cur.execute(f"UPDATE {name} SET v = v + %s WHERE w = %s AND d = %s AND o = %s AND n = %s",
                                    (amount, *group, b))  # fmt: skip
                    else:  # a line goes, another comes with its amount
                        fresh = max(n for n, _ in rows) + 1
                        cur.execute(f"DELETE FROM {name} WHERE w = %s AND d = %s AND o = %s AND n = %s", (*group, a))
                        cur.execute(f"INSERT INTO {name} VALUES (%s, %s, %s, %s, %s, 'm')", (*group, fresh, va))
                    conn.commit()
                except tique.DatabaseError:
                    conn.rollback()
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(f"writer: {exc!r}")
        finally:
            conn.close()

    def reader() -> None:
        conn = tique.connect(url)
        sent = Sent(conn)
        cur = conn.cursor()
        try:
            while not stop.is_set():
                for group in GROUPS:
                    got = group_sum(cur, name, group)
                    forms["storage" if sent.storage_only(name) else "cache"] += 1
                    if got[0] != total:
                        errors.append(f"group {group} summed to {got}")
                        return
                cur.execute(f"SELECT SUM(v) FROM {name}")
                whole = cur.fetchone()[0]  # type: ignore[index]
                conn.rollback()
                if whole != total * len(GROUPS):
                    errors.append(f"the table summed to {whole}")
                    return
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(f"reader: {exc!r}")
        finally:
            conn.close()

    # `make test` stops once both forms ran 10 times (the test needs 5); `make test-long` runs the whole time
    enough = sized(lambda: forms["storage"] >= 10 and forms["cache"] >= 10, lambda: False)
    run_in_bursts(url, writer, reader, stop, writing, errors, seconds, enough=enough)
    return {"errors": errors, "forms": forms}
