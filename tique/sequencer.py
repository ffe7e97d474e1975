"""Transaction ids, commit timestamps and the commit-order snapshot advance, behind one interface.

Two implementations with the same semantics:

- ``CSequencer``: tique's C module inside the engine (tique/udf/tique_udf.c): atomic counters, pthread condition
  waits, leases. One engine round trip per call, no polling. The default.
- ``SqlSequencer``: SEQUENCEs and an insert-only event log, polled; for a stock MonetDB server that cannot
  load the module. Slower, and each wait costs queries.

A commit with timestamp c goes: ``next_cts`` -> write its record -> ``publish(c)`` (waits until every earlier
timestamp is published, so certification sees all earlier write-sets) -> certify -> ``decide(c)`` -> write the
outcome -> ``advance(c)`` (c becomes visible once every earlier timestamp is settled; waits for that). The C
module also offers ``record_cts``/``publish_own``: the record statement notes whether every earlier timestamp
is published already; if so the owner's next statement (its certification) publishes c without waiting.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from typing import Literal, Protocol

from tique import sqlfiles
from tique.engine.base import RawConnection
from tique.engine.local_calls import LocalCalls
from tique.errors import LeaseExpired, NotSupportedError, OperationalError, Timeout
from tique.prepared import protocol_template, run_template
from tique.rewrite.template import Template
from tique.settings import COMMIT_LEASE_MS

SequencerKind = Literal["c", "sql"]

# Slot states, as the C module numbers them.
FREE, TAKEN, PUBLISHED, DECIDING, DONE, ABANDONED = range(6)


class Sequencer(Protocol):
    kind: SequencerKind
    restricted: bool  # an ordinary user's session: outcomes and advances through tique's procedures (privileges.py)
    advance_fn: str  # the SQL function that advances a timestamp for this session

    def install(self, conn: RawConnection) -> None:
        """Create what the sequencer needs in the database (idempotent)."""
        ...

    def next_txid(self, conn: RawConnection) -> int: ...

    def next_cts(self, conn: RawConnection) -> int: ...

    def sts(self, conn: RawConnection) -> int:
        """The current snapshot timestamp: every commit timestamp <= it is settled and visible."""
        ...

    def publish(self, conn: RawConnection, cts: int, timeout_ms: int) -> None:
        """Mark cts's commit record written, then wait until every smaller timestamp is published too."""
        ...

    def decide(self, conn: RawConnection, cts: int, ok: bool = True) -> None:
        """From here on cts cannot be abandoned; fails with SerializationFailure if it already was. The C module
        keeps the verdict ``ok``, so the outcome of a commit whose client died after this can be written for it."""
        ...

    def advance(self, conn: RawConnection, cts: int, timeout_ms: int) -> int:
        """Mark cts settled and wait (up to timeout_ms; 0 = do not wait) until the snapshot includes it."""
        ...

    def abandon(self, conn: RawConnection, cts: int) -> bool:
        """Settle cts as never committing (recovery, or a helper that found its owner dead)."""
        ...

    def reset(self, conn: RawConnection, txid: int, cts: int) -> None:
        """Recovery: restart the counters after txid and cts, with the snapshot at cts."""
        ...

    def counters(self, conn: RawConnection) -> tuple[int, int]:
        """(last transaction id handed out, last commit timestamp handed out)."""
        ...

    # The commit protocol's steps (tique/commit.py), each one engine statement or more:

    def record_sql(self, txid: int, sts: int, hashes: Sequence[int], tables: Sequence[int] = ()) -> str | None:
        """Step 1 as one statement the caller may send with the transaction's last Cache rows, in one engine
        transaction (Transaction.flush); None when the sequencer writes its record its own way (record).
        ``tables``: the ids of the tables the transaction writes, whose write marks the timestamp raises before
        it can be published (shared_rows.py); a sequencer without marks ignores them."""
        ...

    def record(self, conn: RawConnection, txid: int, sts: int, hashes: Sequence[int]) -> int | None:
        """Step 1: take a commit timestamp and write the commit record with the write-set, all or nothing. The
        timestamp, or None when only the engine knows it yet (the C module hands it out inside the statement)."""
        ...

    def publish_record(self, conn: RawConnection, txid: int, cts: int | None, timeout_ms: int) -> int:
        """Step 2: publish the commit record, then wait until every smaller timestamp is published; its cts."""
        ...

    def decide_and_record(self, conn: RawConnection, txid: int, cts: int, ok: bool) -> None:
        """Step 4: decide (from here the commit cannot be abandoned) and write the outcome ``ok``."""
        ...

    # Steps 2 and 3 in one statement (CSequencer): the certification statement publishes the record itself when
    # every earlier timestamp was published while the record was written (commit.publish_and_certify).
    publishes_in_certification: bool

    def publish_own_sql(self, txid: str) -> str:
        """A SQL expression publishing the commit c of txid (SQL text: a literal or a slot), whose record is
        committed: c when the statement's snapshot holds every earlier record, -c when the owner must
        await_published and certify again."""
        ...

    def await_published(self, conn: RawConnection, cts: int, timeout_ms: int) -> None:
        """After publish_own_sql gave -c: wait until every smaller timestamp is published."""
        ...

    def finish(self, conn: RawConnection, txid: int, cts: int, timeout_ms: int) -> None:
        """Step 5: settle cts, wait (up to timeout_ms; 0: not at all) until it is visible, end txid's pin."""
        ...

    def expire(self, conn: RawConnection, conflicting: Sequence[int]) -> int:
        """Certification met undecided ``conflicting`` commits: abandon those stuck past the lease (their owners
        can then never commit); how many."""
        ...

    def live_sql(self, cts_column: str) -> str:
        """A SQL condition (starting with AND) that drops abandoned commit timestamps: they never commit."""
        ...

    def catalog_version(self, conn: RawConnection) -> int:
        """A value that changes whenever a DDL changes tique.tables (in any process)."""
        ...

    def bump_catalog(self, conn: RawConnection) -> None:
        """A DDL changed tique.tables: give the catalog a new version."""
        ...


def ensure_schema(conn: RawConnection) -> None:
    exists = conn.execute("SELECT COUNT(*) FROM sys.schemas WHERE name = 'tique'").scalar()
    if not exists:
        conn.execute("CREATE SCHEMA tique")


def function_text(stmt: str) -> str:
    """A CREATE FUNCTION/PROCEDURE as MonetDB keeps it in sys.functions.func (lower case, whitespace folded), to
    tell whether the engine already has exactly this definition."""
    return " ".join(stmt.lower().replace(";", " ").split())


def installed_functions(conn: RawConnection) -> set[str]:
    """The definitions of tique's engine functions and procedures, as ``function_text`` writes them."""
    rows = conn.execute(
        "SELECT f.func FROM sys.functions f JOIN sys.schemas s ON f.schema_id = s.id WHERE s.name = 'tique'"
    ).rows
    return {function_text(str(r[0])) for r in rows}


def compile_functions(conn: RawConnection) -> None:
    """Compile every tique engine function and procedure once, before any client runs: MonetDB 11.41 compiles a
    function on its first use in a kernel run, and sessions using one for the first time at once can fail
    ("TypeException ... 'tique.begin_txn_as' undefined"). EXPLAIN compiles without running anything."""
    rows = conn.execute(
        "SELECT f.id, f.name, f.type, a.type FROM sys.functions f JOIN sys.schemas s ON f.schema_id = s.id "
        "LEFT JOIN sys.args a ON a.func_id = f.id AND a.inout = 1 WHERE s.name = 'tique' ORDER BY f.id, a.number"
    ).rows
    calls: dict[int, tuple[str, int, list[str]]] = {}
    for fid, name, kind, arg_type in rows:
        _, _, args = calls.setdefault(int(fid), (str(name), int(kind), []))
        if arg_type is not None:
            args.append(f"CAST(NULL AS {arg_type})")
    functions = [f"tique.{name}({', '.join(args)})" for name, kind, args in calls.values() if kind == 1]
    if functions:
        conn.execute(f"EXPLAIN SELECT {', '.join(functions)}")
    for name, kind, args in calls.values():
        if kind == 2:
            conn.execute(f"EXPLAIN CALL tique.{name}({', '.join(args)})")


def engine_version(conn: RawConnection) -> str:
    """MonetDB's version: a server reports it; the embedded kernel (also behind 'tique serve') does not, and is
    then the monetdbe wheel's."""
    rows = conn.execute("SELECT value FROM sys.env() WHERE name = 'monet_version'").rows
    if rows:
        return str(rows[0][0])
    from tique.engine.udf import kernel_version

    return kernel_version()


def _one(conn: RawConnection, sql: str) -> int:
    return int(conn.execute(sql).scalar())


# What PUBLIC calls to act for a transaction: the C module's *_as functions with the caller's "who" (its user id
# * 2^20 + its kernel session id + 1; CURRENT_USER is the caller's inside these owner-rights functions), which
# binds a transaction id to the session that began it (tique_udf.c, "Sessions").
SESSION_FUNCTIONS = (
    """CREATE OR REPLACE FUNCTION tique.who() RETURNS BIGINT
BEGIN
  RETURN SELECT a.id * 1048576 + sys.current_sessionid() + 1 FROM sys.auths AS a WHERE a.name = CURRENT_USER;
END""",
    "CREATE OR REPLACE FUNCTION tique.begin_txn(prev BIGINT, lease_ms INT) RETURNS BIGINT "
    "RETURN tique.begin_txn_as(prev, lease_ms, tique.who())",
    "CREATE OR REPLACE FUNCTION tique.renew(txid BIGINT, lease_ms INT) RETURNS INT "
    "RETURN tique.renew_as(txid, lease_ms, tique.who())",
    "CREATE OR REPLACE FUNCTION tique.end_txn(txid BIGINT) RETURNS INT RETURN tique.end_txn_as(txid, tique.who())",
    "CREATE OR REPLACE FUNCTION tique.next_cts_for(txid BIGINT) RETURNS BIGINT "
    "RETURN tique.next_cts_for_as(txid, tique.who())",
    "CREATE OR REPLACE FUNCTION tique.publish(c BIGINT, timeout_ms INT) RETURNS BIGINT "
    "RETURN tique.publish_as(c, timeout_ms, tique.who())",
    "CREATE OR REPLACE FUNCTION tique.record_cts(txid BIGINT) RETURNS BIGINT "
    "RETURN tique.record_cts_as(txid, tique.who())",
    "CREATE OR REPLACE FUNCTION tique.publish_own(txid BIGINT) RETURNS BIGINT "
    "RETURN tique.publish_own_as(txid, tique.who())",
)


class CSequencer:
    """The C module's functions, called through SQL."""

    kind: SequencerKind = "c"
    # An ordinary user (not tique's owner) advances only settled timestamps and writes outcomes through the
    # protocol procedures (tique/privileges.py); set by Database.
    restricted = False
    # Over MAPI, `tique serve` compiled the functions before it let any client in: a client compiling them again,
    # several at once, failed ("TypeException ... 'sql.put_outcome' undefined", 1 of 48 connections) and once
    # the server closed every connection. Set by Database.
    compiled_by_server = False
    advance_fn = "tique.advance"
    publishes_in_certification = True
    # The process that loaded the module (embedded) and runs as tique's owner: the begin and the finish as direct
    # C calls instead of statements (tique/engine/local_calls.py). Set by Database.
    local: LocalCalls | None = None

    def restrict(self) -> None:
        self.restricted = True
        self.advance_fn = "tique.advance_settled"

    def call(self, name: str, *args: object) -> str:
        """SQL calling the C module's ``name`` (begin_txn, renew, end_txn, next_cts_for, publish) for a
        transaction. An ordinary user calls the function that passes its session (SESSION_FUNCTIONS), so its
        transactions are bound to it; tique's owner calls the unchecked form (who 0): its transactions are bound
        to the owner, whom no ordinary user can act as, at no cost (sys.current_sessionid() costs a statement
        about 60 us)."""
        listed = ", ".join(str(a) for a in args)
        return f"tique.{name}({listed})" if self.restricted else f"tique.{name}_as({listed}, 0)"

    def install(self, conn: RawConnection) -> None:
        if not self.restricted:  # an ordinary user only checks the module is there
            ensure_schema(conn)
            wanted = (*sqlfiles.statements("udf_functions"), *SESSION_FUNCTIONS)
            # only a change is installed: every process's first connection did it (about 17 ms of DDL)
            creates = {function_text(stmt) for stmt in wanted if stmt.lstrip().upper().startswith("CREATE")}
            changed = not creates <= installed_functions(conn)
            if changed:
                for stmt in wanted:
                    conn.execute(stmt)
            if changed or not self.compiled_by_server:
                compile_functions(conn)
        try:
            abi = _one(conn, "SELECT tique.abi()")
        except Exception as exc:
            raise OperationalError(
                "tique's C module is not loaded in this engine. Embedded: tique loads it itself (run 'make build'); "
                "a server must be started by 'tique serve' or load the module; or use sequencer='sql'. "
                f"Engine said: {exc}"
            ) from None
        from tique.engine.udf import ABI

        if abi != ABI:
            raise OperationalError(f"the engine runs tique's C module ABI {abi}, this driver needs {ABI}: rebuild it")

    def next_txid(self, conn: RawConnection) -> int:
        return _one(conn, "SELECT tique.next_txid()")

    def next_cts(self, conn: RawConnection) -> int:
        return _one(conn, "SELECT tique.next_cts()")

    def sts(self, conn: RawConnection) -> int:
        return _one(conn, "SELECT tique.sts()")

    def publish(self, conn: RawConnection, cts: int, timeout_ms: int) -> None:
        conn.execute(f"SELECT {self.call('publish', int(cts), int(timeout_ms))}")

    def decide(self, conn: RawConnection, cts: int, ok: bool = True) -> None:
        conn.execute(f"SELECT tique.decide({int(cts)}, {int(ok)})")

    def advance(self, conn: RawConnection, cts: int, timeout_ms: int) -> int:
        return _one(conn, f"SELECT {self.advance_fn}({int(cts)}, {int(timeout_ms)})")

    def abandon(self, conn: RawConnection, cts: int) -> bool:
        return bool(_one(conn, f"SELECT tique.abandon({int(cts)})"))

    def record_sql(self, txid: int, sts: int, hashes: Sequence[int], tables: Sequence[int] = ()) -> str | None:
        values = ", ".join(f"({int(h)})" for h in hashes)
        cts = self.call("record_cts", int(txid))
        for table in sorted(set(tables)):  # the marks go up in the statement taking the timestamp
            cts = f"tique.wrote({cts}, {int(table)})"
        return (
            f"INSERT INTO tique.commits SELECT {int(txid)}, {int(sts)}, x.c, v.h FROM (VALUES {values}) AS v(h) "
            f"CROSS JOIN (SELECT {cts} AS c) AS x"
        )

    def record(self, conn: RawConnection, txid: int, sts: int, hashes: Sequence[int]) -> int | None:
        conn.execute(str(self.record_sql(txid, sts, hashes)))
        return None

    def publish_record(self, conn: RawConnection, txid: int, cts: int | None, timeout_ms: int) -> int:
        return _one(
            conn,
            f"SELECT MAX(cts), {self.call('publish', 'MAX(cts)', int(timeout_ms))} FROM tique.commits "
            f"WHERE txid = {int(txid)}",
        )

    def publish_own_sql(self, txid: str) -> str:
        return self.call("publish_own", txid)

    def await_published(self, conn: RawConnection, cts: int, timeout_ms: int) -> None:
        conn.execute(f"SELECT tique.await_published({int(cts)}, {int(timeout_ms)})")

    def decide_and_record(self, conn: RawConnection, txid: int, cts: int, ok: bool) -> None:
        # one statement: the C module keeps the verdict, so if this one never commits (its client died, the engine
        # failed it after decide ran) a waiter writes the same outcome for it (tique/outcomes.py)
        if self.restricted:  # an ordinary user: the same statement, as tique's procedure (privileges.py)
            conn.execute(f"CALL tique.put_outcome({int(txid)}, {int(cts)}, {int(ok)})")
            return
        conn.execute(
            f"INSERT INTO tique.outcomes SELECT {int(txid)}, tique.decide({int(cts)}, {int(ok)}), "
            f"{'TRUE' if ok else 'FALSE'}"
        )

    def finish(self, conn: RawConnection, txid: int, cts: int, timeout_ms: int) -> None:
        if self.local is not None and not conn.closed:
            self.local.finish(cts, timeout_ms, txid)
            return
        values = {"cts": str(int(cts)), "ms": str(int(timeout_ms)), "txid": str(int(txid))}
        run_template(conn, _finish_template(self.advance_fn, self.call("end_txn", "{txid}")), values)

    def expire(self, conn: RawConnection, conflicting: Sequence[int]) -> int:
        listed = ", ".join(str(int(c)) for c in conflicting)
        found = conn.execute(
            f"SELECT SUM(tique.expire(cts)) FROM tique.commits WHERE cts IN ({listed}) "
            "AND txid NOT IN (SELECT txid FROM tique.outcomes)"
        ).scalar()
        return int(found or 0)

    def state(self, conn: RawConnection, cts: int) -> int:
        return _one(conn, f"SELECT tique.cts_state({int(cts)})")

    def set_lease(self, conn: RawConnection, ms: int) -> int:
        return _one(conn, f"SELECT tique.set_lease({int(ms)})")

    def reset(self, conn: RawConnection, txid: int, cts: int) -> None:
        conn.execute(f"SELECT tique.reset({int(txid)}, {int(cts)})")

    def counters(self, conn: RawConnection) -> tuple[int, int]:
        row = conn.execute("SELECT tique.last_txid(), tique.last_cts()").rows[0]
        return int(row[0]), int(row[1])

    def live_sql(self, cts_column: str) -> str:
        return f"AND tique.cts_state({cts_column}) <> {ABANDONED}"

    def catalog_version(self, conn: RawConnection) -> int:
        return _one(conn, "SELECT tique.catalog_version(0)")

    def bump_catalog(self, conn: RawConnection) -> None:
        conn.execute("SELECT tique.bump_catalog()")


class SqlSequencer:
    """SEQUENCEs plus an insert-only event log, polled. Leases work as in the C module.

    Abandonment races with the owner are settled Dekker-style on MonetDB's atomic single-row inserts: each
    side writes its event and then reads the other's. An owner that finds an abandon event aborts; an
    abandoner that finds a deciding event withdraws. At most one of them goes on.
    """

    kind: SequencerKind = "sql"
    restricted = False  # no ordinary-user mode (see CSequencer)
    advance_fn = ""
    publishes_in_certification = False  # publishing is an event row: a write, never inside a certification read

    def __init__(self, lease_ms: int = COMMIT_LEASE_MS, poll_s: float = 0.001, unsafe_sequences: bool = False) -> None:
        self.lease_ms = lease_ms
        self.unsafe_sequences = unsafe_sequences
        self.poll_s = poll_s
        self._noticed: dict[int, float] = {}  # timestamps seen without events: their lease runs from here

    def install(self, conn: RawConnection) -> None:
        """Create its sequences and tables, refused on MonetDB 11.41 unless ``unsafe_sequences``; a database where
        an operator installed them on purpose (``tique serve`` with TIQUE_INSTALL_SQL_SEQUENCER=1, for tests and
        comparisons) is used as it is."""
        ensure_schema(conn)
        exists = _one(
            conn,
            "SELECT COUNT(*) FROM sys.sequences s JOIN sys.schemas sc ON s.schema_id = sc.id "
            "WHERE sc.name = 'tique' AND s.name = 'cts_seq'",
        )
        version = engine_version(conn)
        if not exists and version.startswith("11.41.") and not self.unsafe_sequences:
            raise NotSupportedError(
                f"the SQL sequencer is unsafe on MonetDB {version}: concurrent NEXT VALUE FOR corrupts this "
                "kernel's write-ahead log (measured: most rows committed by concurrent sessions were gone after "
                "a restart). Use sequencer='c' (tique's C module, the default), or a newer MonetDB server"
            )
        if not exists:
            for stmt in sqlfiles.statements("sequencer_sql"):
                conn.execute(stmt)

    def next_txid(self, conn: RawConnection) -> int:
        return _one(conn, "SELECT NEXT VALUE FOR tique.txid_seq")

    def next_cts(self, conn: RawConnection) -> int:
        cts = _one(conn, "SELECT NEXT VALUE FOR tique.cts_seq")
        self._event(conn, cts, TAKEN)
        return cts

    def sts(self, conn: RawConnection) -> int:
        return _one(conn, "SELECT MAX(sts) FROM tique.seq_sts")

    def _event(self, conn: RawConnection, cts: int, kind: int) -> None:
        conn.execute(f"INSERT INTO tique.seq_events VALUES ({int(cts)}, {int(kind)}, {int(time.time() * 1000)})")

    def _has(self, conn: RawConnection, cts: int, kind: int) -> bool:
        return bool(_one(conn, f"SELECT COUNT(*) FROM tique.seq_events WHERE cts = {int(cts)} AND kind = {kind}"))

    def _abandoned(self, conn: RawConnection, cts: int) -> bool:
        kinds = {int(r[0]) for r in conn.execute(f"SELECT kind FROM tique.seq_events WHERE cts = {int(cts)}").rows}
        return _settled_kind(kinds) == ABANDONED

    def _check_not_abandoned(self, conn: RawConnection, cts: int) -> None:
        if self._abandoned(conn, cts):
            raise LeaseExpired(
                f"tique: commit {cts} was abandoned after its lease ({self.lease_ms} ms) ran out; retry the transaction"
            )

    def publish(self, conn: RawConnection, cts: int, timeout_ms: int) -> None:
        self._event(conn, cts, PUBLISHED)
        self._check_not_abandoned(conn, cts)
        self._wait(conn, cts, "published", timeout_ms)

    def decide(self, conn: RawConnection, cts: int, ok: bool = True) -> None:
        self._event(conn, cts, DECIDING)
        self._check_not_abandoned(conn, cts)

    def advance(self, conn: RawConnection, cts: int, timeout_ms: int) -> int:
        self._event(conn, cts, DONE)
        return self._wait(conn, cts, "settled", timeout_ms)

    def abandon(self, conn: RawConnection, cts: int) -> bool:
        if self._has(conn, cts, DONE):
            return False
        self._event(conn, cts, ABANDONED)
        if self._has(conn, cts, DECIDING):
            self._event(conn, cts, WITHDRAWN)  # the owner got there first: withdraw
            return False
        return True

    def _wait(self, conn: RawConnection, cts: int, what: str, timeout_ms: int) -> int:
        """Wait until every timestamp below cts is published (``published``), or up to cts is settled."""
        deadline = time.monotonic() + timeout_ms / 1000
        delay = self.poll_s
        while True:
            sts = self.sts(conn)
            if sts >= (cts - 1 if what == "published" else cts):
                return sts
            events: dict[int, set[int]] = {}
            first_seen: dict[int, int] = {}
            for c, kind, at in conn.execute(f"SELECT cts, kind, at FROM tique.seq_events WHERE cts > {sts}").rows:
                events.setdefault(int(c), set()).add(int(kind))
                first_seen.setdefault(int(c), int(at))
            # the snapshot moves over the whole settled prefix above sts, ours and later ones included
            nxt = sts + 1
            while _settled_kind(events.get(nxt, set())) is not None:
                nxt += 1
            if nxt - 1 > sts:
                conn.execute(f"INSERT INTO tique.seq_sts VALUES ({nxt - 1})")
                continue
            if what == "published":
                blocked = [c for c in range(sts + 1, cts) if not events.get(c, set()) - {TAKEN}]
                if not blocked:
                    return sts
            else:
                blocked = [c for c in range(sts + 1, cts) if _settled_kind(events.get(c, set())) is None]
            self._abandon_stale(conn, blocked, events, first_seen)
            if time.monotonic() >= deadline:
                raise Timeout(
                    f"tique: commit {cts} waited {timeout_ms} ms for commit {blocked[0] if blocked else sts + 1}; "
                    f"its client may have died: recovery or the lease ({self.lease_ms} ms) will settle it"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.02)

    def record_sql(self, txid: int, sts: int, hashes: Sequence[int], tables: Sequence[int] = ()) -> str | None:
        return None  # the timestamp comes from a SEQUENCE first (record); no write marks (shared_rows.py)

    def record(self, conn: RawConnection, txid: int, sts: int, hashes: Sequence[int]) -> int | None:
        cts = self.next_cts(conn)
        values = ", ".join(f"({int(txid)}, {int(sts)}, {cts}, {int(h)})" for h in hashes)
        try:
            conn.execute(f"INSERT INTO tique.commits VALUES {values}")
        except BaseException:
            self.abandon(conn, cts)  # no record: nobody waits for this timestamp
            raise
        return cts

    def publish_record(self, conn: RawConnection, txid: int, cts: int | None, timeout_ms: int) -> int:
        assert cts is not None
        self.publish(conn, cts, timeout_ms)
        return cts

    def publish_own_sql(self, txid: str) -> str:
        raise NotSupportedError("the SQL sequencer publishes with a statement of its own (publish_record)")

    def await_published(self, conn: RawConnection, cts: int, timeout_ms: int) -> None:
        raise NotSupportedError("the SQL sequencer publishes with a statement of its own (publish_record)")

    def decide_and_record(self, conn: RawConnection, txid: int, cts: int, ok: bool) -> None:
        self.decide(conn, cts, ok)
        conn.execute(f"INSERT INTO tique.outcomes VALUES ({int(txid)}, {int(cts)}, {'TRUE' if ok else 'FALSE'})")

    def finish(self, conn: RawConnection, txid: int, cts: int, timeout_ms: int) -> None:
        self.advance(conn, cts, timeout_ms)

    def expire(self, conn: RawConnection, conflicting: Sequence[int]) -> int:
        return 0  # its waiters abandon stale commits as they poll (_abandon_stale)

    def _abandon_stale(
        self, conn: RawConnection, blocked: list[int], events: dict[int, set[int]], first_seen: dict[int, int]
    ) -> None:
        now_ms = time.time() * 1000
        for c in blocked:
            if DECIDING in events.get(c, set()):
                continue  # its outcome may already be written: never abandoned here
            started = first_seen.get(c) or self._noticed.setdefault(c, now_ms)
            if now_ms - started >= self.lease_ms:
                self.abandon(conn, c)

    def reset(self, conn: RawConnection, txid: int, cts: int) -> None:
        conn.execute(f"ALTER SEQUENCE tique.txid_seq RESTART WITH {int(txid) + 1}")
        conn.execute(f"ALTER SEQUENCE tique.cts_seq RESTART WITH {int(cts) + 1}")
        conn.execute(f"INSERT INTO tique.seq_sts VALUES ({int(cts)})")

    def counters(self, conn: RawConnection) -> tuple[int, int]:
        row = conn.execute("SELECT (SELECT MAX(cts) FROM tique.seq_events), (SELECT MAX(sts) FROM tique.seq_sts)")
        last_cts, sts = row.rows[0]
        return -1, int(last_cts or sts or 0)

    def live_sql(self, cts_column: str) -> str:
        return (
            f"AND {cts_column} NOT IN (SELECT cts FROM tique.seq_events WHERE kind = {ABANDONED} "
            f"AND cts NOT IN (SELECT cts FROM tique.seq_events WHERE kind = {WITHDRAWN}))"
        )

    def catalog_version(self, conn: RawConnection) -> int:
        # No shared counter here: table ids are unique and never reused, so a DROP or CREATE changes this.
        row = conn.execute("SELECT COUNT(*), SUM(CAST(table_id AS BIGINT)), MAX(table_id) FROM tique.tables").rows[0]
        return hash(tuple(int(v or 0) for v in row))

    def bump_catalog(self, conn: RawConnection) -> None:
        pass


WITHDRAWN = 6  # SQL sequencer only: an abandon withdrawn because the owner was deciding


def _settled_kind(kinds: set[int]) -> int | None:
    """DONE or ABANDONED when a timestamp's events settle it, else None. A withdrawn abandon does not count."""
    if DONE in kinds:
        return DONE
    if ABANDONED in kinds and WITHDRAWN not in kinds:
        return ABANDONED
    return None


@functools.cache
def _finish_template(advance_fn: str, end_txn: str) -> Template:
    """CSequencer.finish's statement, prepared once per session (EXEC: about 0.2 -> 0.07 ms)."""
    return protocol_template(f"SELECT {advance_fn}({{cts}}, CAST({{ms}} AS INT)), {end_txn}")


def make_sequencer(kind: SequencerKind, lease_ms: int = COMMIT_LEASE_MS, unsafe_sequences: bool = False) -> Sequencer:
    if kind == "c":
        return CSequencer()
    if kind == "sql":
        return SqlSequencer(lease_ms=lease_ms, unsafe_sequences=unsafe_sequences)
    raise ValueError(f"unknown sequencer {kind!r}: choose 'c' (tique's C module) or 'sql' (pure SQL, polling)")
