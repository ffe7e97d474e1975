"""Every transactional table T also exists under its own name, as a VIEW of its latest committed state.

tique itself never reads the view: its rewriter replaces T by the transaction's snapshot (the catalog, not
MonetDB's, says what T is). The view is for everything else - mclient, BI tools, pymonetdb used directly,
SQLAlchemy's reflection: T shows up in MonetDB's catalog with its columns, and a plain client reads committed
rows only, never an uncommitted or aborted version. MonetDB refuses writes to a view, so such clients cannot
change T behind tique's back (nothing they write is silently lost).

Which committed state? The view cannot take a snapshot timestamp (MonetDB 11.41 views take no parameters), and
reading the engine's visible snapshot (``tique.sts()``) inside the statement is not enough: the statement's own
MonetDB snapshot is taken before that call runs, so a transaction settled in between would count as visible
while its outcome row is not. The view therefore bounds the state by what its own statement sees: the
committed transactions whose commit timestamp lies below the oldest commit record that has no outcome yet.
That set is closed downwards - a transaction certifies only after every smaller commit timestamp has written
its commit record (``publish``), so when its outcome is visible so is every earlier commit record, and an
earlier one still undecided bounds the set below it - so each statement reads one consistent snapshot. It needs
no C module, so it also works on a server without tique's functions.

Two things this relies on: the checkpointer trims ``tique.commits`` before ``tique.outcomes`` (a trimmed
transaction must never look undecided), and a commit record left without outcome by a dead client is settled
(by recovery, or by the checkpointer once its lease is over); until then the view's state stays at the commit
before it.
"""

from __future__ import annotations

from tique.catalog import TableInfo
from tique.engine.base import RawConnection
from tique.errors import DatabaseError
from tique.names import quote
from tique.params import literal

# the oldest commit timestamp still undecided (as this statement sees the metadata); no bound when none is
UNDECIDED = (
    "(SELECT COALESCE(MIN(tq_m.cts), CAST(9223372036854775807 AS BIGINT)) FROM tique.commits AS tq_m "
    "WHERE tq_m.txid NOT IN (SELECT tq_d.txid FROM tique.outcomes AS tq_d))"
)


def name(info: TableInfo) -> str:
    return f"{quote(info.schema)}.{quote(info.name)}"


def view_sql(info: TableInfo) -> str:
    """The latest committed state of T: Storage rows no committed Cache version overrides, plus the newest
    committed Cache version of each key unless it is a tombstone (the analytical snapshot, with the bound
    above instead of a transaction's sts)."""
    cols = list(info.stored_names)
    listed = ", ".join(quote(c) for c in cols)
    committed = (
        f"SELECT {', '.join(f'tq_c.{quote(c)}' for c in cols)}, tq_c.tq_deleted, tq_o.cts AS tq_cts, tq_c.tq_seq "
        f"FROM {info.cache} AS tq_c JOIN tique.outcomes AS tq_o ON tq_o.txid = tq_c.tq_txid "
        f"WHERE tq_o.ok AND tq_o.cts < {UNDECIDED}"
    )
    match = " AND ".join(f"tq_v.{quote(k)} = tq_s.{quote(k)}" for k in info.key)
    stable = (
        f"SELECT {', '.join(f'tq_s.{quote(c)}' for c in cols)} FROM {info.storage} AS tq_s "
        f"WHERE NOT EXISTS (SELECT 1 FROM ({committed}) AS tq_v WHERE {match})"
    )
    recent = (
        f"SELECT {listed} FROM (SELECT {listed}, tq_deleted, ROW_NUMBER() OVER (PARTITION BY "
        f"{', '.join(quote(k) for k in info.key)} ORDER BY tq_cts DESC, tq_seq DESC) AS tq_rk "
        f"FROM ({committed}) AS tq_u) AS tq_r WHERE tq_rk = 1 AND NOT tq_deleted"
    )
    # the hidden row id stays hidden; BLOB columns held as hex text are read as BLOB (TableInfo.hex_columns)
    shown = ", ".join(
        f"{info.typed_sql(c)} AS {quote(c)}" if c in info.hex_columns else quote(c) for c in info.column_names
    )
    return f"SELECT {shown} FROM ({stable} UNION ALL {recent}) AS tq_b"


def dependents(conn: RawConnection, info: TableInfo) -> list[str]:
    """The objects of MonetDB (the user's views, functions...) that use the view T: MonetDB refuses to drop it while
    any does, which DROP TABLE and ALTER TABLE (which replaces it) must."""
    rows = conn.execute(
        "SELECT DISTINCT COALESCE(u.name, f.name, CAST(d.depend_id AS VARCHAR(20))) FROM sys.dependencies d "
        "JOIN sys.tables t ON d.id = t.id JOIN sys.schemas s ON t.schema_id = s.id "
        "LEFT JOIN sys.tables u ON u.id = d.depend_id LEFT JOIN sys.functions f ON f.id = d.depend_id "
        f"WHERE s.name = {literal(info.schema)} AND t.name = {literal(info.name)} ORDER BY 1"
    ).rows
    return [str(r[0]) for r in rows]


def create_sql(info: TableInfo) -> str:
    return f"CREATE VIEW {name(info)} AS {view_sql(info)}"


def drop_sql(info: TableInfo) -> str:
    return f"DROP VIEW IF EXISTS {name(info)}"


def ensure(conn: RawConnection, tables: list[TableInfo]) -> None:
    """Create the view of every transactional table that has none: tables made before tique had views."""
    present = {
        (str(s), str(t))
        for s, t in conn.execute(
            "SELECT s.name, t.name FROM sys.tables t JOIN sys.schemas s ON t.schema_id = s.id WHERE t.type = 1"
        ).rows
    }
    for info in tables:
        if info.kind == "tx" and (info.schema, info.name) not in present:
            try:
                conn.execute(create_sql(info))
            except DatabaseError:  # the name is taken by something of MonetDB's own: leave it alone
                pass
