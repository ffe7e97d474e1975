"""Review 17: statements of the session's own that make MonetDB drop its prepared statements (measured on 11.41)
but that PreparingConnection does not notice (tique/engine/base.py drops_prepared): its next EXEC finds nothing and
the session stops preparing for good (and inside an engine transaction, that EXEC's failure would abort it)."""

from __future__ import annotations

from collections.abc import Callable

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


def test_a_view_created_over_a_tique_table_keeps_the_session_preparing(
    connect: Connect, unique_name: Callable[[str], str]
) -> None:
    """CREATE VIEW over a tique table goes through execute_atomically (ddl_views.create_view), which
    PreparingConnection does not look at with drops_prepared."""
    name = unique_name("r17v")
    conn = connect()
    _table(conn, name)
    _prepared_reads(conn, name, range(3))
    session = conn._raw
    assert session._ids and session.enabled
    conn.cursor().execute(f"CREATE VIEW {name}_v AS SELECT k, v FROM {name}")
    conn.commit()
    _prepared_reads(conn, name, range(3, 8))
    assert session.enabled, "the session stopped preparing after its own CREATE VIEW (execute_atomically)"


def test_a_ddl_text_with_a_leading_comment_keeps_the_session_preparing(
    connect: Connect, unique_name: Callable[[str], str]
) -> None:
    """drops_prepared looks at statement heads only: a comment before the DDL hides it."""
    name = unique_name("r17c")
    conn = connect()
    _table(conn, name)
    _prepared_reads(conn, name, range(3))
    session = conn._raw
    assert session._ids and session.enabled
    conn.cursor().execute(f"/* schema change */ CREATE SCHEMA {name}_s")
    conn.commit()
    _prepared_reads(conn, name, range(3, 8))
    assert session.enabled, "the session stopped preparing after its own DDL that began with a comment"


def test_dropping_a_tique_table_keeps_the_session_preparing(
    connect: Connect, unique_name: Callable[[str], str]
) -> None:
    """DROP TABLE of a tique table runs its physical drops through execute_atomically (catalog.unregister), which
    PreparingConnection does not look at with drops_prepared."""
    name = unique_name("r17d")
    conn = connect()
    _table(conn, name)
    _table(conn, f"{name}_x")
    _prepared_reads(conn, name, range(3))
    session = conn._raw
    assert session._ids and session.enabled
    conn.cursor().execute(f"DROP TABLE {name}_x")
    conn.commit()
    _prepared_reads(conn, name, range(3, 8))
    assert session.enabled, "the session stopped preparing after its own DROP TABLE (execute_atomically)"
