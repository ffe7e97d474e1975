"""Attacks on the zero-sign guard (tique/zero_signs.py, commit 3adf2b7): a REAL or DOUBLE -0.0 or 0.0 a client
writes must come back with its sign, before and after the checkpointer, whatever pipeline the session is on.

What holds (plain tests): float parameters of UPDATEs on their first, second and later uses (text, PREPARE, EXEC),
executemany, autocommit, rows held by the transaction, a user's own SET optimizer, an engine error inside the
zero-sign block, two interleaved transactions, float primary keys (a key -0.0 is stored as 0.0 and found by
either zero).

Found by these attacks and fixed: a write whose new values the engine computes (UPDATE ... SET with constants,
INSERT ... SELECT, the SELECT of CREATE TABLE AS ... WITH DATA) ran on whatever pipeline the session was on -
default_pipe after any analytical read, and the CTAS select always - so a -0 written as a literal, as a string
parameter, or beside a 0.0 parameter was merged with the statement's other zeros (tique's rewritten statement has
more of them than the user's: plain MonetDB keeps the sign of the same UPDATE on both pipelines); and a numpy
float parameter was written by its repr (``np.float64(-0.0)e0``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import tique
from tique.checkpoint import Checkpointer
from tique.engine import open_engine
from tique.engine.base import RawConnection

Connect = Callable[..., tique.Connection]


def _sign(value: Any) -> str:
    if isinstance(value, float) and value == 0.0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    return str(value)


def _texts(conn: tique.Connection, table: str) -> list[tuple[Any, ...]]:
    """Each row's id and zero signs as the engine prints them; checked against Python's floats too."""
    cur = conn.cursor()
    cur.execute(f"SELECT id, CAST(r AS VARCHAR(30)), CAST(d AS VARCHAR(30)), r, d FROM {table} ORDER BY id")
    rows = cur.fetchall()
    if not conn.autocommit:
        conn.commit()
    out = []
    for i, rt, dt, r, d in rows:
        if r == 0.0:
            assert _sign(r) == rt, f"row {i}: Python's r {r!r} against the engine's {rt!r}"
        if d == 0.0:
            assert _sign(d) == dt, f"row {i}: Python's d {d!r} against the engine's {dt!r}"
        out.append((i, rt, dt))
    return out


def _analytical(conn: tique.Connection, table: str) -> None:
    """A scan with an aggregate: tique runs it on default_pipe and leaves the session there."""
    cur = conn.cursor()
    cur.execute(f"SELECT COUNT(*), SUM(d) FROM {table} GROUP BY r")
    cur.fetchall()


@pytest.fixture
def checkpoint(url: str) -> Iterator[Callable[[], None]]:
    engine = open_engine(url)
    opened: list[RawConnection] = []

    def run() -> None:
        opened.append(engine.connect())
        report = Checkpointer(opened[-1]).run_once()
        assert not report.errors, report.errors

    yield run
    for conn in opened:
        conn.close()


def _table(connect: Connect, unique_name: Callable[[str], str], rows: int = 6, **settings: Any) -> tuple[Any, str]:
    conn = connect(**settings)
    table = unique_name("zatk")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, r REAL, d DOUBLE)")
    conn.commit()
    cur.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s)", [(i, 1.0, 1.0) for i in range(1, rows + 1)])
    conn.commit()
    return conn, table


SIGNS = [(-0.0, 0.0), (0.0, -0.0), (-0.0, -0.0), (0.0, 0.0), (-0.0, 0.0), (0.0, -0.0)]
EXPECTED = [(i, _sign(r), _sign(d)) for i, (r, d) in enumerate(SIGNS, 1)]
UPDATES = [(r, d, i) for i, (r, d) in enumerate(SIGNS, 1)]


# ---- paths that hold ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["execute", "executemany", "autocommit", "held", "default_pipeline"])
@pytest.mark.parametrize("analytical", [False, True])
def test_update_parameters_keep_signs_on_every_use(
    connect: Connect, unique_name: Callable[[str], str], checkpoint: Callable[[], None], how: str, analytical: bool
) -> None:
    """Uses 1 (text), 2 (PREPARE + EXEC) and 3+ (EXEC) of one UPDATE with float parameters."""
    settings = {"short_pipeline": None} if how == "default_pipeline" else {}
    conn, table = _table(connect, unique_name, **settings)
    cur = conn.cursor()
    if analytical:
        _analytical(conn, table)
    sql = f"UPDATE {table} SET r = %s, d = %s WHERE id = %s"
    params = [(r, d, i) for i, (r, d) in enumerate(SIGNS, 1)]
    if how == "executemany":
        cur.executemany(sql, params)
    else:
        conn.autocommit = how == "autocommit"
        for r, d, i in params:
            if how == "held":  # the row read whole first: the UPDATE is computed in the client
                cur.execute(f"SELECT * FROM {table} WHERE id = %s", (i,))
                cur.fetchall()
            cur.execute(sql, (r, d, i))
    if not conn.autocommit:
        conn.commit()
    assert _texts(conn, table) == EXPECTED
    checkpoint()
    assert _texts(conn, table) == EXPECTED, "after the checkpointer"


def test_negation_and_products_computed_by_the_engine(
    connect: Connect, unique_name: Callable[[str], str], checkpoint: Callable[[], None]
) -> None:
    """-f of a stored zero, and a zero multiplied, computed from column values (no constant -0 in the text)."""
    conn, table = _table(connect, unique_name)
    cur = conn.cursor()
    cur.executemany(f"UPDATE {table} SET r = %s, d = %s WHERE id = %s", UPDATES)
    conn.commit()
    _analytical(conn, table)
    cur.execute(f"UPDATE {table} SET r = -r, d = -d")
    conn.commit()
    flipped = [(i, "0" if r == "-0" else "-0", "0" if d == "-0" else "-0") for i, r, d in EXPECTED]
    assert _texts(conn, table) == flipped
    checkpoint()
    assert _texts(conn, table) == flipped


@pytest.mark.parametrize(
    "statement",
    [
        "SET optimizer = 'default_pipe'",
        "set  optimizer='default_pipe';",
        "/* mine */ SET optimizer = 'default_pipe'",
        "SET optimizer = 'default' || '_pipe'",
        "SET optimizer = 'sequential_pipe'",
        "SET optimizer = 'no_mitosis_pipe'",
    ],
)
def test_users_own_set_optimizer_then_flush(
    connect: Connect, unique_name: Callable[[str], str], checkpoint: Callable[[], None], statement: str
) -> None:
    conn = connect()
    table = unique_name("zset")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, r REAL, d DOUBLE)")
    conn.commit()
    cur.execute(statement)
    cur.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s)", [(i, r, d) for i, (r, d) in enumerate(SIGNS, 1)])
    conn.commit()
    assert _texts(conn, table) == EXPECTED
    checkpoint()
    assert _texts(conn, table) == EXPECTED


def test_failed_set_optimizer_keeps_the_tracked_pipeline(connect: Connect, unique_name: Callable[[str], str]) -> None:
    conn, table = _table(connect, unique_name, on_statement_error="continue")
    cur = conn.cursor()
    _analytical(conn, table)
    with pytest.raises(tique.DatabaseError):
        cur.execute("SET optimizer = 'no_such_pipe'")
    assert conn._raw.pipeline == str(conn._raw.execute("SELECT optimizer").scalar())
    cur.executemany(f"UPDATE {table} SET r = %s, d = %s WHERE id = %s", UPDATES)
    conn.commit()
    assert _texts(conn, table) == EXPECTED


def test_engine_error_inside_the_zero_sign_block_leaves_the_session_usable(
    connect: Connect, unique_name: Callable[[str], str]
) -> None:
    conn, table = _table(connect, unique_name, on_statement_error="continue")
    cur = conn.cursor()
    _analytical(conn, table)  # on default_pipe: the failing statement switches to minimal_fast and back
    with pytest.raises(tique.DataError):
        cur.execute(f"UPDATE {table} SET d = %s, r = 1 / (id - 1) WHERE id = 1", (-0.0,))
    raw = conn._raw
    assert raw.pipeline == str(raw.execute("SELECT optimizer").scalar())
    cur.execute(f"UPDATE {table} SET d = %s WHERE id = %s", (-0.0, 2))
    for _ in range(4):  # prepared after the switches, then sent as EXEC
        cur.execute(f"SELECT CAST(d AS VARCHAR(30)) FROM {table} WHERE id = %s", (2,))
        assert cur.fetchall() == [("-0",)]
    _analytical(conn, table)
    conn.commit()
    assert raw.pipeline == str(raw.execute("SELECT optimizer").scalar())
    assert _texts(conn, table)[:2] == [(1, "1", "1"), (2, "1", "-0")]


def test_two_interleaved_transactions(
    connect: Connect, unique_name: Callable[[str], str], checkpoint: Callable[[], None]
) -> None:
    one, table = _table(connect, unique_name, rows=0)
    two = connect()
    a, b = one.cursor(), two.cursor()
    _analytical(two, table)
    a.execute(f"INSERT INTO {table} VALUES (%s, %s, %s)", (1, -0.0, 0.0))
    b.execute(f"INSERT INTO {table} VALUES (%s, %s, %s)", (2, 0.0, -0.0))
    a.execute(f"SELECT CAST(r AS VARCHAR(30)) FROM {table} WHERE id = 1")
    assert a.fetchall() == [("-0",)]
    _analytical(two, table)  # flushes two's row on default_pipe's session
    b.execute(f"INSERT INTO {table} VALUES (%s, %s, %s)", (3, -0.0, 0.0))
    two.commit()
    one.commit()
    expected = [(1, "-0", "0"), (2, "0", "-0"), (3, "-0", "0")]
    assert _texts(one, table) == expected
    checkpoint()
    assert _texts(two, table) == expected


@pytest.mark.parametrize("key_type", ["DOUBLE", "REAL"])
def test_float_key_zero_is_one_key(
    connect: Connect, unique_name: Callable[[str], str], checkpoint: Callable[[], None], key_type: str
) -> None:
    """By design a key -0.0 is stored as 0.0 (MonetDB hashes a DOUBLE by its bits); its other columns keep signs."""
    conn = connect(on_statement_error="continue")
    table = unique_name("zkey")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {table} (k {key_type} PRIMARY KEY, v DOUBLE)")
    conn.commit()
    cur.execute(f"INSERT INTO {table} VALUES (%s, %s)", (-0.0, -0.0))
    with pytest.raises(tique.IntegrityError):
        cur.execute(f"INSERT INTO {table} VALUES (%s, %s)", (0.0, 0.0))
    conn.commit()
    for probe in (0.0, -0.0):
        cur.execute(f"SELECT CAST(k AS VARCHAR(30)), CAST(v AS VARCHAR(30)) FROM {table} WHERE k = %s", (probe,))
        assert cur.fetchall() == [("0", "-0")]
    conn.commit()
    checkpoint()
    cur.execute(f"SELECT CAST(k AS VARCHAR(30)), CAST(v AS VARCHAR(30)) FROM {table}")
    assert cur.fetchall() == [("0", "-0")]
    conn.commit()


# ---- paths that lose a sign (bugs) --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sql, params, expected",
    [
        ("UPDATE {t} SET r = -0.0e0, d = 0.0e0 WHERE id = 1", None, (1, "-0", "0")),  # literal
        ("UPDATE {t} SET r = %s, d = -0.0e0 WHERE id = 1", (0.0,), (1, "0", "-0")),  # 0.0 param + literal -0
        ("UPDATE {t} SET r = %s, d = %s WHERE id = 1", ("-0", "0"), (1, "-0", "0")),  # strings: the 0 becomes -0
        ("UPDATE {t} SET d = CASE WHEN id = 1 THEN -0.0e0 ELSE 0.0e0 END WHERE id < 3", None, (1, "1", "-0")),
    ],
    ids=["literal", "zero-param-beside-literal", "string-params", "case"],
)
def test_update_computed_by_the_engine_after_an_analytical_read(
    connect: Connect, unique_name: Callable[[str], str], sql: str, params: Any, expected: tuple[Any, ...]
) -> None:
    conn, table = _table(connect, unique_name)
    _analytical(conn, table)
    conn.cursor().execute(sql.format(t=table), params)
    conn.commit()
    assert _texts(conn, table)[0] == expected


def test_plain_monetdb_keeps_that_updates_signs_on_both_pipelines(url: str, unique_name: Callable[[str], str]) -> None:
    """The reference for the first case above: the same UPDATE on a plain table keeps -0 beside 0."""
    raw = open_engine(url).connect()
    table = unique_name("zplain")
    try:
        raw.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, r REAL, d DOUBLE)")
        for pipeline in ("default_pipe", "minimal_fast"):
            raw.execute(f"SET optimizer = '{pipeline}'")
            raw.execute(f"DELETE FROM {table}")
            raw.execute(f"INSERT INTO {table} VALUES (1, 1, 1)")
            raw.execute(f"UPDATE {table} SET r = -0.0e0, d = 0.0e0 WHERE id = 1")
            got = raw.execute(f"SELECT CAST(r AS VARCHAR(30)), CAST(d AS VARCHAR(30)) FROM {table}").rows
            assert [tuple(r) for r in got] == [("-0", "0")], pipeline
    finally:
        raw.execute("SET optimizer = 'default_pipe'")
        raw.execute(f"DROP TABLE {table}")
        raw.close()


def test_insert_select_with_zero_constants_after_an_analytical_read(
    connect: Connect, unique_name: Callable[[str], str]
) -> None:
    conn, source = _table(connect, unique_name, rows=2)
    target = unique_name("zins")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {target} (id INT PRIMARY KEY, r REAL, d DOUBLE)")
    conn.commit()
    _analytical(conn, source)
    cur.execute(f"INSERT INTO {target} SELECT id, -0.0e0, 0.0e0 FROM {source}")
    conn.commit()
    assert _texts(conn, target) == [(1, "-0", "0"), (2, "-0", "0")]  # minimal_fast and plain MonetDB's answer


def test_create_table_as_with_zero_constants(connect: Connect, unique_name: Callable[[str], str]) -> None:
    conn, source = _table(connect, unique_name, rows=2)  # no analytical read before: fails all the same
    copy = unique_name("zctas")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {copy} AS SELECT id, CAST(-0.0e0 AS DOUBLE) AS r, 0.0e0 AS d FROM {source} WITH DATA")
    conn.commit()
    assert _texts(conn, copy) == [(1, "-0", "0"), (2, "-0", "0")]


def test_numpy_float_parameter_in_an_update(connect: Connect, unique_name: Callable[[str], str]) -> None:
    np = pytest.importorskip("numpy")
    conn, table = _table(connect, unique_name)
    conn.cursor().execute(f"UPDATE {table} SET d = %s WHERE id = 1", (np.float64(-0.0),))
    conn.commit()
    assert _texts(conn, table)[0] == (1, "1", "-0")


def test_a_string_read_as_a_real_zero_has_no_sign_as_in_monetdb(
    connect: Connect, unique_name: Callable[[str], str]
) -> None:
    """MonetDB reads '-0' as REAL +0 (and as DOUBLE -0): tique's conversion in the client says the same."""
    conn, table = _table(connect, unique_name)
    cur = conn.cursor()
    cur.execute(f"INSERT INTO {table} VALUES (%s, %s, %s)", (7, "-0", "-0"))
    cur.execute(f"INSERT INTO {table} VALUES (%s, %s, %s)", (8, "-1e-50", "-1e-50"))
    conn.commit()
    assert [r for r in _texts(conn, table) if r[0] in (7, 8)] == [(7, "0", "-0"), (8, "0", "-1e-50")]


def test_bulk_load_stores_a_zero_key_as_zero(connect: Connect, unique_name: Callable[[str], str]) -> None:
    """A key's -0.0 is stored as 0.0 (values.key_value), as every other write stores it: MonetDB hashes a DOUBLE
    by its bits, so a -0 key in Storage could escape a hashed lookup of 0."""
    conn = connect()
    table = unique_name("zbk")
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE {table} (k DOUBLE PRIMARY KEY, v DOUBLE)")
    conn.commit()
    conn.bulk_load(table, [(-0.0, -0.0), (1.0, 0.0)])
    cur.execute(f"SELECT CAST(k AS VARCHAR(30)), CAST(v AS VARCHAR(30)) FROM {table} ORDER BY k")
    assert [tuple(r) for r in cur.fetchall()] == [("0", "-0"), ("1", "0")]
    conn.commit()
