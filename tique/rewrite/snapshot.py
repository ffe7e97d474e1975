"""The snapshot of one table for one transaction, as SQL (the paper's Listing 1 and its analytical twin).

A version is visible when it is in Storage (stable), or in Cache written by a transaction committed at or before
the snapshot (sts), or in Cache written by this transaction itself. Of the visible versions of a key the
newest wins (this transaction's own first, then by commit timestamp, then by statement order); a winning
tombstone hides the key.

Two formulations return the same rows:

- point: rank every visible version per key (window function); the key predicates of the query are pushed
  into each scan, so a point read touches a couple of rows. Best for short statements.
- analytical: Storage rows no visible Cache version overrides (an anti-join), plus the newest Cache version
  per key: only the small Cache is ranked, never the whole relation. Best for scans and aggregates.

Only predicates on key columns may be pushed below the ranking: every version of a key has the same key
values, so such a predicate keeps or drops all of them together. A predicate on another column could drop
the newest version and let a stale one win.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlglot
from sqlglot import exp

from tique.catalog import ROWID, TableInfo
from tique.rewrite.dialect import MonetDB
from tique.rewrite.template import STS, TXID, slot

MAX_CTS = "CAST(9223372036854775807 AS BIGINT)"


def _q(name: str) -> str:
    return f'"{name}"'


def _requalify(pred: exp.Expression | str, table: str | None) -> str:
    """A pushed predicate with its columns pointed at one branch's table alias (or none). A string predicate
    (built by tique itself, no parsing needed) says where the alias goes with ``{t}``."""
    if isinstance(pred, str):
        return pred.format(t=f"{table}." if table else "")
    copy = pred.copy()
    for col in copy.find_all(exp.Column):
        col.set("table", exp.to_identifier(table) if table else None)
        col.set("db", None)
        col.set("catalog", None)
    return copy.sql(dialect=MonetDB)


def _where(preds: Sequence[exp.Expression | str], table: str | None, extra: Sequence[str] = ()) -> str:
    parts = list(extra) + [_requalify(p, table) for p in preds]
    return (" WHERE " + " AND ".join(parts)) if parts else ""


def _visible_cache(
    info: TableInfo, cols: Sequence[str], preds: Sequence[exp.Expression | str], latest: bool, own: bool
) -> str:
    """Cache versions this transaction may see, with their order: committed ones, then its own (only when it
    has written the table: the branch costs a scan of the Cache even when it finds nothing)."""
    ccols = ", ".join(f"c.{_q(c)}" for c in cols)
    committed = ["o.ok"] if latest else ["o.ok", f"o.cts <= :{slot(STS).name}"]
    sql = (
        f"SELECT {ccols}, c.tq_deleted, o.cts AS tq_cts, c.tq_seq FROM {info.cache} AS c "
        f"JOIN tique.outcomes AS o ON o.txid = c.tq_txid{_where(preds, 'c', committed)}"
    )
    if own:
        sql += (
            f" UNION ALL SELECT {ccols}, c.tq_deleted, {MAX_CTS} AS tq_cts, c.tq_seq FROM {info.cache} AS c"
            f"{_where(preds, 'c', [f'c.tq_txid = :{slot(TXID).name}'])}"
        )
    return sql


def _newest(cols: Sequence[str], key: Sequence[str], source: str) -> str:
    plain = ", ".join(_q(c) for c in cols)
    return (
        f"SELECT {plain} FROM (SELECT {plain}, tq_deleted, ROW_NUMBER() OVER (PARTITION BY "
        f"{', '.join(_q(k) for k in key)} ORDER BY tq_cts DESC, tq_seq DESC) AS tq_rk FROM ({source}) AS tq_u) "
        "AS tq_r WHERE tq_rk = 1 AND NOT tq_deleted"
    )


def snapshot_sql(
    info: TableInfo,
    formulation: str,
    preds: Sequence[exp.Expression | str] = (),
    *,
    expose_rowid: bool = False,
    latest: bool = False,
    own: bool = True,
) -> str:
    """SQL for the snapshot of ``info``; ``sts``/``txid`` are slots. ``latest`` drops the sts bound
    (a negative control for consistency checking only); ``own=False`` leaves out the transaction's own
    writes (for a transaction that has written none to this table)."""
    cols = list(info.column_names)
    if info.has_rowid and (expose_rowid or formulation == "analytical"):
        cols.append(ROWID)
    out_cols = list(info.column_names) + ([ROWID] if expose_rowid and info.has_rowid else [])
    scols = ", ".join(_q(c) for c in cols)
    if formulation == "point":
        source = (
            f"SELECT {scols}, FALSE AS tq_deleted, CAST(0 AS BIGINT) AS tq_cts, 0 AS tq_seq FROM {info.storage}"
            f"{_where(preds, None)} UNION ALL {_visible_cache(info, cols, preds, latest, own)}"
        )
        sql = _newest(cols, info.key, source)
    else:
        match = " AND ".join(f"v.{_q(k)} = s.{_q(k)}" for k in info.key)
        overridden = f"NOT EXISTS (SELECT 1 FROM ({_visible_cache(info, cols, preds, latest, own)}) AS v WHERE {match})"
        stable = (
            f"SELECT {', '.join(f's.{_q(c)}' for c in cols)} FROM {info.storage} AS s{_where(preds, 's', [overridden])}"
        )
        sql = f"{stable} UNION ALL {_newest(cols, info.key, _visible_cache(info, cols, preds, latest, own))}"
    if out_cols != cols:
        sql = f"SELECT {', '.join(_q(c) for c in out_cols)} FROM ({sql}) AS tq_o"
    return sql


def snapshot_tree(
    info: TableInfo, formulation: str, preds: Sequence[exp.Expression | str] = (), **kw: bool
) -> exp.Select:
    tree = sqlglot.parse_one(snapshot_sql(info, formulation, preds, **kw), read=MonetDB)
    assert isinstance(tree, (exp.Select, exp.Union))
    return tree  # type: ignore[return-value]
