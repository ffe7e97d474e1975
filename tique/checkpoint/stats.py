"""What an operator watches of the checkpointer (``tique checkpoint --stats``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tique.catalog import Catalog
from tique.engine.base import RawConnection
from tique.errors import DatabaseError


def log_mb(conn: RawConnection) -> float | None:
    """The size of the engine's write-ahead log in MB, when its database directory is on this machine (else None).
    MonetDB 11.41 moves the log into the tables' files only while the database is left alone, and a write during
    a bulk load can stop that until the kernel restarts (README "Engine facts"): a log that stays large says so."""
    try:
        path = conn.execute("SELECT value FROM sys.env() WHERE name = 'gdk_dbpath'").rows
    except DatabaseError:  # a user the engine does not show its environment to
        return None
    logs = Path(str(path[0][0])) / "sql_logs" if path else None
    if logs is None or not logs.is_dir():
        return None
    try:
        return round(sum(f.stat().st_size for f in logs.rglob("*") if f.is_file()) / 2**20, 1)
    except OSError:  # a log file replaced while we looked
        return None


def stats(conn: RawConnection) -> dict[str, Any]:
    """What an operator watches: Cache rows per table, metadata rows, horizon lag, the last run logged (an idle
    run is not) and the engine's log size."""
    catalog = Catalog()
    catalog.refresh(conn)
    horizon, sts, last_cts, pins = (
        int(v) for v in conn.execute("SELECT tique.horizon(), tique.sts(), tique.last_cts(), tique.pins()").rows[0]
    )
    cache = {
        f"{info.schema}.{info.name}": int(conn.execute(f"SELECT COUNT(*) FROM {info.cache}").scalar())
        for info in catalog.all()
        if info.kind == "tx"
    }
    meta = {
        name: int(conn.execute(f"SELECT COUNT(*) FROM tique.{name}").scalar())
        for name in ("commits", "outcomes", "reservations")
    }
    last = conn.execute(
        "SELECT started_ms, duration_ms, horizon, low_txid, moved, cleaned, trimmed, conflicts, errors, note "
        "FROM tique.checkpoints ORDER BY started_ms DESC LIMIT 1"
    )
    last_run = dict(zip([c.name for c in last.columns], last.rows[0])) if last.rows else None
    runs = int(conn.execute("SELECT COUNT(*) FROM tique.checkpoints").scalar())
    return {
        "cache_rows": cache,
        "metadata_rows": meta,
        "horizon": horizon,
        "sts": sts,
        "last_cts": last_cts,
        "horizon_lag": sts - horizon,  # commits visible to new transactions but not yet foldable
        "running_transactions": pins,
        "runs_logged": runs,
        "last_run": last_run,
        "write_ahead_log_mb": log_mb(conn),
    }
