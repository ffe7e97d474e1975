"""Random interleavings of transactions checked against a reference model of Snapshot Isolation.

The model: committed state is a map key -> value (None: absent), with the commit time of each key's last
write. A transaction's snapshot is the committed state when it runs its first statement; it reads the snapshot
overlaid with its own writes. At commit, it aborts if another transaction committed a write to one of its
written keys after its snapshot (first committer wins); otherwise its writes become the committed state.
tique must agree with the model on every read, every row count, every duplicate-key error and every
commit or abort, on both adapters.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import tique
from tests.conftest import sized
from tique.errors import IntegrityError, SerializationFailure

KEYS = st.integers(0, 3)
VALUES = st.integers(0, 99)
CONNS = st.integers(0, 2)
_tables = itertools.count()


@dataclass
class ModelTxn:
    start: int
    snapshot: dict[int, int | None]
    writes: dict[int, int | None] = field(default_factory=dict)

    def view(self) -> dict[int, int | None]:
        return {**self.snapshot, **self.writes}


class SnapshotIsolationModel:
    def __init__(self, initial: dict[int, int | None]) -> None:
        self.state = dict(initial)
        self.written_at: dict[int, int] = {}
        self.clock = 0

    def begin(self) -> ModelTxn:
        return ModelTxn(self.clock, dict(self.state))

    def commit(self, txn: ModelTxn) -> bool:
        if not txn.writes:
            return True
        if any(self.written_at.get(k, -1) > txn.start for k in txn.writes):
            return False
        self.clock += 1
        for k, v in txn.writes.items():
            self.state[k] = v
            self.written_at[k] = self.clock
        return True


def make_machine(url: str) -> type[RuleBasedStateMachine]:
    class TiqueAgainstModel(RuleBasedStateMachine):
        @initialize()
        def setup(self) -> None:
            self.table = f"si_model_{next(_tables)}"
            admin = tique.connect(url)
            admin.cursor().execute(f"CREATE TABLE {self.table} (k INT PRIMARY KEY, v INT)")
            admin.cursor().executemany(f"INSERT INTO {self.table} VALUES (%s, 0)", [(k,) for k in range(3)])
            admin.commit()
            admin.close()
            self.model = SnapshotIsolationModel({0: 0, 1: 0, 2: 0, 3: None})
            self.conns = [tique.connect(url, on_statement_error="continue") for _ in range(3)]
            self.reader = tique.connect(url)
            self.txns: list[ModelTxn | None] = [None, None, None]

        def teardown(self) -> None:
            for conn in [*getattr(self, "conns", []), getattr(self, "reader", None)]:
                if conn is not None:
                    conn.close()

        def txn(self, c: int) -> ModelTxn:
            if self.txns[c] is None:
                self.txns[c] = self.model.begin()
            return self.txns[c]  # type: ignore[return-value]

        def run(self, c: int, sql: str, params: tuple[object, ...] = ()) -> tique.Cursor:
            self.txn(c)  # the model's snapshot is taken at the same moment as tique's
            cur = self.conns[c].cursor()
            cur.execute(sql, params)
            return cur

        @rule(c=CONNS, k=KEYS)
        def read(self, c: int, k: int) -> None:
            got = self.run(c, f"SELECT v FROM {self.table} WHERE k = %s", (k,)).fetchall()
            expected = self.txn(c).view()[k]
            assert got == ([] if expected is None else [(expected,)])

        @rule(c=CONNS)
        def scan(self, c: int) -> None:
            got = self.run(c, f"SELECT k, v FROM {self.table} ORDER BY k").fetchall()
            assert got == sorted((k, v) for k, v in self.txn(c).view().items() if v is not None)

        @rule(c=CONNS, k=KEYS, v=VALUES)
        def update(self, c: int, k: int, v: int) -> None:
            cur = self.run(c, f"UPDATE {self.table} SET v = %s WHERE k = %s", (v, k))
            txn = self.txn(c)
            exists = txn.view()[k] is not None
            assert cur.rowcount == (1 if exists else 0)
            if exists:
                txn.writes[k] = v

        @rule(c=CONNS, k=KEYS, v=VALUES)
        def insert(self, c: int, k: int, v: int) -> None:
            txn = self.txn(c)
            if txn.view()[k] is not None:
                with pytest.raises(IntegrityError):
                    self.run(c, f"INSERT INTO {self.table} VALUES (%s, %s)", (k, v))
            else:
                self.run(c, f"INSERT INTO {self.table} VALUES (%s, %s)", (k, v))
                txn.writes[k] = v

        @rule(c=CONNS, k=KEYS)
        def delete(self, c: int, k: int) -> None:
            cur = self.run(c, f"DELETE FROM {self.table} WHERE k = %s", (k,))
            txn = self.txn(c)
            exists = txn.view()[k] is not None
            assert cur.rowcount == (1 if exists else 0)
            if exists:
                txn.writes[k] = None

        @precondition(lambda self: any(t is not None for t in self.txns))
        @rule(c=CONNS)
        def commit(self, c: int) -> None:
            txn = self.txns[c]
            if txn is None:
                return
            self.txns[c] = None
            if self.model.commit(txn):
                self.conns[c].commit()
            else:
                with pytest.raises(SerializationFailure):
                    self.conns[c].commit()

        @rule(c=CONNS)
        def rollback(self, c: int) -> None:
            self.txns[c] = None
            self.conns[c].rollback()

        @invariant()
        def committed_state_matches_a_fresh_reader(self) -> None:
            if not hasattr(self, "model"):
                return
            cur = self.reader.cursor()
            cur.execute(f"SELECT k, v FROM {self.table} ORDER BY k")
            assert cur.fetchall() == sorted((k, v) for k, v in self.model.state.items() if v is not None)
            self.reader.commit()  # the next check reads a fresh snapshot

    return TiqueAgainstModel


@pytest.mark.parametrize("adapter", ["embedded", "server"])
def test_tique_agrees_with_the_snapshot_isolation_model(request: pytest.FixtureRequest, adapter: str) -> None:
    url = request.getfixturevalue("embedded_url") if adapter == "embedded" else request.getfixturevalue("server").url
    machine = make_machine(url)
    machine.TestCase.settings = settings(
        max_examples=sized(15, 40),
        stateful_step_count=30,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        database=None,
    )
    machine.TestCase().runTest()
