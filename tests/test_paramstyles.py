"""Parameter styles: every statement kind takes %s and %(name)s as pymonetdb does, and a bad or missing parameter
is a ProgrammingError. Where a statement needs no tique table, pymonetdb itself (connected straight to the
database `tique serve` serves) is the reference: same rows, or both refuse."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pymonetdb
import pytest

import tique

Connect = Callable[..., tique.Connection]


@pytest.fixture
def tables(connect: Connect, unique_name: Callable[[str], str]) -> tuple[tique.Connection, str, str]:
    conn = connect()
    conn.autocommit = True
    tx, plain = unique_name("ptx"), unique_name("pplain")
    conn.execute(f"CREATE TABLE {tx} (id INT PRIMARY KEY, name VARCHAR(20))")
    conn.execute(f"CREATE TABLE {plain} (id INT, name VARCHAR(20)) -- tique: plain")
    return conn, tx, plain


STYLES = ["tuple", "list", "dict", "dict-odd-names"]


def styled(style: str, template: str, **values: Any) -> tuple[str, Any]:
    """``template`` with ``{name}`` fields as a statement and parameters in one of the shapes pymonetdb takes:
    a tuple or list for %s (in order of appearance), a dict for %(name)s (with a key it does not use)."""
    import string

    names = [field for _, field, _, _ in string.Formatter().parse(template) if field]
    if style in ("tuple", "list"):
        ordered = [values[n] for n in names]
        return template.format(**{n: "%s" for n in names}), tuple(ordered) if style == "tuple" else ordered
    key = (lambda n: f"the {n}-1") if style == "dict-odd-names" else (lambda n: n)
    params = {key(n): v for n, v in values.items()} | {"unused": object()}
    return template.format(**{n: f"%({key(n)})s" for n in names}), params


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("kind", ["tx", "plain"])
def test_every_statement_kind_takes_each_style(
    tables: tuple[tique.Connection, str, str], style: str, kind: str
) -> None:
    conn, tx, plain = tables
    table = tx if kind == "tx" else plain
    cur = conn.cursor()

    def run(template: str, **values: Any) -> list[tuple[Any, ...]] | None:
        cur.execute(*styled(style, template.replace("@T", table), **values))
        return cur.fetchall() if cur.description else None

    run("INSERT INTO @T (id, name) VALUES ({id}, {name})", id=1, name="a%b")
    assert run("SELECT name FROM @T WHERE id = {id}", id=1) == [("a%b",)]
    assert run("SELECT name FROM @T WHERE name LIKE 'a%%' AND id = {id}", id=1) == [("a%b",)]
    run("UPDATE @T SET name = {name} || 'x' WHERE id = {id}", id=1, name="it's")
    assert run("SELECT name FROM @T WHERE id = {id}", id=1) == [("it'sx",)]
    run("DELETE FROM @T WHERE id = {id}", id=1)
    assert run("SELECT COUNT(*) FROM @T WHERE id = {id}", id=1) == [(0,)]


def test_ddl_with_parameters(tables: tuple[tique.Connection, str, str], unique_name: Callable[[str], str]) -> None:
    conn, _, _ = tables
    name = unique_name("pddl")
    conn.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, v VARCHAR(10) DEFAULT %(d)s)", {"d": "dflt"})
    conn.execute(f"INSERT INTO {name} (id) VALUES (%s)", (1,))
    assert conn.execute(f"SELECT v FROM {name}").fetchall() == [("dflt",)]


def test_without_parameters_the_text_is_sent_as_written(tables: tuple[tique.Connection, str, str]) -> None:
    conn, tx, _ = tables
    conn.execute(f"INSERT INTO {tx} VALUES (7, 'q%')")
    for empty in (None, (), [], {}):
        cur = conn.cursor()
        cur.execute(f"SELECT name FROM {tx} WHERE name LIKE 'q%'", empty)
        assert cur.fetchall() == [("q%",)]


BAD: list[tuple[str, Any]] = [
    ("SELECT name FROM {t} WHERE id = %(id)s", {"other": 1}),  # a missing name
    ("SELECT name FROM {t} WHERE id = %s", (1, 2)),  # too many
    ("SELECT name FROM {t} WHERE id = %s AND name = %s", (1,)),  # too few
    ("SELECT name FROM {t} WHERE id = %s", {"id": 1}),  # a mapping for %s
    ("SELECT name FROM {t} WHERE id = %(id)s", (1,)),  # a sequence for %(name)s
    ("SELECT name FROM {t} WHERE name LIKE 'a%' AND id = %s", (1,)),  # a lone % with parameters
    ("SELECT name FROM {t} WHERE id = %d", (1,)),  # not pyformat
    ("SELECT name FROM {t} WHERE id = ?", (1,)),  # qmark
    ("SELECT name FROM {t} WHERE id = :id", None),  # named (colon)
    ("SELECT name FROM {t} WHERE id = %(id)s", None),  # no parameters at all
    ("SELECT name FROM {t} WHERE id = %s", 5),  # not a sequence or mapping
    ("INSERT INTO {t} VALUES (%(id)s, %(name)s)", {"id": 9}),
    ("UPDATE {t} SET name = %s WHERE id = %s", ("x",)),
    ("DELETE FROM {t} WHERE id = %(id)s", {"ID": 1}),
    ("SELECT name FROM {t} WHERE id = %s", (object(),)),  # a value pymonetdb cannot quote
]


@pytest.mark.parametrize("case", range(len(BAD)))
def test_a_bad_parameter_is_a_programming_error(tables: tuple[tique.Connection, str, str], case: int) -> None:
    conn, tx, _ = tables
    sql, params = BAD[case]
    with pytest.raises(tique.ProgrammingError):
        conn.cursor().execute(sql.format(t=tx), params)
    conn.execute(f"SELECT COUNT(*) FROM {tx}")  # the connection still works


# Statements on no table at all: pymonetdb (straight to the served database) and tique must agree.
REFERENCE: list[tuple[str, Any]] = [
    ("SELECT %s, %s", (1, "x")),
    ("SELECT %s, %s", [2.5, None]),
    ("SELECT %(a)s, %(b)s, %(a)s", {"a": 1, "b": "it's", "c": 3}),
    ("SELECT %s", "a lone string"),
    ("SELECT '100%%', %s", (1,)),
    ("SELECT '100%%'", None),
    ("SELECT '100%'", ()),
    ("SELECT '100%'", {}),
    ("SELECT 'a' || %s || 'b'", ("%s",)),
    ("SELECT '%s'", (5,)),  # pymonetdb formats inside quotes too
    ("SELECT 1 -- %s\n", ("x",)),  # and inside comments
    ("SELECT %s", (1, 2)),
    ("SELECT %(a)s", {"b": 1}),
    ("SELECT 'a%', %s", (1,)),
    ("SELECT %s", {"a": 1}),
    ("SELECT %(a)s", (1,)),
    ("SELECT %d", (1,)),
    ("SELECT CAST(%s AS DATE) + INTERVAL '1' DAY", ("2020-06-01",)),
    ("SELECT CAST(%(d)s AS TIMESTAMP) - INTERVAL '90' MINUTE", {"d": "2020-06-01 12:00:00"}),
]


def _outcome(run: Callable[[], list[tuple[Any, ...]]]) -> tuple[str, Any]:
    try:
        return "rows", [tuple(r) for r in run()]
    except Exception as exc:
        return "error", exc


@pytest.mark.parametrize("case", range(len(REFERENCE)))
def test_same_outcome_as_pymonetdb(server: Any, case: int) -> None:
    sql, params = REFERENCE[case]
    ref = pymonetdb.connect(
        database=server.directory.name,
        hostname="127.0.0.1",
        port=server.port,
        username="monetdb",
        password=server.password,
    )
    conn = tique.connect(server.url)
    try:

        def with_pymonetdb() -> list[tuple[Any, ...]]:
            cur = ref.cursor()
            cur.execute(sql, params)
            return cur.fetchall()

        def with_tique() -> list[tuple[Any, ...]]:
            cur = conn.cursor()
            cur.execute(sql, params)
            return cur.fetchall()

        expected, got = _outcome(with_pymonetdb), _outcome(with_tique)
        assert got[0] == expected[0], f"pymonetdb: {expected}, tique: {got}"
        if expected[0] == "rows":
            assert got[1] == expected[1]
        else:
            assert isinstance(got[1], tique.DatabaseError), got[1]
            if not isinstance(expected[1], pymonetdb.DatabaseError):  # Python's % refused the parameters
                assert isinstance(got[1], tique.ProgrammingError), got[1]
    finally:
        ref.close()
        conn.close()


def test_ints_and_strings_are_written_as_pymonetdb_writes_them() -> None:
    # literal() answers these two types itself (the common case, on every statement); the rest goes to pymonetdb
    import enum
    import random

    from pymonetdb.sql.monetize import convert

    from tique.params import literal

    class Level(enum.IntEnum):
        HIGH = 3

    rng = random.Random(7)
    alphabet = "ab'\\\"%\n\t\x00ü€😀 "
    strings = ["", "'", "\\", "\\'", "''", "it's", "back\\slash"] + [
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(12))) for _ in range(300)
    ]
    ints = [0, -1, 2**31, -(2**63), 10**30, True, False, Level.HIGH]
    for value in strings + ints:
        assert literal(value) == str(convert(value)), value
