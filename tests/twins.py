"""A tique transaction reading tables in every state a version can be in, beside plain MonetDB twins holding what
it should see: the fixture body of the differential snapshot tests (tests/test_snapshot_pushdown.py,
tests/adversarial/test_semi_join_pushdown_attacks.py)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import tique
from tique.database import Database
from tique.engine.base import RawConnection

Reader = tuple[tique.Connection, RawConnection, dict[str, str], dict[str, str]]


@dataclass(frozen=True)
class World:
    """What the tables hold, as statements over ``{name}`` placeholders: created by ``ddl`` (``{t}`` the table),
    ``stable`` rows bulk-loaded into Storage, ``committed`` before the reader's snapshot, ``after`` it by another
    transaction (the reader must not see them), ``own`` the reader's uncommitted writes; ``views`` by name, their
    text over ``{v}`` and the tables' names."""

    ddl: Mapping[str, str]
    stable: Mapping[str, Sequence[tuple[object, ...]]]
    committed: Sequence[str]
    after: Sequence[str]
    own: Sequence[str]
    views: Mapping[str, str] = field(default_factory=dict)
    upper_names: bool = False  # also offer every name as an unquoted upper-case word (MonetDB folds it)


def twin_reader(url: str, prefix: str, world: World) -> Iterator[Reader]:
    """The reader's connection (its snapshot taken after ``committed``), a raw connection, and the names of the
    tique tables and of their twins; everything rolled back and closed afterwards."""
    names = {n: f"{prefix}_t{n}" for n in world.ddl}
    twins = {n: f"{prefix}_p{n}" for n in world.ddl}
    conn, other = tique.connect(url), tique.connect(url)
    raw = Database.get(url).connect_raw()
    try:
        cur = conn.cursor()
        for n, ddl in world.ddl.items():
            cur.execute(ddl.format(t=names[n]))
            raw.execute(ddl.format(t=twins[n]) + " -- tique: plain")
        for v, text in world.views.items():
            names[v], twins[v] = f"{prefix}_t{v}", f"{prefix}_p{v}"
            cur.execute(text.format(**{**names, "v": names[v]}))
            raw.execute(text.format(**{**twins, "v": twins[v]}))
        conn.commit()
        for n, rows in world.stable.items():
            conn.bulk_load(names[n], rows)  # Storage
            values = ", ".join(str(r).replace("None", "NULL") for r in rows)
            raw.execute(f"INSERT INTO {twins[n]} VALUES {values}")
        for sql in world.committed:
            cur.execute(sql.format(**names))
            raw.execute(sql.format(**twins))
        conn.commit()
        cur.execute(f"SELECT COUNT(*) FROM {next(iter(names.values()))}")  # the reader's snapshot starts here
        cur.fetchall()
        ocur = other.cursor()
        for sql in world.after:
            ocur.execute(sql.format(**names))
        other.commit()
        for sql in world.own:
            cur.execute(sql.format(**names))
            raw.execute(sql.format(**twins))
        if world.upper_names:
            for given in (names, twins):
                given.update({n.upper(): given[n].upper() for n in (*world.ddl, *world.views)})
        yield conn, raw, names, twins
    finally:
        conn.rollback()
        conn.close()
        other.close()
        raw.close()
