"""One soak client process: random transactions through ``tique serve``, each logged before and after COMMIT.

    python -m benchmarks.soak_client URL_FILE LOG CLIENT INCARNATION SEED [SKIPPED_TABLE,...] [NEGATIVE]

A write transaction is logged as ``intent`` (its operations) just before COMMIT, then ``ok`` (commit returned),
``abort`` (SerializationFailure), ``unknown`` (CommitOutcomeUnknown) or ``error`` (anything else: it must not
be applied). A process killed between the two lines leaves the transaction in doubt. Read transactions check
invariants that hold in every snapshot and log ``violation`` lines when one fails. Control lines on stdin:
``pause`` (finish the current transaction, answer ``paused`` on stdout, wait), ``resume``, ``stop``.
"""

from __future__ import annotations

import json
import os
import random
import select
import sys
import time
from typing import Any

import tique
from benchmarks.soak_model import (
    ACCOUNTS,
    COUNTERS,
    KEYED,
    KEYS_PER_CLIENT,
    TABLES,
    TOTAL_BALANCE,
    Row,
    apply,
    columns,
    encode,
    owned_key,
    random_row,
    random_text,
    random_value,
    same_row,
)
from tique.errors import CommitOutcomeUnknown, ProgrammingError, SerializationFailure

KINDS = ["blind", "set", "incr", "transfer", "delete", "multi", "bag", "read", "ddl"]
WEIGHTS = [22, 6, 14, 16, 7, 8, 10, 14, 3]
DDL_BY = 8  # an incarnation that has run no DDL cycle by its 8th operation runs one then
CONNECT_SETTINGS: dict[str, Any] = {"lease_ms": 3000, "snapshot_lease_ms": 15000}
NEGATIVE = {"skip-certification": "unsafe_skip_certification", "read-latest": "unsafe_read_latest"}


class Stop(Exception):
    """The driver asked this client to stop."""


class Client:
    def __init__(self, url_file: str, log_path: str, client: int, incarnation: int, seed: int, skip: set[str]):
        self.url_file = url_file
        self.log = open(log_path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - lives as long as the process
        self.client = client
        self.incarnation = incarnation
        self.rng = random.Random(seed)
        self.tables = [t for t in KEYED if t not in skip]
        self.seq = 0
        self.conn: tique.Connection | None = None
        self._control = b""
        # What this incarnation knows of its own keys: rows known present, keys known absent; others unknown.
        self.known: dict[str, dict[Any, Row]] = {t: {} for t in KEYED}
        self.absent: dict[str, set[Any]] = {t: set() for t in KEYED}
        self.counters_seen = [0] * COUNTERS
        # ops of the last commit if it returned before it was visible (an earlier commit was stuck): the next
        # transaction of this connection waits for it, a new connection's does not (its keys are unknown then)
        self.unseen: list[Any] = []
        self.scratch = f"scratch_c{client}"
        self.ops = 0
        self.ddl_done = False

    # -- log and control ---------------------------------------------------------------------------------
    def record(self, tag: str, **fields: Any) -> None:
        self.log.write(json.dumps({"t": tag, "at": time.time(), **fields}, ensure_ascii=False) + "\n")

    def poll_control(self) -> None:
        """Handle pending control lines; blocks while paused. Only called between transactions."""
        while (line := self._control_line(block=False)) is not None:
            if line == "stop":
                raise Stop
            if line == "pause":
                print("paused", flush=True)
                while (line := self._control_line(block=True)) != "resume":
                    if line == "stop":
                        raise Stop

    def _control_line(self, block: bool) -> str | None:
        """The next line from stdin (read unbuffered, so select() sees everything not yet handled)."""
        while b"\n" not in self._control:
            if not block and not select.select([0], [], [], 0)[0]:
                return None
            chunk = os.read(0, 4096)
            if not chunk:
                raise Stop  # the driver is gone
            self._control += chunk
        line, self._control = self._control.split(b"\n", 1)
        return line.decode().strip()

    # -- connection ------------------------------------------------------------------------------------------
    def connect(self) -> tique.Connection:
        while self.conn is None:
            self.poll_control()
            try:
                with open(self.url_file) as f:
                    self.conn = tique.connect(f.read().strip(), **CONNECT_SETTINGS)
            except Exception:  # the server is down or restarting: wait for it
                time.sleep(0.2)
        return self.conn

    def drop_connection(self) -> None:
        if self.unseen:
            self.forget(self.unseen)
            self.unseen = []
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
        self.conn = None

    # -- the loop ------------------------------------------------------------------------------------------
    def run(self) -> None:
        self.record("start", client=self.client, inc=self.incarnation)
        try:
            while True:
                self.poll_control()
                self.connect()
                kind = self.rng.choices(KINDS, WEIGHTS)[0]
                self.ops += 1
                if self.ops == DDL_BY and not self.ddl_done:
                    kind = "ddl"  # a short run on a busy machine does few operations: DDL in each incarnation
                if kind == "read":
                    self.read_check()
                elif kind == "ddl":
                    self.ddl()
                else:
                    self.write_transaction(kind)
        except Stop:
            self.record("stop")
            self.drop_connection()

    def write_transaction(self, kind: str) -> None:
        conn = self.connect()
        self.seq += 1
        tx = [self.client, self.incarnation, self.seq]
        ops = getattr(self, f"plan_{kind}")()
        priority = kind == "transfer" and self.rng.random() < 0.5
        if priority:  # ops do not depend on reads: conn.run may run them again after a lost conflict
            self.record("intent", tx=tx, kind=kind, ops=encode(ops), priority=True)
            try:
                conn.run(lambda c: self.send(c.cursor(), ops, tx), priority=True)
            except Exception as exc:
                self.settle(tx, ops, exc)
                return
            self.settle(tx, ops, None)
            return
        try:
            self.send(conn.cursor(), ops, tx)
        except Exception as exc:
            self.record("intent", tx=tx, kind=kind, ops=encode(ops), failed_before_commit=True)
            self.rollback_quietly()
            self.settle(tx, ops, exc)
            return
        self.record("intent", tx=tx, kind=kind, ops=encode(ops))
        try:
            conn.commit()
        except Exception as exc:
            self.settle(tx, ops, exc)
            return
        self.settle(tx, ops, None)

    def rollback_quietly(self) -> None:
        try:
            assert self.conn is not None
            self.conn.rollback()
        except Exception:
            self.drop_connection()

    def settle(self, tx: list[int], ops: list[Any], exc: BaseException | None) -> None:
        if exc is None:
            self.record("ok", tx=tx)
            self.learn(ops)
            last = self.conn.last_commit if self.conn is not None else None
            self.unseen = ops if last is not None and not last.visible else []
        elif isinstance(exc, SerializationFailure):
            self.record("abort", tx=tx, err=str(exc)[:300])
        elif isinstance(exc, CommitOutcomeUnknown):
            self.record("unknown", tx=tx, err=str(exc)[:300])
            self.forget(ops)
            self.drop_connection()
        else:
            self.record("error", tx=tx, err=f"{type(exc).__name__}: {str(exc)[:300]}")
            self.forget(ops)  # it must not be applied; if it was (a bug), the checker says so
            self.drop_connection()

    # -- what a transaction writes -------------------------------------------------------------------------
    def own_key(self, table: str) -> Any:
        return owned_key(table, self.client, self.rng.randrange(KEYS_PER_CLIENT))

    def plan_blind(self) -> list[Any]:
        ops = []
        for table in self.rng.sample(self.tables, self.rng.randint(1, min(3, len(self.tables)))):
            key = self.own_key(table)
            ops.append(["put", table, key, list(random_row(self.rng, table, key))])
        return ops

    def plan_set(self) -> list[Any]:
        table = self.rng.choice(self.tables)
        if not self.known[table]:
            return self.plan_blind()
        key = self.rng.choice(sorted(self.known[table], key=repr))
        column = self.rng.randrange(1, len(TABLES[table]))
        return [["set", table, key, column, random_value(self.rng, TABLES[table][column][1])]]

    def plan_incr(self) -> list[Any]:
        ops: list[Any] = [["incr", "ctr", c, 1, 1] for c in self.rng.sample(range(COUNTERS), self.rng.randint(1, 2))]
        if self.rng.random() < 0.5 and "vals" in self.tables:
            ops.append(["incr", "vals", self.own_key("vals"), 2, 1])  # b = b + 1 on an owned row
        return ops

    def plan_transfer(self) -> list[Any]:
        a, b = self.rng.sample(range(ACCOUNTS), 2)
        amount = self.rng.randint(1, 50)
        return [["incr", "acct", a, 1, -amount], ["incr", "acct", b, 1, amount]]

    def plan_delete(self) -> list[Any]:
        return [["del", t, self.own_key(t)] for t in self.rng.sample(self.tables, self.rng.randint(1, 2))]

    def plan_multi(self) -> list[Any]:
        roll = self.rng.random()
        typed = [t for t in ("kdate", "kts", "kdbl") if t in self.tables]
        if roll < 0.4 and "vals" in self.tables:
            return [["incr_range", "vals", *self._sub_range("vals"), 2, 1]]
        if roll < 0.6 and typed:
            table = self.rng.choice(typed)
            return [["del_range", table, *self._sub_range(table)]]
        table = self.rng.choice(self.tables)
        free = sorted(self.absent[table], key=repr)
        if len(free) < 2:
            return self.plan_blind()
        keys = self.rng.sample(free, min(len(free), self.rng.randint(2, 4)))
        return [["insert_many", table, [list(random_row(self.rng, table, k)) for k in keys]]]

    def _sub_range(self, table: str) -> tuple[Any, Any]:
        lo, hi = sorted(self.rng.sample(range(KEYS_PER_CLIENT), 2))
        return owned_key(table, self.client, lo), owned_key(table, self.client, hi)

    def plan_bag(self) -> list[Any]:
        tag = self.rng.randrange(8)
        if self.rng.random() < 0.3:
            return [["bag_del", "bag", self.client, tag]]
        return [["bag_add", "bag", self.client, tag, random_text(self.rng, 20)] for _ in range(self.rng.randint(1, 3))]

    def send(self, cur: tique.Cursor, ops: list[Any], tx: list[int]) -> None:
        """The SQL of the planned operations, then this transaction's journal row."""
        for op in ops:
            for sql, params in self.statements(op):
                cur.execute(sql, params)
        cur.execute("INSERT INTO journal VALUES (%s, %s, %s)", tuple(tx))

    def statements(self, op: list[Any]) -> list[tuple[str, tuple[Any, ...]]]:
        kind, table = op[0], op[1]
        names = columns(table)
        key_sql = f"{names[0]} = %s"
        if kind == "put":
            key, row = op[2], tuple(op[3])
            written_key = -0.0 if table == "kdbl" and key == 0 and self.rng.random() < 0.5 else key
            insert = (f"INSERT INTO {table} VALUES ({', '.join(['%s'] * len(row))})", (written_key, *row[1:]))
            if key in self.known[table]:
                sets = ", ".join(f"{n} = %s" for n in names[1:])
                return [(f"UPDATE {table} SET {sets} WHERE {key_sql}", (*row[1:], written_key))]
            if key in self.absent[table]:
                return [insert]
            return [(f"DELETE FROM {table} WHERE {key_sql}", (written_key,)), insert]  # blind upsert
        if kind == "set":
            return [(f"UPDATE {table} SET {names[op[3]]} = %s WHERE {key_sql}", (op[4], op[2]))]
        if kind == "incr":
            column = names[op[3]]
            return [(f"UPDATE {table} SET {column} = {column} + %s WHERE {key_sql}", (op[4], op[2]))]
        if kind == "del":
            return [(f"DELETE FROM {table} WHERE {key_sql}", (op[2],))]
        between = f"{names[0]} >= %s AND {names[0]} <= %s"
        if kind == "incr_range":
            column = names[op[4]]
            return [(f"UPDATE {table} SET {column} = {column} + %s WHERE {between}", (op[5], op[2], op[3]))]
        if kind == "del_range":
            return [(f"DELETE FROM {table} WHERE {between}", (op[2], op[3]))]
        if kind == "insert_many":
            rows = [tuple(r) for r in op[2]]
            one = f"({', '.join(['%s'] * len(rows[0]))})"
            return [(f"INSERT INTO {table} VALUES {', '.join([one] * len(rows))}", sum(rows, ()))]
        if kind == "bag_add":
            return [("INSERT INTO bag VALUES (%s, %s, %s)", (op[2], op[3], op[4]))]
        if kind == "bag_del":
            return [("DELETE FROM bag WHERE owner = %s AND tag = %s", (op[2], op[3]))]
        raise ValueError(kind)

    # -- what this incarnation knows of its keys -----------------------------------------------------------
    def learn(self, ops: list[Any]) -> None:
        for op in ops:
            kind, table = op[0], op[1]
            if table not in self.known:
                continue
            if kind == "put":
                self._present(table, op[2], tuple(op[3]))
            elif kind == "insert_many":
                for row in op[2]:
                    self._present(table, row[0], tuple(row))
            elif kind == "del":
                self.known[table].pop(op[2], None)
                self.absent[table].add(op[2])
            elif kind == "del_range":
                for j in range(KEYS_PER_CLIENT):
                    key = owned_key(table, self.client, j)
                    if op[2] <= key <= op[3]:
                        self.known[table].pop(key, None)
                        self.absent[table].add(key)
            else:
                apply(self.known, op)

    def _present(self, table: str, key: Any, row: Row) -> None:
        self.known[table][key] = row
        self.absent[table].discard(key)

    def forget(self, ops: list[Any]) -> None:
        for op in ops:
            table = op[1]
            if table not in self.known:
                continue
            if op[0] in ("put", "del", "set", "incr"):
                self.known[table].pop(op[2], None)
                self.absent[table].discard(op[2])
            else:
                self.known[table].clear()
                self.absent[table].clear()

    # -- reads that check invariants -----------------------------------------------------------------------
    def read_check(self) -> None:
        conn = self.connect()
        cur = conn.cursor()
        found: list[dict[str, Any]] = []
        try:
            cur.execute("SELECT SUM(bal) FROM acct")
            total = int(cur.fetchone()[0])
            if total != TOTAL_BALANCE:
                found.append({"kind": "balance sum", "expected": TOTAL_BALANCE, "got": total})
            cur.execute("SELECT id, n FROM ctr ORDER BY id")
            for counter, n in cur.fetchall():
                if n < self.counters_seen[counter]:
                    found.append({"kind": "counter went back", "id": counter, "was": self.counters_seen[counter]})
                self.counters_seen[counter] = max(self.counters_seen[counter], n)
            table = self.rng.choice(self.tables)
            keys = self.rng.sample(range(KEYS_PER_CLIENT), 4)
            for key in (owned_key(table, self.client, j) for j in keys):
                if key not in self.known[table] and key not in self.absent[table]:
                    continue
                cur.execute(f"SELECT * FROM {table} WHERE {columns(table)[0]} = %s", (key,))
                rows = [tuple(r) for r in cur.fetchall()]
                expected = [self.known[table][key]] if key in self.known[table] else []
                if len(rows) != len(expected) or not all(map(same_row, rows, expected)):
                    found.append({"kind": "own row", "table": table, "expected": encode(expected), "got": encode(rows)})
            conn.commit()
        except Exception as exc:
            self.read_failed(exc)
            return
        self.unseen = []  # this transaction's begin waited until the last commit was visible
        self.record("check", violations=found)

    def read_failed(self, exc: BaseException) -> None:
        if isinstance(exc, SerializationFailure):
            self.record("read_abort", err=str(exc)[:300])
            self.rollback_quietly()
        else:
            self.record("read_error", err=f"{type(exc).__name__}: {str(exc)[:300]}")
            self.drop_connection()

    def ddl(self) -> None:
        """Drop and re-create this client's scratch table, fill it, read it back: DDL beside the workload."""
        conn = self.connect()
        cur = conn.cursor()
        rows = [(i, random_text(self.rng, 10), random_value(self.rng, "TIMESTAMP(6)")) for i in range(3)]
        try:
            try:
                cur.execute(f"DROP TABLE {self.scratch}")
            except ProgrammingError as exc:
                if "no such table" not in str(exc):
                    raise
                conn.rollback()  # it did not exist (a previous incarnation died before creating it)
            cur.execute(f"CREATE TABLE {self.scratch} (k INT PRIMARY KEY, s VARCHAR(40), ts TIMESTAMP(6))")
            cur.executemany(f"INSERT INTO {self.scratch} VALUES (%s, %s, %s)", rows)
            conn.commit()
            cur.execute(f"SELECT k, s, ts FROM {self.scratch} ORDER BY k")
            got = [tuple(r) for r in cur.fetchall()]
            conn.commit()
        except Exception as exc:
            self.record("ddl_error", err=f"{type(exc).__name__}: {str(exc)[:300]}")
            self.rollback_quietly()
            self.drop_connection()
            return
        ok = len(got) == len(rows) and all(map(same_row, got, rows))
        found = [] if ok else [{"kind": "scratch table", "expected": encode(rows), "got": encode(got)}]
        self.ddl_done = True
        self.record("ddl", violations=found)


def main(argv: list[str]) -> int:
    url_file, log_path, client, incarnation, seed = argv[:5]
    skip = set(filter(None, (argv[5] if len(argv) > 5 else "").split(",")))
    if len(argv) > 6 and argv[6]:  # NEGATIVE CONTROL only: break isolation on purpose (see soak.py --negative)
        CONNECT_SETTINGS[NEGATIVE[argv[6]]] = True
    Client(url_file, log_path, int(client), int(incarnation), int(seed), skip).run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
