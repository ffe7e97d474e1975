"""Run generated cases against tique tables and their plain MonetDB twins; report every disagreement.

One case = one schema: rows committed and checkpointed, rows committed but still in the Cache, and the open
transaction's own inserts, updates and deletes, mirrored row for row on plain twins (``-- tique: plain``) through
a raw connection. Queries run in the open transaction on tique's tables and on the twins; the Ternary Logic
Partitioning oracle runs on tique's tables alone. Finally a random DML sequence is applied in one tique
transaction and in one native transaction on the twins, both committed, and the tables compared.
"""

from __future__ import annotations

import datetime
import decimal
import itertools
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import tique
from tests.differential.generator import Queries, Schema, insert, make_schema
from tique.checkpoint import Checkpointer
from tique.database import Database
from tique.engine.base import RawConnection

_case_numbers = itertools.count()


@dataclass
class Failure:
    kind: str  # differential | tlp | dml | error
    sql: str
    detail: str
    seed: int = 0
    step: int = 0  # the query number in its case (replay: Case(url, seed, Stats()).run(step + 1, stop=True))


@dataclass
class Stats:
    cases: int = 0
    queries: int = 0
    both_failed: int = 0
    moved: int = 0
    engine_tlp: int = 0  # TLP violations of MonetDB itself on the plain twins (not tique's)
    engine_tlp_examples: list[str] = field(default_factory=list)
    # MonetDB answering wrongly over its own constraints on the plain twins (11.41 plans a LEFT or FULL JOIN along
    # a FOREIGN KEY's join index and drops the NULL-extended rows): a constraint-free copy of the same rows agrees
    # with tique. tique declares no constraint to MonetDB on its own tables, so it is not affected.
    engine_constraint: int = 0
    engine_constraint_examples: list[str] = field(default_factory=list)
    shapes: Counter[str] = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)


def normalize(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, decimal.Decimal):
        return decimal.Decimal(value).normalize()
    if isinstance(value, (datetime.datetime, datetime.date, str, int, bool)) or value is None:
        return value
    return str(value)


def rows_of(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [tuple(normalize(v) for v in row) for row in rows]


def as_multiset(rows: list[tuple[Any, ...]]) -> Counter[tuple[Any, ...]]:
    return Counter(rows_of(rows))


class Case:
    def __init__(self, url: str, seed: int, stats: Stats) -> None:
        self.url = url
        self.rng = random.Random(seed)
        self.seed, self.step = seed, -1
        self.stats = stats
        self.tag = f"d{next(_case_numbers)}_{seed}"
        self.schema: Schema = make_schema(self.rng)
        self.gen = Queries(self.rng, self.schema)
        self.raw: RawConnection = Database.get(url).connect_raw()
        self.conn = tique.connect(url, on_statement_error="continue")  # the twins go on after an error too
        self.cur = self.conn.cursor()

    def names(self, plain: bool) -> dict[str, str]:
        return {t.name: f"{'p' if plain else 't'}{t.name[1:]}_{self.tag}" for t in self.schema.tables}

    def both(self, sql: str) -> str:
        return sql.format(**self.names(False))

    def twin(self, sql: str) -> str:
        return sql.format(**self.names(True))

    def close(self) -> None:
        if not self.conn.closed:
            self.conn.rollback()
            self.conn.close()
        self.raw.close()

    # ---- writes mirrored on both sides ------------------------------------------------------------------------

    def write(self, sql: str) -> bool:
        """Run ``sql`` in the tique transaction and on the twins; both must succeed or both fail. True if it ran."""
        error_t = error_p = None
        try:
            self.cur.execute(self.both(sql))
        except tique.Error as exc:
            error_t = exc
        try:
            self.raw.execute(self.twin(sql))
        except tique.Error as exc:
            error_p = exc
        if (error_t is None) != (error_p is None):
            self.fail("dml", sql, f"tique: {error_t!r}; MonetDB: {error_p!r}")
        if isinstance(error_t, tique.IntegrityError) and error_p is not None:
            self.stats.shapes["constraint_refused"] += 1  # a key, UNIQUE or FOREIGN KEY both refused
        return error_t is None and error_p is None

    def fail(self, kind: str, sql: str, detail: str) -> None:
        self.stats.failures.append(Failure(kind, sql, detail[:2000], self.seed, self.step))

    def setup(self) -> None:
        for table in self.schema.tables:
            self.cur.execute(table.create(self.names(False)[table.name], plain=False, names=self.names(False)))
            self.raw.execute(table.create(self.names(True)[table.name], plain=True, names=self.names(True)))
        self.conn.commit()
        for table in self.schema.tables:  # stable rows: committed, then checkpointed
            for _ in range(self.rng.randint(3, 8)):
                self.write(insert(self.rng, self.schema, table, 1))
        self.conn.commit()
        self.stats.moved += Checkpointer(self.raw).run_once().moved
        for _ in range(6):  # committed rows still in the Cache
            self.write(self.gen.dml())
        self.conn.commit()
        for _ in range(5):  # the open transaction's own writes
            self.write(self.gen.dml())

    # ---- queries ----------------------------------------------------------------------------------------------

    def tique_rows(self, sql: str) -> list[tuple[Any, ...]]:
        self.cur.execute(sql)
        return list(self.cur.fetchall())

    def query(self, sql: str, ordered: bool) -> None:
        self.stats.queries += 1
        got = want = None
        error_t = error_p = None
        try:
            got = self.tique_rows(self.both(sql))
        except tique.Error as exc:
            error_t = exc
        try:
            want = self.raw.execute(self.twin(sql)).rows
        except tique.Error as exc:
            error_p = exc
        if error_t is not None and error_p is not None:
            self.stats.both_failed += 1
            return
        if error_t is not None or error_p is not None:
            self.fail("error", sql, f"tique: {error_t!r}; MonetDB: {error_p!r}")
            return
        assert got is not None and want is not None
        same = rows_of(got) == rows_of(want) if ordered else as_multiset(got) == as_multiset(want)
        if not same and self.unconstrained_agrees(sql, got, ordered):
            self.stats.engine_constraint += 1
            self.stats.engine_constraint_examples.append(sql)
        elif not same:
            shown = f"tique {sorted(map(repr, got))[:20]} MonetDB {sorted(map(repr, want))[:20]}"
            self.fail("differential", sql, shown)

    def unconstrained_agrees(self, sql: str, got: list[tuple[Any, ...]], ordered: bool) -> bool:
        """Whether the query on constraint-free copies of the twins' rows answers as tique did (a third oracle, asked
        only when tique and the twins differ)."""
        copies = {t.name: f"u{t.name[1:]}_{self.tag}" for t in self.schema.tables}
        try:
            for t in self.schema.tables:
                self.raw.execute(f"CREATE TABLE {copies[t.name]} AS SELECT * FROM {self.names(True)[t.name]} WITH DATA")
            bare = self.raw.execute(sql.format(**copies)).rows
        except tique.Error:
            return False
        finally:
            for name in copies.values():
                try:
                    self.raw.execute(f"DROP TABLE IF EXISTS {name}")
                except tique.Error:
                    pass
        return rows_of(got) == rows_of(bare) if ordered else as_multiset(got) == as_multiset(bare)

    def tlp(self) -> None:
        """The partitions of a query on p, NOT p and p IS NULL add up to it. The same check runs on the twins:
        where MonetDB itself breaks it (it does, for some subqueries in p), tique must break it the same way."""
        base, parts = self.gen.tlp()
        self.query(base, False)
        self.query(parts, False)
        try:
            whole, union = self.tique_rows(self.both(base)), self.tique_rows(self.both(parts))
            twin_whole, twin_union = self.raw.execute(self.twin(base)).rows, self.raw.execute(self.twin(parts)).rows
        except tique.Error:
            return  # both sides failed alike, or query() recorded it
        if as_multiset(twin_whole) != as_multiset(twin_union):
            self.stats.engine_tlp += 1
            self.stats.engine_tlp_examples.append(parts)
        elif as_multiset(whole) != as_multiset(union):
            self.fail("tlp", parts, f"unfiltered {len(whole)} rows, partitions {len(union)} rows")

    def final_states(self) -> None:
        """Commit the open transaction (the twins have its writes already), then a DML sequence in one tique
        transaction and one native transaction; a statement that fails on both ends both transactions."""
        self.conn.commit()
        self.raw.execute("START TRANSACTION")
        ok = all(self.write(self.gen.dml()) for _ in range(self.rng.randint(2, 6)))
        if ok:
            self.conn.commit()
            self.raw.execute("COMMIT")
        else:
            self.conn.rollback()
            self.raw.execute("ROLLBACK")
        other = tique.connect(self.url)
        try:
            cur = other.cursor()
            for t in self.schema.tables:
                cur.execute(self.both(f"SELECT * FROM {{{t.name}}}"))
                got = list(cur.fetchall())
                want = self.raw.execute(self.twin(f"SELECT * FROM {{{t.name}}}")).rows
                if as_multiset(got) != as_multiset(want):
                    self.fail("dml", f"final state of {t.name}", f"tique {len(got)} rows, MonetDB {len(want)} rows")
            other.commit()
        finally:
            other.close()

    def run(self, queries: int, stop: bool = False) -> None:
        """Run the case; ``stop`` leaves it open after the last query (to replay a failure by hand)."""
        self.stats.cases += 1
        try:
            self.setup()
            for n in range(queries):
                self.step = n
                if stop and n == queries - 1:
                    return
                if n % 4 == 3:
                    self.tlp()
                else:
                    self.query(*self.gen.select())
            self.final_states()
        finally:
            self.stats.shapes.update(self.gen.shapes)
            if not stop:
                self.close()


def run(url: str, seeds: range | list[int], queries: int = 20) -> Stats:
    stats = Stats()
    for seed in seeds:
        Case(url, seed, stats).run(queries)
    return stats


def minimal_failures(stats: Stats) -> list[str]:
    return [f"[{f.kind}] {f.sql}\n    {f.detail}" for f in stats.failures]
