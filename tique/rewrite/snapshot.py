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

import re
from collections.abc import Sequence
from typing import Any

import sqlglot
from sqlglot import exp

from tique.catalog import ROWID, TableInfo
from tique.names import quote
from tique.rewrite.dialect import MonetDB
from tique.rewrite.template import STS, TXID, slot

MAX_CTS = "CAST(9223372036854775807 AS BIGINT)"
NO_LIMIT = 1 << 60  # MonetDB refuses the largest BIGINT here (algebra.subslice)


def _requalify(pred: exp.Expression | str, table: str | None) -> str:
    """A pushed predicate with its columns pointed at one branch's table alias (or none). A string predicate
    (built by tique itself, no parsing needed) starts with ``{t}``, where the alias goes (only there: the rest
    may hold any name or literal, braces included)."""
    if isinstance(pred, str):
        assert pred.startswith("{t}"), pred
        return (f"{table}." if table else "") + pred[len("{t}") :]
    copy = pred.copy()
    for col in copy.find_all(exp.Column):
        col.set("table", exp.to_identifier(table) if table else None)
        col.set("db", None)
        col.set("catalog", None)
    return copy.sql(dialect=MonetDB)


def _where(preds: Sequence[exp.Expression | str], table: str | None, extra: Sequence[str] = ()) -> str:
    # each copied predicate in parentheses: ``id = 1 OR id = 2`` must not split the snapshot's own conditions
    parts = list(extra) + [f"({_requalify(p, table)})" for p in preds]
    return (" WHERE " + " AND ".join(parts)) if parts else ""


def _visible_cache(
    info: TableInfo, cols: Sequence[str], preds: Sequence[exp.Expression | str], latest: bool, own: bool, tag: str
) -> str:
    """Cache versions this transaction may see, with their order: committed ones, then its own (only when it
    has written the table: the branch costs a scan of the Cache even when it finds nothing). ``tag`` makes the
    table aliases unique in the statement (see snapshot_sql)."""
    c, o, w = f"tq_c{tag}", f"tq_t{tag}", f"tq_w{tag}"
    committed = [f"{o}.ok"] if latest else [f"{o}.ok", f"{o}.cts <= :{slot(STS).name}"]
    sql = (
        f"SELECT {', '.join(f'{c}.{quote(col)}' for col in cols)}, {c}.tq_deleted, {o}.cts AS tq_cts, {c}.tq_seq "
        f"FROM {info.cache} AS {c} JOIN tique.outcomes AS {o} ON {o}.txid = {c}.tq_txid{_where(preds, c, committed)}"
    )
    if own:
        sql += (
            f" UNION ALL SELECT {', '.join(f'{w}.{quote(col)}' for col in cols)}, {w}.tq_deleted, {MAX_CTS} AS tq_cts, "
            f"{w}.tq_seq FROM {info.cache} AS {w}{_where(preds, w, [f'{w}.tq_txid = :{slot(TXID).name}'])}"
        )
    return sql


def _pinned_column(pred: exp.Expression | str) -> str | None:
    """The column a key predicate pins to values (``col = v`` or ``col IN (...)``), if it is one."""
    if isinstance(pred, str):
        m = re.match(r'\{t\}"([^"]+)" IN \(', pred)  # tique's own key lists (transaction.py)
        return m.group(1) if m else None
    if isinstance(pred, exp.EQ):
        col = pred.this if isinstance(pred.this, exp.Column) else pred.expression
        return col.name if isinstance(col, exp.Column) else None
    if isinstance(pred, exp.In) and isinstance(pred.this, exp.Column):
        return pred.this.name
    return None


def _stable_rows(info: TableInfo, cols: Sequence[str], preds: Sequence[exp.Expression | str], tag: str) -> str:
    """Storage for a point read. With a composite key, the rows of the probe column's value(s) first, behind a
    LIMIT (never reached) that keeps MonetDB from merging the predicates: alone, an equality on one column is a
    hash lookup; together, MonetDB scans column by column (see Catalog.probed). The caller's predicates then
    filter those few rows, so the result is the same."""
    if not info.probe:
        return info.storage
    pinned = {_pinned_column(p): p for p in preds}
    probe = pinned.get(info.probe)
    if probe is None:
        return info.storage
    listed = ", ".join(quote(c) for c in cols)
    return f"(SELECT {listed} FROM {info.storage}{_where([probe], None)} LIMIT {NO_LIMIT}) AS tq_p{tag}"


def _newest(
    cols: Sequence[str], key: Sequence[str], source: str, tag: str, after: Sequence[exp.Expression] = ()
) -> str:
    """The newest version of each key in ``source``, unless a tombstone; then the ``after`` filters (which must not
    go below the ranking: they could drop the newest version and let an older one win)."""
    plain = ", ".join(quote(c) for c in cols)
    return (
        f"SELECT {plain} FROM (SELECT {plain}, tq_deleted, ROW_NUMBER() OVER (PARTITION BY "
        f"{', '.join(quote(k) for k in key)} ORDER BY tq_cts DESC, tq_seq DESC) AS tq_rk FROM ({source}) AS tq_u{tag}) "
        f"AS tq_r{tag}{_where(after, None, ['tq_rk = 1', 'NOT tq_deleted'])}"
    )


def snapshot_sql(
    info: TableInfo,
    formulation: str,
    preds: Sequence[exp.Expression | str] = (),
    *,
    expose_rowid: bool = False,
    latest: bool = False,
    own: bool = True,
    columns: Sequence[str] | None = None,
    row_preds: Sequence[exp.Expression] = (),
    tag: str = "",
    left_anti_join: bool = False,
) -> str:
    """SQL for the snapshot of ``info``; ``sts``/``txid`` are slots. ``latest`` drops the sts bound
    (a negative control for consistency checking only); ``own=False`` leaves out the transaction's own
    writes (for a transaction that has written none to this table); ``columns`` limits the snapshot to those
    columns and the key (None: every column). ``row_preds`` (analytical only) are the query's filters on this
    table alone: they may filter Storage rows before the anti-join, as the anti-join removes whole keys, and the
    newest Cache versions after their ranking. ``tag`` suffixes every table alias of the snapshot: MonetDB
    (11.41) plans a join of several subqueries that reuse the same inner aliases badly - CH's Q8 took 0.11 s
    instead of 0.01 s - so each snapshot of a statement gets its own. ``left_anti_join`` removes overridden
    Storage rows by a LEFT JOIN instead of NOT EXISTS: MonetDB 11.41 answers IN and EXISTS wrongly over an empty
    subquery holding a NOT EXISTS (``x NOT IN`` false, ``EXISTS`` true), so snapshots inside such subqueries
    use it (tests/test_differential_regressions.py)."""
    wanted = info.column_names if columns is None else [c for c in info.column_names if c in columns or c in info.key]
    wanted = wanted or info.column_names[:1]  # COUNT(*) of a table keyed by its hidden row id: some column
    cols = list(wanted)
    if info.has_rowid:  # the version key: both formulations match or rank versions by it
        cols.append(ROWID)
    out_cols = list(wanted) + ([ROWID] if expose_rowid and info.has_rowid else [])
    scols = ", ".join(quote(c) for c in cols)
    if formulation == "point":
        source = (
            f"SELECT {scols}, FALSE AS tq_deleted, CAST(0 AS BIGINT) AS tq_cts, 0 AS tq_seq FROM "
            f"{_stable_rows(info, cols, preds, tag)}{_where(preds, None)} UNION ALL "
            f"{_visible_cache(info, cols, preds, latest, own, tag)}"
        )
        sql = _newest(cols, info.key, source, tag)
    else:
        st, v = f"tq_s{tag}", f"tq_v{tag}"
        match = " AND ".join(f"{v}.{quote(k)} = {st}.{quote(k)}" for k in info.key)
        overriding = _visible_cache(info, cols, preds, latest, own, f"{tag}a")
        if left_anti_join:
            keys = ", ".join(quote(k) for k in info.key)
            hits = f"(SELECT {keys}, TRUE AS tq_hit FROM ({overriding}) AS tq_h{tag}) AS {v}"
            stable = (
                f"SELECT {', '.join(f'{st}.{quote(c)}' for c in cols)} FROM {info.storage} AS {st} LEFT JOIN {hits} "
                f"ON {match}{_where([*preds, *row_preds], st, [f'{v}.tq_hit IS NULL'])}"
            )
        else:
            overridden = f"NOT EXISTS (SELECT 1 FROM ({overriding}) AS {v} WHERE {match})"
            stable = (
                f"SELECT {', '.join(f'{st}.{quote(c)}' for c in cols)} FROM {info.storage} AS {st}"
                f"{_where([*preds, *row_preds], st, [overridden])}"
            )
        recent = _newest(cols, info.key, _visible_cache(info, cols, preds, latest, own, tag), tag, row_preds)
        # the LIMIT (never reached) keeps MonetDB from pushing the query's joins into the union, which made plans
        # of several joined snapshots up to 10x slower (CH's Q8); filters on this table are already inside
        sql = f"SELECT {scols} FROM ({stable} UNION ALL {recent}) AS tq_b{tag} LIMIT {NO_LIMIT}"
    if out_cols != cols:
        sql = f"SELECT {', '.join(quote(c) for c in out_cols)} FROM ({sql}) AS tq_o{tag}"
    return sql


def snapshot_tree(
    info: TableInfo, formulation: str, preds: Sequence[exp.Expression | str] = (), **kw: Any
) -> exp.Select:
    tree = sqlglot.parse_one(snapshot_sql(info, formulation, preds, **kw), read=MonetDB)
    assert isinstance(tree, (exp.Select, exp.Union))
    return tree  # type: ignore[return-value]
