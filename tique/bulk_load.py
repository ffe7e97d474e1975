"""bulk_load and bulk_load_csv: rows straight into a table's Storage as stable data, outside the commit protocol.

Storage's primary key refuses a key already stored, but the newest versions of keys written since the last
checkpoint live in the Cache, and the snapshot prefers them: a loaded row with such a key would be hidden by a
committed one (a second copy of a key, accepted) or by a delete (loaded, never seen), and so would one a writer
still buffers or commits while the load runs. So a table with a primary key is loaded in two parts: its rows
go to a temporary table of the session (the long part), then one engine transaction refuses the load if a key
has a live Cache version and moves the rows into Storage. That second part runs as a committed change of the
table (``publish``: Connection._load, tique/versioned.py), after every earlier commit is published, so their
rows are in reach of the check; a transaction that used the table and commits later fails its certification.
Tables without a key (hidden row ids) and plain tables cannot be hidden: loaded straight, all or nothing.

Storage's rows land in slots that deleted rows left, where MonetDB may keep the old row's REAL or DOUBLE zero
(tique/zero_signs.py): rows of a transactional table with such columns are appended from a staging table, and
checked against it, in the engine transaction that appends them (``_into_storage``)."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from tique import errors
from tique.append_guard import cache_of, reading_part, storage_of
from tique.catalog import ROWID, ROWID_BITS, TableInfo, still_current
from tique.engine.base import RawConnection, one_transaction, retried_on_conflict
from tique.names import qualified, quote
from tique.params import literal
from tique.rewrite.exact import read_value, text_sql
from tique.rewrite.values import coerce, key_value
from tique.storage import refusal_judge
from tique.write_buffer import show
from tique.zero_signs import negative_zero, zero_signs_kept, zeros_copied

# rows of these transactions are never visible: they do not hide a loaded row
_ABORTED = "SELECT txid FROM tique.outcomes WHERE NOT ok"


def target(info: TableInfo) -> str:
    """The table a load writes: a transactional table's Storage, or a plain table itself."""
    return info.storage if info.kind == "tx" else qualified(info.schema, info.name)


Publish = Callable[[Callable[[], None]], None]  # runs the move into Storage as a committed change of the table


def keyed(info: TableInfo) -> bool:
    """Can a loaded row of ``info`` be hidden by a Cache version (a transactional table with a primary key)?
    Such loads are staged, then moved into Storage by ``publish`` (Connection._load)."""
    return info.kind == "tx" and bool(info.key) and not info.has_rowid


def _signed_zeros(info: TableInfo) -> list[str]:
    """The REAL and DOUBLE columns of a transactional table whose zeros a load must check (a key's zeros are
    always 0.0: values.key_value)."""
    if info.kind != "tx":
        return []
    return [n for i, n in enumerate(info.stored_names) if i in info.float_positions and n not in info.key]


def load_rows(
    raw: RawConnection,
    info: TableInfo,
    table: str,
    rows: Iterable[Sequence[Any]],
    batch: int,
    publish: Publish,
    check_space: Callable[[], None],
    fresh_id: Callable[[], int],
) -> int:
    """bulk_load's rows into ``info``, all or nothing (a refusal or a kill leaves nothing loaded); the number
    loaded. A keyed table's rows are staged in a temporary table first, so the part run by ``publish`` (which
    holds later commits back until it ends) is one INSERT ... SELECT, not the rows' parsing; so are a keyless
    table's with REAL or DOUBLE columns (``_into_storage``). ``check_space`` runs before each batch (a full disk:
    StorageFull before the engine's log breaks); ``fresh_id`` gives a new transaction id (``_rowids``)."""
    stored = target(info)
    keys = [info.column_names.index(k) for k in info.key if k in info.column_names]
    rowids = _rowids(fresh_id) if info.has_rowid and info.kind == "tx" else None
    staged_rowids = rowids is not None and bool(_signed_zeros(info))
    staging = f"tmp.tq_load_{info.table_id}" if keyed(info) or staged_rowids else None
    total = staged = 0  # rows, and their literals' bytes (about what the move writes)
    chunk: list[str] = []
    negative = False  # a -0.0 in the chunk, whose sign a statement may merge (tique/zero_signs.py)

    def send() -> None:
        nonlocal negative
        if chunk:
            check_space()
            with zero_signs_kept(raw, negative), _appending(raw, info, staging is None):
                raw.execute(f"INSERT INTO {staging or stored} VALUES {', '.join(chunk)}")
            chunk.clear()
            negative = False

    with _staged(raw, info, staging, rowids=staged_rowids):
        with refusals(table, info), one_transaction(raw):
            if staging is None and info.kind == "tx":  # rows straight into Storage, by its name
                still_current(raw, info, f"bulk_load into {table!r}")
            for row in rows:
                if len(row) != len(info.columns):
                    raise errors.ProgrammingError(
                        f"bulk_load: {table!r} has {len(info.columns)} columns, a row has {len(row)}"
                    )
                coerced = [coerce(v, c.sql_type, c.name, info.name) for v, c in zip(row, info.columns)]
                for i in keys:  # a key's -0.0 is stored as 0.0, as the Cache's are (values.key_value)
                    coerced[i] = key_value(coerced[i])
                negative = negative or negative_zero(coerced)
                values = [literal(v) for v in coerced]
                if rowids is not None:
                    values.append(str(next(rowids)))
                chunk.append("(" + ", ".join(values) + ")")
                total += 1
                staged += len(chunk[-1])
                if len(chunk) >= batch:
                    send()
            send()
        if staged_rowids and staging:
            _append_staged(raw, info, staging, table, staged)
        elif staging and total:  # an empty load changes nothing: no committed change to fail others with
            publish(lambda: _move(raw, info, staging, table, staged))
    return total


def load_csv(
    raw: RawConnection,
    info: TableInfo,
    table: str,
    source: str,
    delimiter: str,
    null: str,
    publish: Publish,
    fresh_id: Callable[[], int],
) -> int:
    """bulk_load_csv's file into ``info`` with MonetDB's COPY INTO, all or nothing; the number loaded. Staged as
    load_rows' rows are, and for a table with hidden row ids (numbered in a second staging table)."""
    stored = target(info)
    options = f"USING DELIMITERS {literal(delimiter)}, E'\n', '\"' NULL AS {literal(null)}"
    cols = ", ".join(quote(c) for c in info.column_names)
    rowids = info.has_rowid and info.kind == "tx"
    if not keyed(info) and not rowids:
        before = _count(raw, stored)
        with refusals(table, info):
            _copy(raw, info, f"COPY INTO {stored} ({cols}) FROM {literal(source)} {options}")
        return _count(raw, stored) - before
    staging = f"tmp.tq_load_{info.table_id}"
    with _staged(raw, info, staging):
        with refusals(table, info):
            _copy(raw, info, f"COPY INTO {staging} FROM {literal(source)} {options}")
        loaded = _count(raw, staging)  # (a COPY's row count over MAPI is not the rows it loaded)
        if keyed(info):
            if loaded:  # an empty load changes nothing: no committed change to fail others with
                publish(lambda: _move(raw, info, staging, table, _file_size(source)))
            return loaded
        numbered = f"tmp.tq_loadn_{info.table_id}"
        with _staged(raw, info, numbered, rowids=True):
            raw.execute(f"INSERT INTO {numbered} {_numbered(cols, staging, loaded, fresh_id)}")
            _append_staged(raw, info, numbered, table, _file_size(source))
        return loaded


def _appending(raw: RawConnection, info: TableInfo, writes: bool = True) -> contextlib.AbstractContextManager[None]:
    """Around a statement that appends to the table's Storage: its readers in this process run again
    (tique/append_guard.py)."""
    guard = getattr(raw, "append_guard", None)
    if guard is None or not writes or not info.has_strings:
        return contextlib.nullcontext()
    return guard.appending([storage_of(info.qualified)])  # type: ignore[no-any-return]


def _cache_may_hide(raw: RawConnection, info: TableInfo) -> bool:
    """Does the Cache hold rows of a transaction that committed or may still commit (a rolled-back one's too:
    its rows carry no outcome until the checkpointer drops them, at its first run after the rollback)? The load
    runs after every earlier commit is published (Connection._load), so their rows are here."""
    found = raw.execute(f"SELECT COUNT(*) FROM {info.cache} WHERE tq_txid NOT IN ({_ABORTED})").scalar()
    return bool(found)


@contextlib.contextmanager
def _staged(raw: RawConnection, info: TableInfo, staging: str | None, rowids: bool = False) -> Iterator[None]:
    """A temporary table ``staging`` of the session for the load's rows (with their hidden row ids when
    ``rowids``), dropped after the block; none when ``staging`` is None."""
    if staging is None:
        yield
        return
    columns = ", ".join(
        [f"{quote(c.name)} {c.sql_type}" for c in info.columns] + ([f"{ROWID} BIGINT"] if rowids else [])
    )
    name = staging.removeprefix("tmp.")
    raw.execute(f"CREATE LOCAL TEMPORARY TABLE {name} ({columns}) ON COMMIT PRESERVE ROWS")
    try:
        yield
    finally:
        with contextlib.suppress(errors.Error):  # a lost session took it along
            raw.execute(f"DROP TABLE {staging}")


def _file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _move(raw: RawConnection, info: TableInfo, staging: str, table: str, size: int) -> None:
    """The staged rows into Storage in one engine transaction, unless a key among them has a Cache version that
    would hide it. Run after every earlier commit is published, so their rows are in reach.

    A writer that begins once the load's commit is visible inserts its keys past the loaded rows' check. The
    load's commit becomes visible when the move ends, or earlier if the move outlasts the commit lease (other
    sessions then settle it as stuck): so the move also writes the Cache (a DELETE that matches nothing), which
    makes MonetDB refuse it when any append to the Cache committed meanwhile; it runs again, changed nothing.
    Such refusals are routine, so each is judged a failed write (storage.py) only within twice the rows' ``size``
    (bytes, as text) of the minimum free space: the room a write of them could have lacked."""

    def attempt() -> None:
        with refusals(table, info), one_transaction(raw):
            still_current(raw, info, f"bulk_load into {table!r}")
            raw.execute(f"DELETE FROM {info.cache} WHERE tq_txid = -1")  # no transaction has that id
            if _cache_may_hide(raw, info):
                _refuse_hidden(raw, info, staging, table)
            _into_storage(raw, info, staging)

    judge = refusal_judge(raw, 2 * size + (1 << 20))
    retried_on_conflict(attempt, f"bulk_load into {table!r}", judge=judge)


def _into_storage(raw: RawConnection, info: TableInfo, staging: str) -> None:
    """The staged rows appended to Storage, inside the caller's engine transaction, and their REAL and DOUBLE
    zeros checked against the staged ones (zero_signs.zeros_copied)."""
    cols = ", ".join(quote(c) for c in info.stored_names)
    floats = {info.stored_names[i] for i in info.float_positions}
    # a key's -0.0 as 0.0, as bulk_load and the Cache store it (a CSV's reaches the staging table as written)
    values = ", ".join(
        f"CASE WHEN {quote(c)} = 0 THEN 0e0 ELSE {quote(c)} END" if c in floats and c in info.key else quote(c)
        for c in info.stored_names
    )
    with _appending(raw, info):
        raw.execute(f"INSERT INTO {info.storage} ({cols}) SELECT {values} FROM {staging}")
    zeros_copied(raw, info.storage, staging, info.key, _signed_zeros(info))


def _append_staged(raw: RawConnection, info: TableInfo, staging: str, table: str, size: int) -> None:
    """The staged rows of a table without a key (their row ids given) into Storage, in one engine transaction,
    run again when MonetDB refuses it for a concurrent change (``zeros_copied``'s UPDATEs can meet the
    checkpointer's writes); refusals judged as in ``_move``."""

    def attempt() -> None:
        with refusals(table, info), one_transaction(raw):
            still_current(raw, info, f"bulk_load into {table!r}")
            _into_storage(raw, info, staging)

    retried_on_conflict(attempt, f"bulk_load into {table!r}", judge=refusal_judge(raw, 2 * size + (1 << 20)))


def _refuse_hidden(raw: RawConnection, info: TableInfo, staging: str, table: str) -> None:
    names = [quote(k) for k in info.key]
    same = " AND ".join(f"c.{k} = s.{k}" for k in names)
    as_text = ", ".join(text_sql(f"s.{quote(k)}", info.stored_type(k)) for k in info.key)  # exact in messages
    sql = (
        f"SELECT {as_text} FROM {staging} AS s WHERE EXISTS (SELECT 1 FROM "
        f"{info.cache} AS c WHERE {same} AND c.tq_txid NOT IN ({_ABORTED})) LIMIT 3"
    )
    hidden = reading_part(raw, info, cache_of, sql)  # string keys of the Cache, which commits append to
    if hidden:
        keys = ", ".join(
            show(info, tuple(read_value(v, info.stored_type(k)) for v, k in zip(r, info.key))) for r in hidden
        )
        raise errors.UniqueViolation(
            f"bulk_load into {table!r} was refused and loaded nothing: key {keys} was written (inserted, updated "
            "or deleted) since the last checkpoint, and its newest version, in the Cache, would hide the loaded "
            "row. Write such rows with INSERT or UPDATE, or load them after a checkpoint has moved those versions "
            "to Storage (`tique checkpoint`)",
        )


@contextlib.contextmanager
def refusals(table: str, info: TableInfo) -> Iterator[None]:
    """A constraint the load broke, or a write an ordinary user may not make, said of the user's table (the
    engine names its Storage table)."""
    try:
        yield
    except errors.ProgrammingError as exc:
        if not errors.engine_access_denied(exc):
            raise
        raise errors.ProgrammingError(
            f"bulk_load into {table!r} was refused and loaded nothing: a load writes tique's Storage table "
            "directly, which only tique's owner (the admin) may do; load as the admin",
            exc.sqlstate,
        ) from None
    except errors.IntegrityError as exc:
        said = str(exc)
        if "refused and loaded nothing" in said:
            raise
        if info.kind == "tx":  # its Storage's name, and its constraints' (which keep the name a rename left)
            said = re.sub(r"\w*__storage", info.name, said.replace(f"{info.physical_schema}.", ""))
        keyed = "PRIMARY KEY" in said or "UNIQUE" in said  # (not a NOT NULL's: no key's hint there)
        hint = " (a key already in the table, or given twice among the rows?)" if keyed else ""
        raise errors.IntegrityError(
            f"bulk_load into {table!r} was refused and loaded nothing: {said}{hint}", exc.sqlstate
        ) from None


ROWS_PER_ID = 1 << ROWID_BITS  # row ids a transaction id numbers (catalog.ROWID_BITS)


def _rowids(fresh_id: Callable[[], int]) -> Iterator[int]:
    """Hidden row ids for a load's rows: -((id << 24) | n), for fresh transaction ids (unique across processes,
    never reused), another every 2**24 rows. No transaction's (positive) and no other load's, even one running
    at the same time: loads that counted down from the lowest stored id, read before their engine transaction,
    gave two concurrent loads the same ids (found by a review), and an UPDATE of one such row, once checkpointed,
    deleted the other. Older loads' ids (-1, -2, ...) stay above them until 2**24 rows were loaded so."""
    while True:
        base = fresh_id() << ROWID_BITS
        for n in range(ROWS_PER_ID):
            yield -(base | n)


def _numbered(cols: str, staging: str, rows: int, fresh_id: Callable[[], int]) -> str:
    """A SELECT of ``staging``'s ``rows`` rows (columns ``cols``) with ``_rowids``' ids, by row number."""
    bases = [fresh_id() << ROWID_BITS for _ in range(max(1, -(-rows // ROWS_PER_ID)))]
    blocks = " ".join(f"WHEN {i} THEN {b}" for i, b in enumerate(bases))
    return (
        f"SELECT {cols}, -(CASE tq_n / {ROWS_PER_ID} {blocks} END + tq_n % {ROWS_PER_ID}) "
        f"FROM (SELECT {cols}, ROW_NUMBER() OVER () - 1 AS tq_n FROM {staging}) AS tq_numbered"
    )


def _count(raw: RawConnection, table: str) -> int:
    return int(raw.execute(f"SELECT COUNT(*) FROM {table}").scalar())


def _copy(raw: RawConnection, info: TableInfo, sql: str) -> None:
    """COPY INTO. A value the engine refuses (out of range, too long) is a DataError naming
    the user's table, not tique's Storage table."""
    try:
        raw.execute(sql)
    except errors.DatabaseError as exc:
        message = errors.copy_refused_value(exc)
        if message is None:
            raise
        raise errors.DataError(
            f"bulk_load_csv: a value in the file does not fit table {info.name!r}{message}", "22018"
        ) from None
