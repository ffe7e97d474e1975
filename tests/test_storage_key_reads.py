"""A read by a whole composite key of rows only Storage holds (bulk-loaded, no Cache row) is one statement of its
own: the probe column's comparison, then the other key columns' comparisons as truth tests ``(p) = TRUE`` on the
rows it found (rewrite/snapshot.py _stable_rows). Attacked here: key columns of many types on either side of the
probe, literals and parameters the engine converts (quoted, padded, decimals, trailing spaces, other case, NULL,
out of range, not convertible), against a plain MonetDB twin: the same rows, or an error where it errs."""

from __future__ import annotations

import datetime
import decimal
import re
from collections.abc import Callable
from typing import Any

import pytest

import tique
from tests.test_key_reads_differential import answer, rows_of, twin_tables
from tique.params import inline

# the typed column ``a`` has few distinct values and the INT column ``b`` many, so b is the probe and a is
# tested as a truth test; the second layout swaps their roles (``a`` many values, probed)
TYPED: dict[str, tuple[str, list[Any], list[str]]] = {
    "int": ("INT", [-1, 0, 2147483647], ["{v}", "'{v}'", "{v}.0", "{v}.5", "'{v} '", "CAST({v} AS BIGINT)"]),
    "smallint": ("SMALLINT", [-32767, 7, 32767], ["{v}", "{v}.0", "{v}00000", "'{v}'"]),
    "bigint": ("BIGINT", [-(2**62), 3, 2**62], ["{v}", "'{v}'", "{v}.0", "{v}9"]),
    "varchar": ("VARCHAR(8)", ["a", "A", "a b"], ["'{v}'", "'{v} '", "UPPER('{v}')", "'{v}' || ''"]),
    "decimal": ("DECIMAL(10,2)", [decimal.Decimal("-1.50"), decimal.Decimal("0.00"), decimal.Decimal("2.25")],
                ["{v}", "'{v}'", "{v}0", "{v}1", "CAST({v} AS DOUBLE)"]),
    "double": ("DOUBLE", [-0.5, 0.0, 1e300], ["{v}", "'{v}'", "CAST({v} AS REAL)"]),
    "date": ("DATE", [datetime.date(1999, 12, 31), datetime.date(2024, 2, 29), datetime.date(1, 1, 1)],
             ["DATE '{v}'", "'{v}'", "CAST('{v}' AS TIMESTAMP)"]),
    "timestamp": ("TIMESTAMP", [datetime.datetime(2024, 1, 1, 0, 0, 0, 500000), datetime.datetime(1970, 1, 1)],
                  ["TIMESTAMP '{v}'", "'{v}'", "CAST('{v}' AS DATE)"]),
    "boolean": ("BOOLEAN", [True, False], ["{v}", "'{v}'", "NOT NOT {v}"]),
}  # fmt: skip
PROBES = range(1, 13)  # the INT column's values


def literal(value: Any) -> str:
    return inline("%s", (value,))


def params(kind: str, value: Any) -> list[Any]:
    """The value as a parameter of its own Python type, as text (padded too), and of other types."""
    out = [value, str(value), f" {value}", f"{value} ", None, "x"]
    if isinstance(value, int) and not isinstance(value, bool):
        out += [decimal.Decimal(value), float(value), decimal.Decimal(f"{value}.5"), True, 2**70]
    if isinstance(value, decimal.Decimal):
        out += [float(value), value + decimal.Decimal("0.001"), int(value)]
    if isinstance(value, str):
        out += [value.upper(), value.encode()]
    if isinstance(value, datetime.date):
        out += [value.isoformat(), datetime.datetime(value.year, value.month, value.day)]
    if isinstance(value, bool):
        out += [int(value), "true" if value else "false"]
    return out


def shapes(kind: str, value: Any) -> list[str]:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return [s.format(v=text) for s in TYPED[kind][2]] + ["NULL", "'x'"]


@pytest.mark.parametrize("swapped", [False, True], ids=["typed-tested", "typed-probed"])
@pytest.mark.parametrize("kind", list(TYPED))
def test_storage_reads_by_composite_key_answer_as_monetdb(
    connect: Callable[..., tique.Connection], url: str, unique_name: Callable[[str], str], kind: str, swapped: bool
) -> None:
    sql_type, values, _ = TYPED[kind]
    ddl = f"(a {sql_type}, b INT, v INT, PRIMARY KEY (a, b))"
    # rows shared between transactions would answer the reads of this quiet table without the engine
    with twin_tables(connect, url, unique_name, ddl, shared_rows=False) as (conn, cur, raw, t, p):
        if swapped:  # a many values (each typed value with its own b), b few: a is the probe
            rows = [(a, i % 2, i) for i, a in enumerate(values)]
            rows += [(values[0], b, 100 + b) for b in range(2, 40)]  # b stays the less distinct column
        else:
            rows = [(a, b, 10 * i + b) for i, a in enumerate(values) for b in PROBES]
        conn.bulk_load(t, rows)  # into Storage: the reads below find no Cache row
        raw.execute(f"INSERT INTO {p} VALUES " + ", ".join(f"({', '.join(literal(x) for x in r)})" for r in rows))
        conn.commit()
        sent: list[str] = []  # as run: a prepared statement's EXEC as the text it runs

        def seen(sql: str, _s: object, _e: object) -> None:
            run = re.match(r"EXEC (\d+)\(", sql)
            sent.append((conn._raw.prepared_text(int(run.group(1))) or sql) if run else sql)

        conn.statement_hooks.append(seen)
        wrong, tested = [], 0
        for a in values:
            for b in (1, 13):
                for a_shape in shapes(kind, a):
                    for where in (f"a = {a_shape} AND b = {b}", f"b = '{b}' AND a = {a_shape}"):
                        query = f"SELECT a, b, v FROM {{t}} WHERE {where}"
                        want = answer(lambda q: raw.execute(q).rows, query.format(t=p))
                        got = answer(rows_of, cur, query.format(t=t))
                        if isinstance(got, str):
                            conn.rollback()
                        tested += 1
                        if got != want:
                            wrong.append((where, got, want))
            # parameters: a statement by its whole key is read by key (rewrite/point.py), in the truth-test form
            # (a statement whose key read failed is read another way from then on: each value its own statement; an
            # UPDATE of the row it read teaches it to read whole rows, the read that the truth-test form is for)
            for n, arg in enumerate(params(kind, a)):
                forward = f"SELECT a, b, v AS v{n} FROM {{t}} WHERE a = %s AND b = %s"
                backward = f"SELECT v AS v{n}, a FROM {{t}} WHERE b = %s AND a = %s"
                for query, args in ((forward, (a, 1)), (backward, (1, a))):
                    cur.execute(query.format(t=t), args)
                    cur.execute(f"UPDATE {t} SET v = v + 1 WHERE a = %s AND b = %s", (a, 1))
                    conn.rollback()
                for b in (2, "2", 13):
                    for query, args in ((forward, (arg, b)), (backward, (b, arg))):
                        want = answer(lambda q: raw.execute(q).rows, inline(query.format(t=p), args))
                        got = answer(rows_of, cur, query.format(t=t), args)
                        conn.rollback()  # a new snapshot: the next read is not answered from rows this one holds
                        tested += 1
                        if got != want:
                            wrong.append((query, args, got, want))
        assert not wrong, wrong[:10]
        # Storage-alone reads in the truth-test form were among them (a key read ranks versions in the client only when
        # every key column is an integer: rewrite/point.py _versions; other keys are read in the LIMIT form)
        alone = [s for s in sent if f"{t}__storage" in s and f"{t}__cache" not in s and ") = TRUE" in s]
        assert len(alone) >= (30 if sql_type.endswith("INT") else 0), (tested, len(alone))
