"""The snapshot of one table for one transaction, as a sqlglot tree (the paper's Listing 1 and its analytical twin).

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

The tree is built from sqlglot's expression nodes directly (not the string-taking builders, which parse and
copy): nothing tique generates is printed and parsed again, and the query's predicates are copied as trees.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache, reduce

from sqlglot import exp

from tique.catalog import META_COLUMNS, ROWID, TableInfo
from tique.names import column_ref, identifier
from tique.rewrite.dialect import MonetDB
from tique.rewrite.template import NONCE, STS, TXID, slot

NO_LIMIT = 1 << 60  # MonetDB refuses the largest BIGINT here (algebra.subslice)
_MAX_CTS = exp.Cast(this=exp.Literal.number(9223372036854775807), to=exp.DataType.build("BIGINT"))
_ZERO_CTS = exp.Cast(this=exp.Literal.number(0), to=exp.DataType.build("BIGINT"))

# A predicate tique writes as text (constraints.py): ``{t}"col" IN (values)``, the alias going where ``{t}`` is
_KEY_LIST = re.compile(r'\{t\}((?:"(?:[^"]|"")+"))\s+IN\s+\((.*)\)', re.S)

Predicate = exp.Expression | str


def _own(name: str) -> exp.Identifier:
    """One of tique's own names (aliases, version columns): plain words, written unquoted."""
    return exp.Identifier(this=name, quoted=False)


def _col(name: str, table: str | None = None) -> exp.Column:
    """A column of tique's own (tq_deleted, cts, ...), optionally of one of its aliases."""
    return exp.Column(this=_own(name), table=_own(table) if table else None)


def _user_cols(cols: Sequence[str], table: str | None = None) -> list[exp.Expression]:
    """The table's columns by their exact names (quoted), optionally of one of tique's aliases."""
    return [column_ref(c, _own(table) if table else None) for c in cols]


def _as(node: exp.Expression, name: str) -> exp.Alias:
    return exp.Alias(this=node, alias=_own(name))


def _table(schema: str, name: str, alias: str, quoted: bool = True) -> exp.Table:
    ids = (identifier(schema), identifier(name)) if quoted else (_own(schema), _own(name))
    return exp.Table(this=ids[1], db=ids[0], alias=exp.TableAlias(this=_own(alias)))


def _physical(info: TableInfo, cache: bool, alias: str | None, preds: Sequence[exp.Expression] = ()) -> exp.Expression:
    """Storage or Cache to select from, under ``alias``: the table itself, or, when BLOB columns hold hex text
    (TableInfo.hex_columns), a projection of it that reads them as BLOB, so that everything above (the query's
    predicates and expressions, the result) sees the column's own type. ``preds`` are predicates the caller
    applies above it that may filter this table's rows: what they imply of the hex text (``_on_hex_text``) also
    selects inside, where the engine looks values up by the column's hash instead of casting every row first."""
    name = info.cache_name if cache else info.storage_name
    table = exp.Table(this=identifier(name), db=identifier(info.physical_schema))
    if not info.hex_columns:
        if alias:
            table.set("alias", exp.TableAlias(this=_own(alias)))
        return table
    names = [*info.stored_names, *(META_COLUMNS if cache else ())]
    outputs = [
        _as_column(exp.Cast(this=column_ref(c), to=exp.DataType.build("BLOB")), c)
        if c in info.hex_columns
        else (_col(c) if c in META_COLUMNS else column_ref(c))
        for c in names
    ]
    inner = [found for found in (_on_hex_text(info, p) for p in preds) if found is not None]
    # a row filter printed later (snapshot_sql's shapes): a marker its hex-text filter is printed at
    markers = (_ROW_MARKER.fullmatch(p.name) for p in preds if isinstance(p, exp.Column))
    inner += [_col(f"tq{NONCE}_hexrows_{m[1]}") for m in markers if m]
    return _from(_select(outputs, table, _where(inner, None)), alias or f"tq_x{'c' if cache else 's'}")


def _on_hex_text(info: TableInfo, pred: exp.Expression) -> exp.Expression | None:
    """A filter of the hex text that ``pred`` implies, else None: ``pred``'s comparisons ``b = v`` and
    ``b IN (v, ...)`` of hex columns, kept under its ANDs (one is enough) and ORs (all are needed). Each value is
    cast to BLOB (a string is read as hexadecimal, as the BLOB column reads it); MonetDB then compares a BLOB with
    a CLOB as the BLOB's upper-case hex text, the form stored, so equal values are equal texts. A list tique wrote
    (``_KEY_LIST``: literals of key values, BLOB ones for a BLOB key) is compared as it is."""
    node = pred.unnest()
    if isinstance(node, (exp.And, exp.Or)):
        kept = [p for p in (_on_hex_text(info, side) for side in (node.this, node.expression)) if p is not None]
        if not kept or (isinstance(node, exp.Or) and len(kept) < 2):
            return None
        return reduce(lambda a, b: type(node)(this=a, expression=b), [exp.Paren(this=p) for p in kept])
    if _pinned_column(node) not in info.hex_columns:
        return None
    copy = _requalify(node, None)
    if isinstance(copy, exp.EQ):
        values = [copy.expression] if isinstance(copy.this, exp.Column) else [copy.this]
    elif isinstance(copy, exp.In) and not copy.args.get("query") and not copy.args.get("unnest"):
        values = list(copy.expressions)
    else:
        return None
    if any(isinstance(v, (exp.Column, exp.Query)) or v.find(exp.Column, exp.Query) for v in values):
        return None  # another column or a subquery: the projection's cast answers it
    for v in values:
        if not isinstance(v, exp.Var):
            v.replace(exp.Cast(this=v.copy(), to=exp.DataType.build("BLOB")))
    return copy


def _as_column(node: exp.Expression, name: str) -> exp.Alias:
    """``node AS "name"``: an output under a column's own (quoted) name."""
    return exp.Alias(this=node, alias=identifier(name))


def _from(source: exp.Expression, alias: str) -> exp.Subquery:
    """``(source) AS alias``, to select from."""
    return exp.Subquery(this=source, alias=exp.TableAlias(this=_own(alias)))


def _union(*parts: exp.Query) -> exp.Query:
    """``a UNION ALL b UNION ALL c``, grouped from the left as SQL reads it."""
    return reduce(lambda left, right: exp.Union(this=left, expression=right, distinct=False), parts)


def _select(cols: Sequence[exp.Expression], source: exp.Expression, where: exp.Expression | None = None) -> exp.Select:
    select = exp.Select(expressions=list(cols), from_=exp.From(this=source))
    if where is not None:
        select.set("where", exp.Where(this=where))
    return select


def _predicate(pred: Predicate) -> exp.Expression:
    """A pushed predicate as a tree. tique's own key lists come as text (see _KEY_LIST): the column becomes a
    node, the values (literals tique wrote) stay text, printed as they are - parsing them again would cost a
    node per value."""
    if not isinstance(pred, str):
        return pred
    m = _KEY_LIST.fullmatch(pred)
    assert m is not None, pred
    name = m.group(1)[1:-1].replace('""', '"')
    return exp.In(this=column_ref(name), expressions=[exp.Var(this=m.group(2))])


def _requalify(pred: exp.Expression, table: str | None) -> exp.Expression:
    """A copy of a pushed predicate with its columns pointed at one branch's table alias (or none); the columns of a
    subquery in it (a semi-join's) name that subquery's own tables and stay as they are."""
    copy = pred.copy()
    for col in copy.find_all(exp.Column, bfs=False):
        if col.find_ancestor(exp.Select) is not None:
            continue
        col.set("table", _own(table) if table else None)
        col.set("db", None)
        col.set("catalog", None)
    return copy


def _where(
    preds: Sequence[exp.Expression], table: str | None, extra: Sequence[exp.Expression] = ()
) -> exp.Expression | None:
    # each copied predicate in parentheses: ``id = 1 OR id = 2`` must not split the snapshot's own conditions
    parts = [*extra, *(exp.Paren(this=_requalify(p, table)) for p in preds)]
    return reduce(lambda left, right: exp.And(this=left, expression=right), parts) if parts else None


def _visible_cache(
    info: TableInfo, cols: Sequence[str], preds: Sequence[exp.Expression], latest: bool, own: bool, tag: str
) -> list[exp.Select]:
    """Cache versions this transaction may see, with their order: committed ones, then its own (only when it
    has written the table: the branch costs a scan of the Cache even when it finds nothing). ``tag`` makes the
    table aliases unique in the statement (see snapshot_tree)."""
    c, o, w = f"tq_c{tag}", f"tq_t{tag}", f"tq_w{tag}"
    committed: list[exp.Expression] = [_col("ok", o)]
    if not latest:
        committed.append(exp.LTE(this=_col("cts", o), expression=slot(STS)))
    joined = _physical(info, True, c, preds)
    outcomes = exp.Join(
        this=_table("tique", "outcomes", o, quoted=False),
        on=exp.EQ(this=_col("txid", o), expression=_col("tq_txid", c)),
    )
    visible = _select(
        [*_user_cols(cols, c), _col("tq_deleted", c), _as(_col("cts", o), "tq_cts"), _col("tq_seq", c)],
        joined,
        _where(preds, c, committed),
    )
    visible.set("joins", [outcomes])
    if not own:
        return [visible]
    mine = _select(
        [*_user_cols(cols, w), _col("tq_deleted", w), _as(_MAX_CTS.copy(), "tq_cts"), _col("tq_seq", w)],
        _physical(info, True, w, preds),
        _where(preds, w, [exp.EQ(this=_col("tq_txid", w), expression=slot(TXID))]),
    )
    return [visible, mine]


def _pinned_column(pred: exp.Expression) -> str | None:
    """The column a key predicate pins to values (``col = v`` or ``col IN (...)``), if it is one."""
    if isinstance(pred, exp.EQ):
        col = pred.this if isinstance(pred.this, exp.Column) else pred.expression
        return col.name if isinstance(col, exp.Column) else None
    if isinstance(pred, exp.In) and isinstance(pred.this, exp.Column):
        return pred.this.name
    return None


def _storage(info: TableInfo, alias: str | None = None, preds: Sequence[exp.Expression] = ()) -> exp.Expression:
    return _physical(info, False, alias, preds)


def _stable_rows(
    info: TableInfo, cols: Sequence[str], preds: Sequence[exp.Expression], tag: str, alone: bool
) -> tuple[exp.Expression, exp.Expression | None]:
    """Storage for a point read, and its filter. With a composite key, MonetDB must select the probe column's
    rows first: alone, an equality on one column is a hash lookup; merged with the other key predicates, MonetDB
    scans column by column (see Catalog.probed). Two forms keep it from merging them:

    - ``alone`` (nothing of the caller's filters the result, as in a key read's own statement): the probe's plain
      comparison, and each other key predicate ``p`` as ``(p) = TRUE``, the same truth test, which MonetDB
      evaluates only on the rows the lookup found. A Storage-alone read of a 17-column stock row took 0.26 ms as
      EXEC, against 0.32 ms in the form below, which projects every column twice (and 0.22 ms with the other keys
      cast to BIGINT, which could change how a value of another type compares).
    - otherwise the probe's rows behind a LIMIT (never reached), which also keeps the caller's filters out of the
      Storage scan: without it, a duplicate check's OR of keys above the snapshot was pushed into it and scanned
      order_line (70 ms instead of 1). The caller's predicates then filter those few rows.
    """
    probe = {_pinned_column(p): p for p in preds}.get(info.probe) if info.probe else None
    if probe is None:
        return _storage(info, None, preds), _where(preds, None)
    if alone:
        parts: list[exp.Expression] = [exp.Paren(this=_requalify(probe, None))]
        parts += [
            exp.EQ(this=exp.Paren(this=_requalify(p, None)), expression=exp.true()) for p in preds if p is not probe
        ]
        return _storage(info, None, preds), reduce(lambda left, right: exp.And(this=left, expression=right), parts)
    probed = _select(_user_cols(cols), _storage(info, None, [probe]), _where([probe], None))
    probed.set("limit", exp.Limit(expression=exp.Literal.number(NO_LIMIT)))
    return _from(probed, f"tq_p{tag}"), _where(preds, None)


# What a version carries besides its row, for whoever ranks versions: a tombstone flag, its commit timestamp
# (NULL for the reading transaction's own, 0 for Storage) and its statement's order within its transaction
VERSION_COLUMNS = ("tq_deleted", "tq_cts", "tq_seq")


def _newest(
    cols: Sequence[str], key: Sequence[str], source: exp.Query, tag: str, after: Sequence[exp.Expression] = ()
) -> exp.Select:
    """The newest version of each key in ``source``, unless a tombstone; then the ``after`` filters (which must not
    go below the ranking: they could drop the newest version and let an older one win)."""
    order = exp.Order(
        expressions=[exp.Ordered(this=_col(c), desc=True, nulls_first=True) for c in ("tq_cts", "tq_seq")]
    )
    rank = exp.Window(this=exp.RowNumber(), partition_by=_user_cols(key), order=order, over="OVER")
    ranked = _select([*_user_cols(cols), _col("tq_deleted"), _as(rank, "tq_rk")], _from(source, f"tq_u{tag}"))
    newest = [exp.EQ(this=_col("tq_rk"), expression=exp.Literal.number(1)), exp.Not(this=_col("tq_deleted"))]
    return _select(_user_cols(cols), _from(ranked, f"tq_r{tag}"), _where(after, None, newest))


def _analytical(
    info: TableInfo,
    cols: Sequence[str],
    preds: Sequence[exp.Expression],
    row_preds: Sequence[exp.Expression],
    latest: bool,
    own: bool,
    tag: str,
    left_anti_join: bool,
    barrier: bool,
    semi: Sequence[exp.Expression],
) -> exp.Select:
    """Storage rows no visible Cache version overrides, plus the newest Cache version of each key."""
    st, v = f"tq_s{tag}", f"tq_v{tag}"
    matches = [exp.EQ(this=column_ref(k, _own(v)), expression=column_ref(k, _own(st))) for k in info.key]
    match = reduce(lambda left, right: exp.And(this=left, expression=right), matches)
    overriding = _union(*_visible_cache(info, cols, preds, latest, own, f"{tag}a"))
    if left_anti_join:
        hits = _select([*_user_cols(info.key), _as(exp.true(), "tq_hit")], _from(overriding, f"tq_h{tag}"))
        stable = _select(_user_cols(cols, st), _storage(info, st, [*preds, *row_preds]))
        stable.set("joins", [exp.Join(this=_from(hits, v), side="LEFT", on=match)])
        absent: exp.Expression = exp.Is(this=_col("tq_hit", v), expression=exp.Null())
    else:
        overriders = _select([exp.Literal.number(1)], _from(overriding, v), match)
        absent = exp.Not(this=exp.Exists(this=overriders))
        stable = _select(_user_cols(cols, st), _storage(info, st, [*preds, *row_preds]))
    stable.set("where", exp.Where(this=_where([*preds, *row_preds, *semi], st, [absent])))
    recent = _newest(cols, info.key, _union(*_visible_cache(info, cols, preds, latest, own, tag)), tag, row_preds)
    # the LIMIT (never reached) keeps MonetDB from pushing the query's joins into the union, which made plans
    # of several joined snapshots up to 10x slower (CH's Q8); filters on this table are already inside
    both = _select(_user_cols(cols), _from(_union(stable, recent), f"tq_b{tag}"))
    if barrier:
        both.set("limit", exp.Limit(expression=exp.Literal.number(NO_LIMIT)))
    return both


def snapshot_tree(
    info: TableInfo,
    formulation: str,
    preds: Sequence[Predicate] = (),
    *,
    expose_rowid: bool = False,
    latest: bool = False,
    own: bool = True,
    columns: Sequence[str] | None = None,
    row_preds: Sequence[exp.Expression] = (),
    tag: str = "",
    left_anti_join: bool = False,
    barrier: bool = True,
    semi: Sequence[exp.Expression] = (),
    ranked: bool = True,
    cached: bool = True,
    stored: bool = True,
    alone: bool = False,
) -> exp.Select:
    """The snapshot of ``info`` as a tree; ``sts``/``txid`` are slots. ``preds`` are the query's key predicates
    (copied, never changed). ``latest`` drops the sts bound (a negative control for consistency checking only);
    ``own=False`` leaves out the transaction's own writes (for a transaction that has written none to this table);
    ``columns`` limits the snapshot to those columns and the key (None: every column). ``row_preds`` (analytical
    only) are the query's filters on this table alone: they may filter Storage rows before the anti-join, as the
    anti-join removes whole keys, and the newest Cache versions after their ranking. ``tag`` suffixes every table
    alias of the snapshot: MonetDB (11.41) plans a join of several subqueries that reuse the same inner aliases
    badly - CH's Q8 took 0.11 s instead of 0.01 s - so each snapshot of a statement gets its own. ``left_anti_join``
    removes overridden Storage rows by a LEFT JOIN instead of NOT EXISTS: MonetDB 11.41 answers IN and EXISTS
    wrongly over an empty subquery holding a NOT EXISTS (``x NOT IN`` false, ``EXISTS`` true), so snapshots inside
    such subqueries use it (tests/test_differential_regressions.py). ``barrier=False`` leaves out the analytical
    union's never-reached LIMIT, for a statement with no join to keep out of it: the LIMIT makes MonetDB build the
    union whole before the query's aggregate, 15-20 ms of CH's Q6 at scale 1.0. ``semi`` (analytical only) are
    the query's ``col IN (subquery)`` filters on this table, their subqueries already reading snapshots: they filter
    Storage rows before the anti-join as ``row_preds`` do, and nothing else (the query applies them again to every
    row; in the Cache branches each copy would evaluate the subquery once more). ``ranked=False`` (point only): every
    visible version of the keys ``preds`` pin, with ``tq_deleted``, ``tq_cts`` and ``tq_seq``, for the client to
    rank (rewrite/point.py, newest_versions). ``cached=False``: the Storage rows alone, for keys (point) or a table
    (analytical) no Cache row has (tique/cache_keys.py); unranked, without the version columns. ``stored=False``
    (point, unranked): the visible Cache versions alone, with the version columns; a key with one needs no Storage
    row, since a visible Cache version outranks any Storage row (rewrite/point.py, newest_versions). ``alone``
    (point only): the statement is the snapshot itself, with no filter of the caller's above it (see
    _stable_rows)."""
    wanted = info.column_names if columns is None else [c for c in info.column_names if c in columns or c in info.key]
    wanted = wanted or info.column_names[:1]  # COUNT(*) of a table keyed by its hidden row id: some column
    cols = list(wanted)
    if info.has_rowid:  # the version key: both formulations match or rank versions by it
        cols.append(ROWID)
    out_cols = list(wanted) + ([ROWID] if expose_rowid and info.has_rowid else [])
    pushed = [_predicate(p) for p in preds]
    if formulation == "point" and not cached:
        # Storage holds one row per key and no tombstones: nothing to rank, and no version columns for the client
        # (3 constant columns cost a Storage-alone stock read about 0.1 ms of the engine's 1)
        tree = _select(_user_cols(cols), *_stable_rows(info, cols, pushed, tag, alone))
        if not ranked:
            return tree
    elif formulation == "point":
        branches = _visible_cache(info, cols, pushed, latest, own, tag)
        if stored:
            stable = _select(
                [
                    *_user_cols(cols),
                    _as(exp.false(), "tq_deleted"),
                    _as(_ZERO_CTS.copy(), "tq_cts"),
                    _as(exp.Literal.number(0), "tq_seq"),
                ],
                *_stable_rows(info, cols, pushed, tag, alone),
            )
            branches.insert(0, stable)
        else:
            assert not ranked, "the Cache versions alone are ranked by the client"
        source = _union(*branches)
        if not ranked:
            return _select([*_user_cols(cols), *(_col(c) for c in VERSION_COLUMNS)], _from(source, f"tq_u{tag}"))
        tree = _newest(cols, info.key, source, tag)
    elif not cached:  # a table no Cache row has: no anti-join, no union to keep the query's joins out of
        assert ranked, "only a point read leaves the ranking to the client"
        st = f"tq_s{tag}"
        # the query's filters go in as in the analytical form: beside another table's snapshot (behind its
        # LIMIT), MonetDB 11.41 joined the bare table before filtering it (CH's Q20 0.14 -> 0.70 s without them)
        stored_rows = _storage(info, st, [*pushed, *row_preds])
        tree = _select(_user_cols(cols, st), stored_rows, _where([*pushed, *row_preds, *semi], st))
    else:
        assert ranked, "only a point read leaves the ranking to the client"
        tree = _analytical(info, cols, pushed, row_preds, latest, own, tag, left_anti_join, barrier, semi)
    if out_cols != cols:
        tree = _select(_user_cols(out_cols), _from(tree, f"tq_o{tag}"))
    return tree


def snapshot_sql(
    info: TableInfo,
    formulation: str,
    preds: Sequence[Predicate] = (),
    *,
    row_preds: Sequence[exp.Expression] = (),
    **kw: object,
) -> str:
    """The snapshot as SQL text, for statements tique writes as text (constraints.py). Printing a snapshot costs
    a millisecond or two, and a duplicate or constraint check asks for one per statement with new values each
    time: so the text of each shape is printed once, with markers where the values of the key lists and the
    row filters go, and filled in per call."""
    lists = [_KEY_LIST.fullmatch(p) if isinstance(p, str) else None for p in preds]
    if None in lists:  # a predicate given as a tree: printed with the rest
        tree = snapshot_tree(info, formulation, preds, row_preds=row_preds, **kw)  # type: ignore[arg-type]
        return tree.sql(dialect=MonetDB)
    values = [m.group(2) for m in lists if m is not None]
    columns = tuple(m.group(1) for m in lists if m is not None)
    options = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in kw.items()))
    shape = _shape_sql(info, info.probe, formulation, columns, len(row_preds), options)

    def fill(kind: str, i: int, qualifier: str | None) -> str:
        if kind == "hexrows":
            found = _on_hex_text(info, row_preds[i])
            return "TRUE" if found is None else found.sql(dialect=MonetDB)
        return values[i] if kind == "values" else _requalify(row_preds[i], qualifier).sql(dialect=MonetDB)

    return "".join(p if isinstance(p, str) else fill(*p) for p in shape)


# the nonce: no name or value tique puts in a snapshot can look like a marker
_MARKER = re.compile(rf"(?:(\w+)\.)?tq{NONCE}_(values|rows|hexrows)_(\d+)")
_ROW_MARKER = re.compile(rf"tq{NONCE}_rows_(\d+)")


@lru_cache(maxsize=1024)
def _shape_sql(
    info: TableInfo,
    probe: str,
    formulation: str,
    columns: tuple[str, ...],
    row_filters: int,
    options: tuple[tuple[str, object], ...],
) -> tuple[str | tuple[str, int, str | None], ...]:
    """A snapshot's text, cut where the values of the i-th key list go, ("values", i, None), and the i-th row
    filter with its columns qualified by an alias of the snapshot, ("rows", i, alias or None): a marker column
    stands in for the filter while the tree is built (``probe``: part of the key, as TableInfo's equality leaves
    it out)."""
    preds = [f"{{t}}{col} IN (tq{NONCE}_values_{i})" for i, col in enumerate(columns)]
    rows = [exp.Column(this=_own(f"tq{NONCE}_rows_{i}")) for i in range(row_filters)]
    tree = snapshot_tree(info, formulation, preds, row_preds=rows, **dict(options))  # type: ignore[arg-type]
    text = tree.sql(dialect=MonetDB)
    pieces: list[str | tuple[str, int, str | None]] = []
    end = 0
    for marker in _MARKER.finditer(text):
        pieces += [text[end : marker.start()], (marker.group(2), int(marker.group(3)), marker.group(1))]
        end = marker.end()
    return (*pieces, text[end:])
