"""Attacks on reads that pin part of a key and read Storage alone (Transaction.storage_only with point_keys, commit
ec323f5). Every read runs twice in the same transaction: first with the choice on, then with it turned off (the
read keeping every Cache branch); both must agree, and agree with a Python model of what the transaction sees
(committed rows at its begin plus its own writes). Tables whose key order differs from their column order, keys
of TINYINT / SMALLINT / BIGINT / HUGEINT, self-joins, UNIONs, CTEs, views, subqueries, IN lists with equalities,
the transaction's own pending inserts, deletes and key moves, failed statements, autocommit, DDL and the
checkpointer between reads."""

from __future__ import annotations

import os
import random
import re
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import pytest

import tique
import tique.transaction
from tests.conftest import sized
from tique.checkpoint import Checkpointer
from tique.engine import open_engine

_ORIGINAL = tique.transaction.Transaction.storage_only


class Switch:
    """Transaction.storage_only, on or off; counts the statements it let read Storage alone."""

    def __init__(self) -> None:
        self.on = True
        self.stored = 0

    def __call__(self, txn: Any, *args: Any, **kwargs: Any) -> frozenset[str]:
        if not self.on:
            return frozenset()
        got = _ORIGINAL(txn, *args, **kwargs)
        self.stored += bool(got)
        return got


@pytest.fixture
def switch(monkeypatch: pytest.MonkeyPatch) -> Switch:
    s = Switch()
    monkeypatch.setattr(tique.transaction.Transaction, "storage_only", lambda txn, *a, **k: s(txn, *a, **k))
    return s


# key (w, d, o, n) declared in another order than the columns
DDL = (
    "CREATE TABLE {t} (v INT, o INT NOT NULL, note VARCHAR(10), d SMALLINT NOT NULL, n TINYINT NOT NULL, "
    "w BIGINT NOT NULL, PRIMARY KEY (w, d, o, n))"
)
W, D, OS, N = (1, 2), (1, 2), (1, 2, 3), (1, 2, 3)


def _row(w: int, d: int, o: int, n: int, v: int, note: str) -> tuple[Any, ...]:
    return (v, o, note, d, n, w)  # column order


@pytest.fixture
def table(embedded_url: str, unique_name: Callable[[str], str]) -> Iterator[tuple[str, str, str]]:
    name, other = unique_name("apr"), unique_name("apu")
    conn = tique.connect(embedded_url)
    cur = conn.cursor()
    cur.execute(DDL.format(t=name))
    cur.execute(f"CREATE TABLE {other} (k INT PRIMARY KEY, x INT)")
    conn.bulk_load(name, [_row(w, d, o, n, 10, "x") for w in W for d in D for o in OS for n in N])
    conn.bulk_load(other, [(k, k) for k in N])
    conn.close()
    yield embedded_url, name, other


def both(conn: tique.Connection, switch: Switch, sql: str, params: Any = None) -> Any:
    """The answer with the choice on, then off, in the same transaction; they must agree."""
    cur = conn.cursor()

    def once() -> Any:
        try:
            cur.execute(sql, params)
            return sorted(cur.fetchall(), key=repr) if cur.description else cur.rowcount
        except tique.Error as exc:
            return type(exc).__name__

    switch.on = True
    got = once()
    switch.on = False
    off = once()
    switch.on = True
    assert got == off, f"pinned Storage-only read {sql!r} {params!r}: {got!r}, with every Cache branch {off!r}"
    return got


READS: list[tuple[str, Callable[[random.Random], tuple[Any, ...]]]] = [
    ("SELECT SUM(v), COUNT(*) FROM {t} WHERE w = %s AND d = %s AND o = %s", lambda r: _g(r)),
    ("SELECT n, v, note FROM {t} WHERE d = %s AND w = %s", lambda r: (r.choice(D), r.choice(W))),
    ("SELECT COUNT(*), SUM(v) FROM {t} WHERE o = %s", lambda r: (r.choice(OS),)),
    ("SELECT w, d, n, v FROM {t} WHERE n = %s AND o = %s", lambda r: (r.choice(N), r.choice(OS))),
    ("SELECT note FROM {t} WHERE w = %s AND d = %s AND o = %s", lambda r: _g(r)),
    (
        "SELECT a.n, b.n, a.v + b.v FROM {t} a JOIN {t} b ON a.n = b.n "
        "WHERE a.w = %s AND a.d = %s AND a.o = %s AND b.w = %s AND b.d = %s AND b.o = %s",
        lambda r: _g(r) + _g(r),
    ),
    (
        "SELECT v, n FROM {t} WHERE w = %s AND d = %s AND o = %s "
        "UNION ALL SELECT v, n FROM {t} WHERE w = %s AND d = %s",
        lambda r: _g(r) + _g(r)[:2],
    ),
    (
        "SELECT COUNT(*) FROM {t} WHERE w = %s AND d = %s AND o = %s AND v >= (SELECT AVG(v) FROM {t})",
        lambda r: _g(r),
    ),
    (
        "SELECT (SELECT SUM(v) FROM {t} WHERE w = %s AND d = %s AND o = %s), COUNT(*) FROM {u}",
        lambda r: _g(r),
    ),
    (
        "WITH g AS (SELECT * FROM {t} WHERE w = %s AND d = %s AND o = %s) SELECT COUNT(*), SUM(v) FROM g",
        lambda r: _g(r),
    ),
    (
        "WITH g AS (SELECT n, v FROM {t} WHERE w = %s AND d = %s AND o = %s) "
        "SELECT a.n, b.v FROM g a JOIN g b ON a.n = b.n",
        lambda r: _g(r),
    ),
    ("SELECT COUNT(*), SUM(v) FROM {t} WHERE w IN (%s, %s) AND d = %s AND o = %s", lambda r: _g(r)[:1] + _g(r)),
    (
        "SELECT COUNT(*), SUM(v) FROM {t} WHERE w = %s AND d IN (%s, %s, %s) AND o = %s",
        lambda r: (r.choice(W), r.choice(D), r.choice(D), 3, r.choice(OS)),
    ),
    (
        "SELECT SUM({t}.v) FROM {t} JOIN {u} ON {u}.k = {t}.n WHERE {t}.w = %s AND {t}.d = %s AND {t}.o = %s",
        lambda r: _g(r),
    ),
    (
        "SELECT {u}.k, t2.v FROM {u} LEFT JOIN {t} t2 ON t2.n = {u}.k WHERE t2.w = %s AND t2.d = %s AND t2.o = %s",
        lambda r: _g(r),
    ),
    ("SELECT COUNT(*) FROM {t} WHERE w = %s AND w = %s AND d = %s", lambda r: (r.choice(W), r.choice(W), r.choice(D))),
    (
        "SELECT n FROM {t} WHERE w = %s AND d = %s AND o = %s AND n IN (SELECT k FROM {u} WHERE x > %s)",
        lambda r: (*_g(r), r.choice([0, 1, 2])),
    ),
    (
        "SELECT COUNT(*) FROM {t} WHERE w = %s AND d = %s AND o = %s AND EXISTS (SELECT 1 FROM {t} x WHERE x.v > 10)",
        lambda r: _g(r),
    ),
    ("SELECT o, MAX(v) FROM {t} WHERE w = %s AND d = %s GROUP BY o", lambda r: _g(r)[:2]),
    (
        "SELECT COUNT(*) FROM (SELECT * FROM {t} WHERE w = %s AND d = %s AND o = %s) AS s WHERE s.v > 10",
        lambda r: _g(r),
    ),
]


def _g(r: random.Random) -> tuple[int, int, int]:
    return (r.choice(W), r.choice(D), r.choice(OS))


def _model_answer(idx: int, rows: dict[tuple[int, ...], tuple[int, str]], params: tuple[Any, ...]) -> Any:
    """The model's answer for READS[idx] where it is simple to compute (None: not modelled)."""
    if idx == 0:
        w, d, o = params
        vs = [v for (kw, kd, ko, _), (v, _) in rows.items() if (kw, kd, ko) == (w, d, o)]
        return [(sum(vs) if vs else None, len(vs))]
    if idx == 1:
        d, w = params
        return sorted([(n, v, note) for (kw, kd, _, n), (v, note) in rows.items() if (kw, kd) == (w, d)], key=repr)
    if idx == 2:
        (o,) = params
        vs = [v for (_, _, ko, _), (v, _) in rows.items() if ko == o]
        return [(len(vs), sum(vs) if vs else None)]
    return None


@pytest.mark.parametrize("seed", range(1, 1 + int(os.environ.get("TIQUE_ATTACK_SEEDS", "4"))))
def test_random_programs_agree_with_and_without_the_choice(
    table: tuple[str, str, str], switch: Switch, seed: int
) -> None:
    """A reader writes group w = 1 (inserts, deletes, updates of v or note, key moves within w = 1), a writer
    commits into w = 2, the checkpointer runs now and then; every read runs both ways and against the model."""
    url, name, other = table
    rng = random.Random(seed)
    reader, writer = tique.connect(url), tique.connect(url)
    ckpt = Checkpointer(open_engine(url).connect())
    base = {(w, d, o, n): (10, "x") for w in W for d in D for o in OS for n in N}
    committed = dict(base)
    view: dict[tuple[int, ...], tuple[int, str]] | None = None
    written: set[tuple[int, ...]] = set()
    rcur, wcur = reader.cursor(), writer.cursor()
    try:
        for step in range(int(os.environ.get("TIQUE_ATTACK_STEPS", "70"))):
            roll = rng.random()
            if roll >= 0.2 and view is None:  # the reader's next statement begins its snapshot
                view, written = dict(committed), set()
            if roll < 0.12:  # the writer commits into w = 2 (after the reader's snapshot began)
                key = (2, rng.choice(D), rng.choice(OS), rng.choice((*N, 7, 8)))
                if key in committed and rng.random() < 0.5:
                    wcur.execute(f"DELETE FROM {name} WHERE w = %s AND d = %s AND o = %s AND n = %s", key)
                    del committed[key]
                elif key in committed:
                    wcur.execute(f"UPDATE {name} SET v = v + 3 WHERE w = %s AND d = %s AND o = %s AND n = %s", key)
                    committed[key] = (committed[key][0] + 3, committed[key][1])
                else:
                    wcur.execute(f"INSERT INTO {name} (w, d, o, n, v, note) VALUES (%s, %s, %s, %s, 5, 'w')", key)
                    committed[key] = (5, "w")
                writer.commit()
            elif roll < 0.2:
                ckpt.run_once()
            elif roll < 0.45:  # the reader's own write into w = 1
                d, o, n = rng.choice(D), rng.choice(OS), rng.choice((*N, 7))
                key = (1, d, o, n)
                kind = rng.random()
                written.update(k for k in view if k[:3] == key[:3])
                written.add(key)
                if key not in view:
                    rcur.execute(f"INSERT INTO {name} (w, d, o, n, v, note) VALUES (%s, %s, %s, %s, 1, 'r')", key)
                    view[key] = (1, "r")
                elif kind < 0.25:
                    rcur.execute(f"DELETE FROM {name} WHERE w = %s AND d = %s AND o = %s AND n = %s", key)
                    del view[key]
                elif kind < 0.5:
                    rcur.execute(f"UPDATE {name} SET note = 'u' WHERE w = %s AND d = %s AND o = %s", key[:3])
                    for k in [k for k in view if k[:3] == key[:3]]:
                        view[k] = (view[k][0], "u")
                elif kind < 0.75:
                    rcur.execute(f"UPDATE {name} SET v = v + 1 WHERE w = %s AND d = %s AND o = %s AND n = %s", key)
                    view[key] = (view[key][0] + 1, view[key][1])
                else:  # the key moves to another group of w = 1
                    dest = (1, rng.choice(D), rng.choice(OS), 9 + step % 110)
                    if dest in view:
                        continue
                    rcur.execute(
                        f"UPDATE {name} SET d = %s, o = %s, n = %s WHERE w = %s AND d = %s AND o = %s AND n = %s",
                        (*dest[1:], *key),
                    )
                    view[dest] = view.pop(key)
                    written.add(dest)
            elif roll < 0.9:
                idx = rng.randrange(len(READS))
                sql, gen = READS[idx]
                params = gen(rng)
                got = both(reader, switch, sql.format(t=name, u=other), params)
                expected = _model_answer(idx, view, params)
                if expected is not None:
                    assert got == expected, f"step {step}: {sql} {params}: {got} != model {expected}"
            elif rng.random() < 0.7:
                reader.commit()
                assert view is not None
                for k in written:  # the reader's own writes (the writer's later commits stay)
                    if k in view:
                        committed[k] = view[k]
                    else:
                        committed.pop(k, None)
                view = None
            else:
                reader.rollback()
                view = None
        reader.rollback()
        assert switch.stored > 0
    finally:
        ckpt.conn.close()
        reader.close()
        writer.close()


def test_pinned_updates_and_deletes_match_the_model(table: tuple[str, str, str], switch: Switch) -> None:
    """UPDATE / DELETE by part of the key, with Storage alone where the group has no Cache row: the rows they
    change are the model's, after own pending writes in and out of the group."""
    url, name, _ = table
    conn = tique.connect(url)
    cur = conn.cursor()
    try:
        cur.execute(f"INSERT INTO {name} (w, d, o, n, v, note) VALUES (1, 1, 1, 9, 100, 'i')")
        cur.execute(f"UPDATE {name} SET v = v * 2 WHERE w = %s AND d = %s AND o = %s", (1, 1, 1))
        assert cur.rowcount == len(N) + 1
        cur.execute(f"DELETE FROM {name} WHERE w = %s AND d = %s AND o = %s AND n = %s", (1, 1, 2, 1))
        cur.execute(f"DELETE FROM {name} WHERE w = %s AND d = %s AND o = %s", (1, 1, 2))
        assert cur.rowcount == len(N) - 1
        cur.execute(f"UPDATE {name} SET o = %s WHERE w = %s AND d = %s AND o = %s", (2, 1, 1, 3))
        assert cur.rowcount == len(N)
        cur.execute(f"UPDATE {name} SET v = v + 1 WHERE w = %s AND d = %s AND o = %s", (1, 1, 2))
        assert cur.rowcount == len(N)
        got = both(conn, switch, f"SELECT o, n, v FROM {name} WHERE w = %s AND d = %s", (1, 1))
        expected = [(1, n, 20) for n in N] + [(1, 9, 200)] + [(2, n, 11) for n in N]
        assert got == sorted(expected, key=repr)
        conn.commit()
        got = both(conn, switch, f"SELECT o, n, v FROM {name} WHERE w = %s AND d = %s", (1, 1))
        assert got == sorted(expected, key=repr)
        conn.rollback()
        assert switch.stored > 0
    finally:
        conn.close()


def test_a_failed_duplicate_insert_then_pinned_reads(table: tuple[str, str, str], switch: Switch) -> None:
    url, name, _ = table
    conn = tique.connect(url, on_statement_error="continue")
    cur = conn.cursor()
    try:
        cur.execute(f"INSERT INTO {name} (w, d, o, n, v, note) VALUES (1, 2, 3, 8, 7, 'a')")
        with pytest.raises(tique.IntegrityError):
            cur.execute(f"INSERT INTO {name} (w, d, o, n, v, note) VALUES (1, 2, 2, 7, 1, 'b'), (1, 2, 2, 1, 1, 'b')")
        assert both(
            conn, switch, f"SELECT COUNT(*), SUM(v) FROM {name} WHERE w = %s AND d = %s AND o = %s", (1, 2, 2)
        ) == [(len(N), 10 * len(N))]
        assert both(
            conn, switch, f"SELECT COUNT(*), SUM(v) FROM {name} WHERE w = %s AND d = %s AND o = %s", (1, 2, 3)
        ) == [(len(N) + 1, 10 * len(N) + 7)]
        with pytest.raises(tique.IntegrityError):
            cur.execute(f"UPDATE {name} SET n = 1 WHERE w = %s AND d = %s AND o = %s AND n = %s", (1, 2, 3, 8))
        assert both(conn, switch, f"SELECT n FROM {name} WHERE w = %s AND o = %s AND d = %s", (1, 3, 2)) == sorted(
            [(n,) for n in (*N, 8)], key=repr
        )
        conn.commit()
    finally:
        conn.close()


def test_autocommit_pinned_reads_and_writes(table: tuple[str, str, str], switch: Switch) -> None:
    url, name, _ = table
    conn = tique.connect(url, autocommit=True)
    other = tique.connect(url)
    try:
        assert both(conn, switch, f"SELECT SUM(v) FROM {name} WHERE w = %s AND d = %s AND o = %s", (2, 2, 2)) == [
            (10 * len(N),)
        ]
        other.cursor().execute(f"UPDATE {name} SET v = 0 WHERE w = 2 AND d = 2 AND o = 2 AND n = 1")
        other.commit()
        assert both(conn, switch, f"SELECT SUM(v) FROM {name} WHERE w = %s AND d = %s AND o = %s", (2, 2, 2)) == [
            (10 * (len(N) - 1),)
        ]
        cur = conn.cursor()
        cur.execute(f"DELETE FROM {name} WHERE w = %s AND d = %s AND o = %s AND v > %s", (2, 2, 2, 5))
        assert cur.rowcount == len(N) - 1
        assert both(conn, switch, f"SELECT n, v FROM {name} WHERE w = %s AND d = %s AND o = %s", (2, 2, 2)) == [(1, 0)]
    finally:
        conn.close()
        other.close()


@pytest.mark.parametrize("key_type", ["TINYINT", "SMALLINT", "INT", "BIGINT"])
def test_parameter_values_of_every_kind_on_every_integer_key_type(
    embedded_url: str, unique_name: Callable[[str], str], switch: Switch, key_type: str
) -> None:
    """A committed Cache row in group (1, 1); reads pinning the first key column to odd values: the answer (or
    the error) is the one read with every Cache branch."""
    name = unique_name("apk")
    conn = tique.connect(embedded_url)
    cur = conn.cursor()
    try:
        cur.execute(f"CREATE TABLE {name} (b {key_type}, v INT, a {key_type}, PRIMARY KEY (a, b))")
        conn.bulk_load(name, [(b, 10, a) for a in (-1, 0, 1, 100) for b in (1, 2)])
        cur.execute(f"UPDATE {name} SET v = 99 WHERE a = 1 AND b = 1")
        cur.execute(f"UPDATE {name} SET v = 98 WHERE a = -1 AND b = 2")
        cur.execute(f"UPDATE {name} SET v = 97 WHERE a = 0 AND b = 1")
        conn.commit()
        values = [
            1,
            -1,
            0,
            True,
            False,
            1.0,
            -0.0,
            0.0,
            Decimal("1"),
            Decimal("1.0"),
            Decimal("-0"),
            "1",
            "01",
            " 1",
            2**7,
            2**8 + 1,
            2**15 + 1,
            2**16 + 1,
            2**31 + 1,
            2**32 + 1,
            2**63 + 1,
            2**64 + 1,
            -(2**127) + 1,
            2**127 - 1,
            None,
            100,
        ]
        for given in values:
            both(conn, switch, f"SELECT b, v FROM {name} WHERE a = %s", (given,))
            conn.rollback()
            both(conn, switch, f"SELECT SUM(v) FROM {name} WHERE b = %s AND a = %s", (1, given))
            conn.rollback()
            both(conn, switch, f"SELECT a, v FROM {name} WHERE b = %s", (given,))
            conn.rollback()
    finally:
        conn.close()


def test_ddl_in_another_connection_between_pinned_reads(table: tuple[str, str, str], switch: Switch) -> None:
    url, name, _ = table
    reader, other = tique.connect(url), tique.connect(url)
    ocur = other.cursor()
    sql = f"SELECT n, v FROM {name} WHERE w = %s AND d = %s AND o = %s"
    try:
        both(reader, switch, sql, (1, 1, 1))
        reader.rollback()
        ocur.execute(f"UPDATE {name} SET v = 50 WHERE w = 1 AND d = 1 AND o = 1 AND n = 2")
        other.commit()
        ocur.execute(f"ALTER TABLE {name} ADD COLUMN extra INT DEFAULT 4")
        other.commit()
        assert both(reader, switch, sql, (1, 1, 1)) == [(1, 10), (2, 50), (3, 10)]
        assert both(reader, switch, f"SELECT SUM(extra) FROM {name} WHERE w = %s AND d = %s", (1, 1)) == [
            (4 * len(OS) * len(N),)
        ]
        reader.rollback()
        ocur.execute(f"ALTER TABLE {name} DROP COLUMN note")
        other.commit()
        ocur.execute(f"UPDATE {name} SET v = 51 WHERE w = 1 AND d = 1 AND o = 1 AND n = 3")
        other.commit()
        assert both(reader, switch, sql, (1, 1, 1)) == [(1, 10), (2, 50), (3, 51)]
        reader.rollback()
        ocur.execute(f"ALTER TABLE {name} RENAME COLUMN v TO vv")
        other.commit()
        ocur.execute(f"UPDATE {name} SET vv = 52 WHERE w = 1 AND d = 1 AND o = 1 AND n = 1")
        other.commit()
        assert both(reader, switch, f"SELECT n, vv FROM {name} WHERE w = %s AND d = %s AND o = %s", (1, 1, 1)) == [
            (1, 52),
            (2, 50),
            (3, 51),
        ]
        reader.rollback()
        ocur.execute(f"ALTER TABLE {name} RENAME TO {name}_r")
        other.commit()
        assert both(reader, switch, f"SELECT n, vv FROM {name}_r WHERE w = %s AND d = %s AND o = %s", (1, 1, 1)) == [
            (1, 52),
            (2, 50),
            (3, 51),
        ]
        reader.rollback()
        ocur.execute(f"DROP TABLE {name}_r")
        other.commit()
        ocur.execute(f"CREATE TABLE {name}_r (w INT, d INT, o INT, n INT, vv INT, PRIMARY KEY (o, d, w, n))")
        other.commit()
        ocur.execute(f"INSERT INTO {name}_r VALUES (1, 1, 1, 1, 77)")
        other.commit()
        assert both(reader, switch, f"SELECT n, vv FROM {name}_r WHERE w = %s AND d = %s AND o = %s", (1, 1, 1)) == [
            (1, 77)
        ]
        reader.rollback()
    finally:
        reader.close()
        other.close()


def test_a_view_and_a_pinned_read_of_it(table: tuple[str, str, str], switch: Switch) -> None:
    url, name, _ = table
    conn, other = tique.connect(url), tique.connect(url)
    cur = conn.cursor()
    try:
        cur.execute(f"CREATE VIEW {name}_v AS SELECT w, d, o, n, v FROM {name} WHERE v > 0")
        conn.commit()
        other.cursor().execute(f"UPDATE {name} SET v = 0 WHERE w = 2 AND d = 1 AND o = 3 AND n = 2")
        other.commit()
        assert both(conn, switch, f"SELECT COUNT(*) FROM {name}_v WHERE w = %s AND d = %s AND o = %s", (2, 1, 3)) == [
            (len(N) - 1,)
        ]
        cur.execute(f"DELETE FROM {name} WHERE w = %s AND d = %s AND o = %s AND n = %s", (2, 1, 3, 3))
        assert both(conn, switch, f"SELECT COUNT(*) FROM {name}_v WHERE w = %s AND d = %s AND o = %s", (2, 1, 3)) == [
            (len(N) - 2,)
        ]
        conn.rollback()
        cur.execute(f"DROP VIEW {name}_v")
        conn.commit()
    finally:
        conn.close()
        other.close()


# ---- writers, readers and the checkpointer together ----------------------------------------------------------


def test_key_moves_between_groups_readers_and_the_checkpointer(tmp_path: Any) -> None:
    """Writers move lines between orders of one district (a key-changing UPDATE of o and n) and amounts between
    lines; readers sum each order (three key columns pinned), a district (two), and the district's orders summed
    in one transaction must equal the district's total; each read is also compared, in the same transaction, with
    the read keeping every Cache branch. The checkpointer loops. In a process and database of its own."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    url = f"monetdbe://{tmp_path / 'db'}"
    seconds = sized(8.0, 15.0)
    code = (
        f"import json, tests.adversarial.test_attack_pinned_reads as t; print(json.dumps(t.stress({url!r}, {seconds})))"
    )
    root = Path(__file__).resolve().parent.parent.parent
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=root)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert not result["errors"], result["errors"][:5]
    assert result["stored"] >= 5 and result["reads"] >= 50, result


def stress(url: str, seconds: float = 15) -> dict[str, Any]:
    import threading
    import time

    local = threading.local()

    def patched(txn: Any, *args: Any, **kwargs: Any) -> frozenset[str]:
        if getattr(local, "off", False):
            return frozenset()
        got = _ORIGINAL(txn, *args, **kwargs)
        local.stored = getattr(local, "stored", 0) + bool(got)
        return got

    tique.transaction.Transaction.storage_only = patched  # type: ignore[method-assign]
    name = "sp"
    conn = tique.connect(url)
    conn.cursor().execute(DDL.format(t=name))
    conn.bulk_load(name, [_row(w, d, o, n, 10, "x") for w in W for d in D for o in OS for n in N])
    conn.close()
    total = len(OS) * len(N) * 10
    stop, writing = threading.Event(), threading.Event()
    errors: list[str] = []
    counts = {"stored": 0, "reads": 0}
    serial = iter(range(10, 10**9))
    lock = threading.Lock()

    def writer(seed: int) -> None:
        rng = random.Random(seed)
        c = tique.connect(url)
        cur = c.cursor()
        try:
            while not stop.is_set():
                if not writing.wait(0.05):
                    cur.execute("SELECT 1")
                    c.rollback()
                    continue
                w, d = rng.choice(W), rng.choice(D)
                try:
                    cur.execute(f"SELECT o, n, v FROM {name} WHERE w = %s AND d = %s", (w, d))
                    rows = cur.fetchall()
                    (o1, n1, _v1), (o2, n2, _) = rng.sample(rows, 2)
                    if rng.random() < 0.5:
                        amount = rng.randint(1, 5)
                        cur.execute(
                            f"UPDATE {name} SET v = v - %s WHERE w = %s AND d = %s AND o = %s AND n = %s",
                            (amount, w, d, o1, n1),
                        )
                        cur.execute(
                            f"UPDATE {name} SET v = v + %s WHERE w = %s AND d = %s AND o = %s AND n = %s",
                            (amount, w, d, o2, n2),
                        )
                    else:  # a line moves to another order of the district (a new n there)
                        with lock:
                            fresh = next(serial) % 120 + 5
                        cur.execute(
                            f"UPDATE {name} SET o = %s, n = %s WHERE w = %s AND d = %s AND o = %s AND n = %s",
                            (rng.choice(OS), fresh, w, d, o1, n1),
                        )
                    c.commit()
                except tique.DatabaseError:
                    c.rollback()
        except Exception as exc:  # pragma: no cover - reported
            errors.append(f"writer: {exc!r}")
        finally:
            c.close()

    def reader() -> None:
        c = tique.connect(url)
        cur = c.cursor()

        def once(sql: str, params: tuple[Any, ...], off: bool) -> tuple[list[Any], int]:
            local.off, before = off, getattr(local, "stored", 0)
            try:
                cur.execute(sql, params)
                return sorted(cur.fetchall(), key=repr), getattr(local, "stored", 0) - before
            finally:
                local.off = False

        def read(sql: str, params: tuple[Any, ...]) -> Any:
            (on, stored), (off, _) = once(sql, params, False), once(sql, params, True)
            if on != off:
                errors.append(f"{sql} {params}: {on} with the choice (Storage alone: {stored}), {off} without; "
                              + diagnosis(sql, params))  # fmt: skip
            counts["reads"] += 1
            return on

        def diagnosis(sql: str, params: tuple[Any, ...]) -> str:
            """Which read was wrong (seen once in CI, never again: issue 14's notes): each read again, the group
            as its Storage and Cache rows say the snapshot has it, and whether the key set holds the group."""
            again = [once(sql, params, off)[0] for off in (False, True, False, True)]
            txn, raw = c._txn, c._raw
            info = c.db.catalog.named(f"sys.{name}")
            pinned = dict(zip(re.findall(r"(\w+) = %s", sql), params))
            group = " AND ".join(f"{k} = {int(v)}" for k, v in pinned.items())
            stored = raw.execute(f"SELECT w, d, o, n, v FROM {info.storage} WHERE {group}").rows
            cached = raw.execute(
                f"SELECT c.w, c.d, c.o, c.n, c.v, c.tq_deleted, o.cts, c.tq_seq FROM {info.cache} AS c JOIN "
                f"tique.outcomes AS o ON o.txid = c.tq_txid WHERE o.ok AND o.cts <= {txn.sts} AND {group}"
            ).rows
            view = {tuple(r[:4]): r[4] for r in stored}
            for r in sorted(cached, key=lambda r: (r[6], r[7])):
                if r[5]:
                    view.pop(tuple(r[:4]), None)
                else:
                    view[tuple(r[:4])] = r[4]
            built = c.db.cache_keys._keys.get(info.cache) if c.db.cache_keys else None
            prefix = tuple(pinned[k] for k in ("w", "d", "o") if k in pinned)
            held = built is not None and any(k[: len(prefix)] == prefix for k in built[1].keys)
            return (
                f"read again (on, off, on, off): {again}; snapshot {txn.sts}: Storage {sorted(stored)}, visible "
                f"Cache {sorted(cached)}, so SUM {sum(view.values())}; key set holds the group: {held}"
            )

        try:
            while not stop.is_set() and not errors:
                for w in W:
                    for d in D:
                        orders = sum(
                            int(
                                read(f"SELECT SUM(v) FROM {name} WHERE w = %s AND d = %s AND o = %s", (w, d, o))[0][0]
                                or 0
                            )
                            for o in OS
                        )
                        district = read(f"SELECT SUM(v) FROM {name} WHERE d = %s AND w = %s", (d, w))[0][0]
                        if orders != total or district != total:
                            errors.append(f"district {(w, d)}: orders sum to {orders}, the district to {district}")
                        c.rollback()
            counts["stored"] += getattr(local, "stored", 0)
        except Exception as exc:  # pragma: no cover - reported
            errors.append(f"reader: {exc!r}")
        finally:
            c.close()

    from tique.engine import open_engine as _open

    ckpt = Checkpointer(_open(url).connect())

    def checkpointing() -> None:
        try:
            while not stop.is_set():
                report = ckpt.run_once()
                if report.errors:
                    errors.append(f"checkpointer: {report.errors}")
                time.sleep(0.03)
        except Exception as exc:  # pragma: no cover - reported
            errors.append(f"checkpointer: {exc!r}")

    threads = [threading.Thread(target=writer, args=(s,)) for s in (1, 2)]
    threads += [threading.Thread(target=reader) for _ in range(2)] + [threading.Thread(target=checkpointing)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not errors:
        writing.set()
        time.sleep(0.4)
        writing.clear()
        time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join(60)
    ckpt.conn.close()
    return {"errors": errors, **counts}


@pytest.mark.parametrize("key", ["k VARCHAR(8) PRIMARY KEY, v INT", "k VARCHAR(8), j INT, v INT, PRIMARY KEY (k, j)"])
def test_updates_of_a_held_row_of_a_table_with_no_key_set_send_nothing_more(
    embedded_url: str, unique_name: Callable[[str], str], switch: Switch, key: str
) -> None:
    """A table whose key is not all integers has no key set (cache_keys.eligible): the choice can never read its
    Storage alone, so it must not change what a statement sends. An UPDATE by the whole key of a row the
    transaction holds is computed in the client; asking storage_only first must not send the pending writes."""
    name = unique_name("apv")
    conn = tique.connect(embedded_url)
    cur = conn.cursor()
    sent: list[str] = []
    try:
        cur.execute(f"CREATE TABLE {name} ({key})")
        conn.commit()
        whole = "k = %s" + (" AND j = %s" if "j INT" in key else "")
        params = ("a", 1) if "j INT" in key else ("a",)
        conn.bulk_load(name, [("a", 1, 0) if "j INT" in key else ("a", 0)])

        def run(on: bool) -> int:
            switch.on = on
            cur.execute(f"SELECT * FROM {name} WHERE {whole}", params)  # the row held whole
            cur.fetchall()
            for _ in range(3):
                cur.execute(f"UPDATE {name} SET v = v + 1 WHERE {whole}", params)
            before = len(sent)
            for _ in range(3):
                cur.execute(f"UPDATE {name} SET v = v + 1 WHERE {whole}", params)
            n = len(sent) - before
            conn.rollback()
            return n

        conn.statement_hooks.append(lambda sql, _s, _e: sent.append(sql))
        run(False)  # plans and prepared statements made
        off, on = run(False), run(True)
        assert on == off, (
            f"three UPDATEs of a held row sent {on} statements with the choice on, {off} with it off: "
            "storage_only flushes pending writes of a table it can never read alone"
        )
    finally:
        conn.close()


WRITES = [
    ("UPDATE {t} SET v = v + 1 WHERE w = %s AND d = %s AND o = %s", lambda r: _g(r)),
    ("UPDATE {t} SET v = v * 2 WHERE o = %s AND w = %s", lambda r: (r.choice(OS), r.choice(W))),
    ("DELETE FROM {t} WHERE w = %s AND d = %s AND o = %s AND v > %s", lambda r: (*_g(r), r.choice([5, 10, 20]))),
    (
        "UPDATE {t} SET v = {u}.x FROM {u} WHERE {t}.n = {u}.k AND {t}.w = %s AND {t}.d = %s AND {t}.o = %s",
        lambda r: _g(r),
    ),
    (
        "UPDATE {t} SET note = 'f' WHERE w = %s AND d = %s AND o = %s AND n IN (SELECT k FROM {u} WHERE x < %s)",
        lambda r: (*_g(r), r.choice([2, 3])),
    ),
    (
        "DELETE FROM {t} WHERE w = %s AND d = %s AND o = %s AND v >= (SELECT MAX(v) FROM {t} WHERE w = %s)",
        lambda r: (*_g(r), r.choice(W)),
    ),
    ("INSERT INTO {t} (w, d, o, n, v, note) VALUES (%s, %s, %s, %s, 3, 'i')", lambda r: (*_g(r), r.randint(20, 90))),
    (
        "UPDATE {t} SET o = %s, n = n + %s WHERE w = %s AND d = %s AND o = %s",
        lambda r: (r.choice(OS), r.randint(20, 90), *_g(r)),
    ),
    ("UPDATE {u} SET x = x + 1 WHERE k = %s", lambda r: (r.choice(N),)),
    ("DELETE FROM {t} WHERE d = %s AND n = %s", lambda r: (r.choice(D), r.choice(N))),
]


@pytest.mark.parametrize("seed", range(1, 1 + int(os.environ.get("TIQUE_ATTACK_SEEDS", "4"))))
def test_write_programs_end_the_same_with_and_without_the_choice(
    embedded_url: str, unique_name: Callable[[str], str], switch: Switch, seed: int
) -> None:
    """The same random program of pinned writes (and reads) on two copies of the tables, once with the choice
    and once without: every statement's outcome and the committed rows must be the same."""

    def program(on: bool) -> tuple[list[Any], list[Any]]:
        rng = random.Random(seed)
        name, other = unique_name("apw"), unique_name("apx")
        conn = tique.connect(embedded_url)
        cur = conn.cursor()
        ckpt = Checkpointer(open_engine(embedded_url).connect())
        cur.execute(DDL.format(t=name))
        cur.execute(f"CREATE TABLE {other} (k INT PRIMARY KEY, x INT)")
        conn.bulk_load(name, [_row(w, d, o, n, 10 + n, "x") for w in W for d in D for o in OS for n in N])
        conn.bulk_load(other, [(k, k) for k in N])
        switch.on = on
        outcomes: list[Any] = []
        try:
            for _ in range(60):
                roll = rng.random()
                if roll < 0.55:
                    sql, gen = rng.choice(WRITES)
                    params = gen(rng)
                    try:
                        cur.execute(sql.format(t=name, u=other), params)
                        outcomes.append(cur.rowcount)
                    except tique.Error as exc:
                        outcomes.append(type(exc).__name__)
                        if not conn.in_transaction or isinstance(exc, tique.InterfaceError):
                            conn.rollback()
                elif roll < 0.8:
                    sql, gen = rng.choice(READS)
                    cur.execute(sql.format(t=name, u=other), gen(rng))
                    outcomes.append(sorted(cur.fetchall(), key=repr))
                elif roll < 0.9:
                    try:
                        conn.commit()
                        outcomes.append("commit")
                    except tique.Error as exc:
                        outcomes.append(type(exc).__name__)
                elif roll < 0.95:
                    conn.rollback()
                else:
                    ckpt.run_once()
            conn.commit()
            switch.on = True
            cur.execute(f"SELECT w, d, o, n, v, note FROM {name}")
            final = sorted(cur.fetchall())
            conn.rollback()
            return outcomes, final
        finally:
            switch.on = True
            ckpt.conn.close()
            conn.close()

    on_outcomes, on_final = program(True)
    stored = switch.stored
    off_outcomes, off_final = program(False)
    for i, (a, b) in enumerate(zip(on_outcomes, off_outcomes)):
        assert a == b, f"statement {i}: {a!r} with the choice, {b!r} without"
    assert on_final == off_final
    assert stored > 0
