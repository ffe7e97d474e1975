"""Any table or column name works through tique, and no name can inject SQL: every identifier tique writes goes
through one quoting function (tique/names.py, sqlglot's quoting in MonetDB's spelling).

Found by the security probe (issue 16, item 3): a quoted mixed-case name failed on UPDATE ("no such column
'mixedcase.id'"), a table "order" failed on SELECT/UPDATE, "o'brien" failed with tique's internal SQL in the
message, and an embedded double quote in a column name injected SQL: ``CREATE TABLE evil (id INT PRIMARY KEY,
"x"" INT); DROP TABLE victim__cache; CREATE TABLE zz (""y" INT)`` ran the DROP and left a database that could
not be opened.

A generated corpus of names (quotes, reserved words, case, unicode, spaces, tique's own suffixes, braces,
percent signs) goes through CREATE TABLE, INSERT (literal and parameters), SELECT, UPDATE, DELETE, COMMIT, a
checkpoint and a restart of the database; every answer equals what was written.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import tique
from tests.conftest import ServeProcess, start_serve
from tique.checkpoint import Checkpointer
from tique.engine import open_engine
from tique.names import quote

FRAGMENTS = ['x" INT', "o'brien", "order", "select", "user", "MixedCase", "ünïcødé 名", "with space", "page__cache"]
EXTRA = ["a;b", '"', "{t}", "50%s", "x); DROP TABLE victim; --", "tq_txid2", "Select"]


def corpus() -> list[str]:
    """Names: each fragment, the extras, and pairs of fragments (so each quirk also appears mid-name)."""
    pairs = [a + b for a, b in itertools.islice(itertools.permutations(FRAGMENTS, 2), 0, None, 9)]
    names = list(dict.fromkeys(FRAGMENTS + EXTRA + pairs))
    return [n for n in names if len(n.encode()) < 60]  # Storage names add a prefix and suffix to the table's


NAMES = corpus()


def columns_of(i: int) -> tuple[str, str]:
    """A key and a value column for table i, also taken from the corpus (two different names)."""
    return NAMES[(i + 1) % len(NAMES)], NAMES[(i + 2) % len(NAMES)] + "_v"


def has_key(i: int) -> bool:
    """Every other table has no primary key: its versions are keyed by tique's hidden row id."""
    return i % 2 == 0


def _contents(conn: tique.Connection, i: int) -> list[tuple[int, str]]:
    key, value = columns_of(i)
    cur = conn.cursor()
    cur.execute(f"SELECT {quote(key)}, {quote(value)} FROM {quote(NAMES[i])} ORDER BY {quote(key)}")
    return [(int(k), str(v)) for k, v in cur.fetchall()]


def _expected(i: int) -> list[tuple[int, str]]:
    return [(1, f"new {NAMES[i]}"), (3, NAMES[i][::-1])]


def qp(name: str) -> str:
    """A quoted name in a statement with parameters: pyformat (as pymonetdb) reads every %, so % is written %%."""
    return quote(name).replace("%", "%%")


def _write_all(conn: tique.Connection) -> None:
    cur = conn.cursor()
    for i, name in enumerate(NAMES):
        key, value = columns_of(i)
        pk = " PRIMARY KEY" if has_key(i) else ""
        cur.execute(f"CREATE TABLE {quote(name)} ({quote(key)} INT{pk}, {quote(value)} VARCHAR(80))")
        cur.execute(f"INSERT INTO {quote(name)} VALUES (1, 'one'), (2, 'two')")
        cur.execute(f"INSERT INTO {qp(name)} ({qp(value)}, {qp(key)}) VALUES (%s, %s)", (name[::-1], 3))
        conn.commit()
        cur.execute(f"UPDATE {qp(name)} SET {qp(value)} = %s WHERE {qp(key)} = 1", (f"new {name}",))
        cur.execute(f"DELETE FROM {quote(name)} WHERE {quote(key)} = 2")
        assert _contents(conn, i) == _expected(i), name  # own writes
        conn.commit()


def _check_all(url: str, when: str) -> None:
    conn = tique.connect(url)
    for i, name in enumerate(NAMES):
        assert _contents(conn, i) == _expected(i), f"{when}: table {name!r}"
    conn.close()


def test_every_name_round_trips_through_checkpoint_and_restart(served: ServeProcess, tmp_path: Path) -> None:
    conn = tique.connect(served.url)
    _write_all(conn)
    conn.close()
    _check_all(served.url, "after commit")
    raw = open_engine(served.url).connect()
    report = Checkpointer(raw).run_once()
    assert not report.errors, report.errors
    assert report.moved > 0
    raw.close()
    _check_all(served.url, "after checkpoint")
    served.stop()
    served.proc = start_serve(served.directory, port=served.port).proc
    _check_all(served.url, "after restart")
    conn = tique.connect(served.url)  # and every table still takes writes
    cur = conn.cursor()
    for i, name in enumerate(NAMES):
        key, value = columns_of(i)
        cur.execute(f"UPDATE {quote(name)} SET {quote(value)} = {quote(value)} || '!' WHERE {quote(key)} = 3")
    conn.commit()
    for i, name in enumerate(NAMES):
        assert _contents(conn, i)[-1] == (3, name[::-1] + "!"), name
    conn.close()


INJECTIONS = [
    'CREATE TABLE evil (id INT PRIMARY KEY, "x"" INT); DROP TABLE victim__cache; CREATE TABLE zz (""y" INT)',
    'CREATE TABLE evil2 (id INT PRIMARY KEY, "x"" INT); DROP TABLE tique_data.sys__victim__cache; '
    'CREATE TABLE zz (""y" INT)',
    'CREATE TABLE "evil3"" (id INT); DROP TABLE tique_data.sys__victim__storage; --" (id INT PRIMARY KEY)',
]


def test_injected_names_drop_nothing(served: ServeProcess) -> None:
    conn = tique.connect(served.url)
    cur = conn.cursor()
    cur.execute("CREATE TABLE victim (id INT PRIMARY KEY, v VARCHAR(10))")
    cur.execute("INSERT INTO victim VALUES (1, 'kept')")
    conn.commit()
    for statement in INJECTIONS:  # each is one CREATE TABLE with a strange name: it works as one
        cur.execute(statement)
        conn.commit()
    cur.execute("INSERT INTO evil VALUES (1, 2)")
    cur.execute('SELECT "x"" INT); DROP TABLE victim__cache; CREATE TABLE zz (""y" FROM evil')
    assert cur.fetchall() == [(2,)]
    conn.commit()
    conn.close()
    served.stop()
    served.proc = start_serve(served.directory, port=served.port).proc
    conn = tique.connect(served.url)
    cur = conn.cursor()
    cur.execute("SELECT id, v FROM victim")
    assert cur.fetchall() == [(1, "kept")]
    cur.execute('SELECT "x"" INT); DROP TABLE victim__cache; CREATE TABLE zz (""y" FROM evil')
    assert cur.fetchall() == [(2,)]
    conn.close()


@pytest.mark.parametrize("name", ["o'brien", 'x" INT', "order", "MixedCase"])
def test_errors_name_the_users_statement_not_tiques(served: ServeProcess, name: str) -> None:
    """A failing statement on such a table reports the user's problem, never tique's internal SQL."""
    conn = tique.connect(served.url)
    cur = conn.cursor()
    table = quote(f"err {name}")
    cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, {quote(name)} INT)")
    cur.execute(f"INSERT INTO {table} VALUES (1, 1)")
    conn.commit()
    failing = [
        (f"INSERT INTO {table} VALUES (1, 2)", tique.IntegrityError),
        (f"UPDATE {table} SET {quote(name)} = 'nope' WHERE id = 1", tique.DatabaseError),
        (f"SELECT {quote(name + 'missing')} FROM {table}", tique.ProgrammingError),
    ]
    for statement, error in failing:
        with pytest.raises(error) as caught:
            cur.execute(statement)
            conn.commit()
        message = str(caught.value)
        assert "tique_data" not in message and "tq_" not in message, message
        conn.rollback()
    conn.close()


def test_statements_tique_reads_by_pattern_find_quoted_names(served: ServeProcess, tmp_path: Path) -> None:
    """COPY INTO and ALTER TABLE ... SET READ ONLY (read by a regular expression, sqlglot cannot) find a table
    whose quoted name holds a doubled quote: COPY loads it inside the transaction, SET READ ONLY is refused for
    it as for any transactional table."""
    conn = tique.connect(served.url)
    cur = conn.cursor()
    name = 'q"t.x'
    cur.execute(f"CREATE TABLE {quote(name)} (id INT PRIMARY KEY)")
    conn.commit()
    data = tmp_path / "rows.csv"
    data.write_text("1\n")
    cur.execute(f"COPY INTO {quote(name)} FROM '{data}'")
    cur.execute(f"SELECT id FROM {quote(name)}")
    assert cur.fetchall() == [(1,)]
    conn.rollback()
    with pytest.raises(tique.NotSupportedError, match="on tique's table"):
        cur.execute(f"ALTER TABLE sys.{quote(name)} SET READ ONLY")
    conn.rollback()
    conn.close()


@pytest.mark.parametrize("name", ['Bulk "Mixed" Case', "bulk o'brien", "bulk select"])
def test_bulk_load_takes_any_name(served: ServeProcess, name: str) -> None:
    conn = tique.connect(served.url)
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {quote(name)} ({quote(name + ' k')} INT, {quote('v ' + name)} VARCHAR(20))")
    conn.commit()
    assert conn.bulk_load(name, [(1, name), (2, None)]) == 2
    cur.execute(f"SELECT {quote(name + ' k')}, {quote('v ' + name)} FROM {quote(name)} ORDER BY 1")
    assert cur.fetchall() == [(1, name), (2, None)]
    conn.close()


@pytest.mark.parametrize("name", ['x" INT', "o'brien", "MixedCase", "a{t}b"])
def test_ddl_takes_any_name(served: ServeProcess, name: str) -> None:
    """Indexes, ALTER TABLE, views, aliases, TRUNCATE, CREATE TABLE AS and DROP on such names."""
    conn = tique.connect(served.url)
    cur = conn.cursor()
    t, k, v, alias = quote("ddl " + name), quote(name + " k"), quote("v" + name), quote("Al " + name)
    new, renamed, copied = quote("new " + name), quote("ddl " + name + " renamed"), quote("ddl " + name + " copy")
    steps = [
        f"CREATE TABLE {t} ({k} INT PRIMARY KEY, {v} INT)",
        f"INSERT INTO {t} VALUES (1, 10), (2, 20)",
        f"CREATE INDEX {quote('ix ' + name)} ON {t} ({v})",
        f"ALTER TABLE {t} ADD COLUMN {new} INT DEFAULT 5",
        f"CREATE VIEW {quote('view ' + name)} AS SELECT {k}, {v} FROM {t} WHERE {v} > 10",
        f"UPDATE {t} AS {alias} SET {v} = {alias}.{v} + 1 WHERE {alias}.{k} = 1",
    ]
    for statement in steps:
        cur.execute(statement)
        conn.commit()
    cur.execute(f"SELECT * FROM {quote('view ' + name)} ORDER BY 1")
    assert cur.fetchall() == [(1, 11), (2, 20)]
    cur.execute(f"SELECT {t}.{k}, {v}, {new} FROM {t} ORDER BY 1")
    assert cur.fetchall() == [(1, 11, 5), (2, 20, 5)]
    for statement in [
        f"DROP VIEW {quote('view ' + name)}",
        f"DROP INDEX {quote('ix ' + name)}",
        f"ALTER TABLE {t} DROP COLUMN {new}",
        f"ALTER TABLE {t} RENAME TO {renamed}",
        f"CREATE TABLE {copied} AS SELECT * FROM {renamed}",
        f"TRUNCATE TABLE {renamed}",
    ]:
        cur.execute(statement)
        conn.commit()
    cur.execute(f"SELECT COUNT(*) FROM {renamed}")
    assert cur.fetchall() == [(0,)]
    cur.execute(f"SELECT * FROM {copied} ORDER BY 1")
    assert cur.fetchall() == [(1, 11), (2, 20)]
    cur.execute(f"DROP TABLE {renamed}")
    cur.execute(f"DROP TABLE {copied}")
    conn.commit()
    conn.close()
