"""Every tunable of a tique connection, in one typed model (``tique.connect(url, **settings)``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# How long a commit may stay stuck without its client before others stop waiting for it. The C module starts
# with the same value (tique/udf/tique_udf.c, lease_ms): a dead client stalls other committers about this long.
COMMIT_LEASE_MS = 1000
# How long a priority retry's key reservations hold (Connection.run(priority=True)).
RESERVATION_MS = 10000
# The C module takes times in ms as a MonetDB INT (about 24.8 days at most).
INT_MAX = 2**31 - 1
# How long a transaction's snapshot pin outlives its last statement (Settings.snapshot_lease_ms).
SNAPSHOT_LEASE_MS = 60000
# How long a checkpointer's lock outlives its last renewal: a killed checkpointer's lock is free after this.
CHECKPOINT_LOCK_LEASE_MS = 10000
CHECKPOINT_INTERVAL_S = 5.0  # seconds between checkpointer runs: `tique checkpoint`, start_background, benchmarks
# Rows a process keeps per quiet table across transactions (Settings.shared_rows; about 100 bytes each plus
# the values: TPC-C's whole item table, 100,000 rows, fits).
SHARED_ROWS_PER_TABLE = 100_000


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    sequencer: Literal["c", "sql"] = Field(
        "c", description="'c': tique's C module in the engine (default); 'sql': SEQUENCEs and polling"
    )
    write_mode: Literal["buffered", "direct"] = Field(
        "buffered",
        description="'buffered': writes wait in the client until a read of the table or COMMIT needs them; "
        "'direct': every write statement reaches the engine at once",
    )
    snapshot: Literal["auto", "point", "analytical"] = Field(
        "auto",
        description="snapshot formulation: 'point' (newest version per key by window rank, filters pushed to "
        "Storage and Cache), 'analytical' (no full-relation sort), or chosen per statement",
    )
    insert_check: Literal["flush", "immediate"] = Field(
        "immediate",
        description="when an INSERT's keys are checked against the snapshot: at the flush before the next read "
        "of the table or at COMMIT ('flush'), or at the INSERT itself ('immediate', one more round trip)",
    )
    on_statement_error: Literal["abort", "continue"] = Field(
        "abort",
        description="what a statement that fails inside a transaction leaves: 'abort' (MonetDB's and pymonetdb's "
        "way: the transaction can only be rolled back, so a COMMIT after the error keeps nothing) or 'continue' "
        "(the statement has no effect and the transaction goes on)",
    )
    short_pipeline: str | None = Field(
        "minimal_fast",
        description="MonetDB optimizer pipeline for short statements (the paper found minimal_fast best); "
        "None keeps the engine's default",
    )
    prepare: bool = Field(
        True,
        description="send a rewritten statement MonetDB has seen on this connection as EXEC of a prepared "
        "statement (skips its SQL parser and optimizer)",
    )
    cache_first: bool = Field(
        True,
        description="read whole rows by integer key from their visible Cache versions first: when every key has "
        "one, a row written often is one Cache read instead of a union of Storage and Cache (otherwise the union)",
    )
    held_rows: bool = Field(
        True,
        description="answer a read of rows by their whole key, and compute an UPDATE of one row by its key, from "
        "rows the transaction already read whole or wrote (its snapshot does not change): no engine call",
    )
    shared_rows: bool = Field(
        True,
        description="answer a read by the whole key from a row another transaction of this process read, when no "
        "commit wrote its table since (the engine tells at each begin; tique/shared_rows.py): tables read by key and "
        "rarely written cost no engine call per read",
    )
    worker_limit: int | None = Field(
        None,
        gt=0,
        description="MonetDB worker threads for this connection's queries (sys.setworkerlimit): 1 keeps an "
        "analytical connection's queries on one core, leaving the others to transactional work; None: all",
    )
    analytical_slots: int | None = Field(
        None,
        gt=0,
        description="at most this many analytical reads (scans and aggregates) of this process's connections "
        "with the same setting run at once on a database; the others wait their turn, so transactions keep the "
        "CPU (workload management for HTAP); None: no limit",
    )
    analytical_yield: bool = Field(
        True,
        description="while other connections or processes write, an analytical read of a connection that has not "
        "written in the last 10 s runs one at a time per database in this process, on MonetDB's sequential pipeline "
        "and (embedded) a low-priority thread, then rests (analytical_rest), so transactions keep the CPU "
        "(tique/workload.py); worker_limit and analytical_slots, when given, win",
    )
    analytical_rest: float | None = Field(
        None,
        ge=0,
        le=10,  # the rest is shared by the database's readers: one connection cannot stall the others for long
        allow_inf_nan=False,
        description="after a yielding analytical read, the next one waits for this many times as long as the "
        "read ran: 1.0 lets analytical reads run at most half of the time while transactions write; 0: no rest. "
        "None: 1.0 embedded, where yielding reads also run at low CPU priority, 3.0 over MAPI, where the server's "
        "threads run them and the rest is all that holds them back",
    )
    publish_timeout_ms: int = Field(10000, gt=0, le=INT_MAX, description="how long a commit waits for earlier commits")
    advance_timeout_ms: int = Field(10000, gt=0, le=INT_MAX, description="how long a commit waits to become visible")
    lease_ms: int | None = Field(
        None,
        gt=0,
        le=INT_MAX,
        description="a commit stuck for this long without its client (before deciding: abandoned; deciding: its "
        f"decided outcome written for it) no longer holds back later ones; set per database in the engine "
        f"(default {COMMIT_LEASE_MS} ms there); None leaves it as it is",
    )
    snapshot_lease_ms: int = Field(
        SNAPSHOT_LEASE_MS,
        gt=0,
        le=INT_MAX,
        description="the checkpointer keeps every version a transaction's snapshot may read for this long after "
        "its last statement (renewed while it runs); a transaction idle for longer aborts on its next statement",
    )
    retries: int = Field(10, ge=0, description="default retries of Connection.run after a SerializationFailure")
    # For consistency checking only (tique elle): break isolation on purpose, to prove the checker catches it.
    unsafe_read_latest: bool = Field(False, description="NEGATIVE CONTROL: read the latest committed data")
    unsafe_skip_certification: bool = Field(False, description="NEGATIVE CONTROL: commit without certifying")
