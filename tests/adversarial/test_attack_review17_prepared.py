"""Review 17: statements of the session's own that make MonetDB drop its prepared statements (measured on 11.41)
but that PreparingConnection does not notice (tique/engine/base.py drops_prepared): its next EXEC finds nothing and
the session stops preparing for good (and inside an engine transaction, that EXEC's failure would abort it)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique

Connect = Callable[..., tique.Connection]


def _prepared_reads(conn: tique.Connection, table: str, ks: range) -> None:
    for k in ks:
        cur = conn.cursor()
        cur.execute(f"SELECT v FROM {table} WHERE k = %s", (k,))
        assert cur.fetchall() == [(f"v{k}",)]
        conn.commit()


def _table(conn: tique.Connection, name: str) -> None:
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v VARCHAR(16))")
    conn.commit()
    conn.bulk_load(name, [(i, f"v{i}") for i in range(20)])


# Each is the session's own DDL: a CREATE VIEW over a tique table and a DROP TABLE of one go through
# execute_atomically (ddl_views.create_view, catalog.unregister); a comment before a DDL hid it from a look at
# statement heads
OWN_DDL = {
    "create view": "CREATE VIEW {name}_v AS SELECT k, v FROM {name}",
    "leading comment": "/* schema change */ CREATE SCHEMA {name}_s",
    "drop table": "DROP TABLE {name}_x",
}


@pytest.mark.parametrize("ddl", OWN_DDL.values(), ids=OWN_DDL.keys())
def test_the_sessions_own_ddl_keeps_it_preparing(connect: Connect, unique_name: Callable[[str], str], ddl: str) -> None:
    name = unique_name("r17")
    conn = connect()
    _table(conn, name)
    _table(conn, f"{name}_x")
    _prepared_reads(conn, name, range(3))
    session = conn._raw
    assert session._ids and session.enabled
    conn.cursor().execute(ddl.format(name=name))
    conn.commit()
    _prepared_reads(conn, name, range(3, 8))
    assert session.enabled, f"the session stopped preparing after its own {ddl.split()[0]} statement"
