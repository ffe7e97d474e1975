"""A seeded SQLancer-style generator of schemas, rows, queries and DML, independent of tique.

Every table has the same columns (one of each common MonetDB type) so expressions join and compare across
tables without casts; tables differ by their primary key (one column, two columns, none) and their rows. Text
uses ``{t0}``, ``{t1}``... for table names: the runner fills in a tique table or its plain twin. Values are
chosen so that sums are exact (doubles are multiples of 1/4), so results compare as multisets without a tolerance.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

# column -> (SQL type, kind); kinds drive the typed expression generator
COLUMNS: dict[str, tuple[str, str]] = {
    "k0": ("INT", "int"),
    "k1": ("VARCHAR(8)", "str"),
    "i": ("INT", "int"),
    "b": ("BIGINT", "int"),
    "s": ("SMALLINT", "int"),
    "d": ("DOUBLE", "num"),
    "m": ("DECIMAL(10,2)", "num"),
    "v": ("VARCHAR(20)", "str"),
    "f": ("BOOLEAN", "bool"),
    "dt": ("DATE", "date"),
    "ts": ("TIMESTAMP", "ts"),
}
KEYS = {"single": ("k0",), "composite": ("k0", "k1"), "none": ()}
STRINGS = ("a", "ab", "abc", "b", "B%", "", "x_y", "zz", "A")
COMPARE = ("=", "<>", "<", "<=", ">", ">=")


@dataclass
class Table:
    name: str  # the placeholder name: t0, t1, ...
    key: tuple[str, ...]
    unique: tuple[str, ...] = ()  # a UNIQUE column set
    references: str = ""  # the placeholder name of a table with a single key its column i references

    def create(self, real: str, plain: bool, names: dict[str, str]) -> str:
        cols = [f"{c} {t}" + (" NOT NULL" if c in self.key else "") for c, (t, _) in COLUMNS.items()]
        if self.key:
            cols.append(f"PRIMARY KEY ({', '.join(self.key)})")
        if self.unique:
            cols.append(f"UNIQUE ({', '.join(self.unique)})")
        if self.references:
            cols.append(f"FOREIGN KEY (i) REFERENCES {names[self.references]} (k0)")
        return f"CREATE TABLE {real} ({', '.join(cols)})" + (" -- tique: plain" if plain else "")


@dataclass
class Schema:
    tables: list[Table]
    next_key: dict[str, int] = field(default_factory=dict)


def literal(rng: random.Random, kind: str, null_rate: float = 0.2) -> str:
    if rng.random() < null_rate:
        return "NULL"
    if kind == "int":
        return str(rng.randint(-3, 12))
    if kind == "num":
        return f"{rng.randint(-20, 40) / 4}"
    if kind == "str":
        return "'" + rng.choice(STRINGS).replace("'", "''") + "'"
    if kind == "bool":
        return rng.choice(("TRUE", "FALSE"))
    if kind == "date":
        return f"DATE '2024-0{rng.randint(1, 3)}-{rng.randint(1, 28):02d}'"
    day = f"2024-0{rng.randint(1, 3)}-{rng.randint(1, 28):02d}"
    return f"TIMESTAMP '{day} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00'"


def make_schema(rng: random.Random, tables: int = 3) -> Schema:
    """Tables with each kind of key; the keyless one has a UNIQUE column (s: few values, so clashes happen), and
    the composite-keyed one a FOREIGN KEY (i) to the single-keyed one (listed after it: created after it)."""
    kinds = ["single", "composite", "none"]
    rng.shuffle(kinds)
    made = [Table(f"t{n}", KEYS[kinds[n % 3]]) for n in range(tables)]
    single = next(t.name for t in made if t.key == KEYS["single"])
    for t in made:
        if t.key == KEYS["none"]:
            t.unique = ("s",)
        elif t.key == KEYS["composite"]:
            t.references = single
    return Schema(sorted(made, key=lambda t: bool(t.references)))


def row_values(rng: random.Random, table: Table, key: int) -> str:
    vals = []
    for col, (_, kind) in COLUMNS.items():
        if col == "k0" and "k0" in table.key:
            vals.append(str(key))
        elif col == "k1" and "k1" in table.key:
            vals.append(f"'{rng.choice('pq')}'")
        elif col == "b":
            vals.append("NULL" if rng.random() < 0.2 else str(rng.randint(-(10**6), 10**6)))
        elif col == "m":
            vals.append("NULL" if rng.random() < 0.2 else f"{rng.randint(-9999, 9999) / 100:.2f}")
        else:
            vals.append(literal(rng, kind))
    return f"({', '.join(vals)})"


def insert(rng: random.Random, schema: Schema, table: Table, rows: int) -> str:
    """INSERT of ``rows`` rows with keys no earlier INSERT of this generator used (so both sides accept it)."""
    start = schema.next_key.get(table.name, 0)
    schema.next_key[table.name] = start + rows
    body = ", ".join(row_values(rng, table, start + n) for n in range(rows))
    return f"INSERT INTO {{{table.name}}} VALUES {body}"


class Queries:
    """Random typed expressions and queries over a schema."""

    def __init__(self, rng: random.Random, schema: Schema) -> None:
        self.rng = rng
        self.schema = schema
        self.shapes: set[str] = set()
        self._alias = 0

    def alias(self) -> str:
        self._alias += 1
        return f"a{self._alias}"

    def mark(self, shape: str) -> None:
        self.shapes.add(shape)

    # ---- expressions ------------------------------------------------------------------------------------------

    def column(self, scope: list[str], kind: str) -> str:
        cols = [c for c, (_, k) in COLUMNS.items() if k == kind]
        return f"{self.rng.choice(scope)}.{self.rng.choice(cols)}"

    def expr(self, scope: list[str], kind: str, depth: int = 0) -> str:
        r = self.rng
        if depth >= 2 or r.random() < 0.45:
            return self.column(scope, kind) if r.random() < 0.75 else literal(r, kind)
        d = depth + 1
        choice = r.randrange(7)
        if choice == 0:
            self.mark("coalesce")
            return f"COALESCE({self.expr(scope, kind, d)}, {self.expr(scope, kind, d)})"
        if choice == 1:
            self.mark("case")
            when, then, other = self.pred(scope, d), self.expr(scope, kind, d), self.expr(scope, kind, d)
            return f"CASE WHEN {when} THEN {then} ELSE {other} END"
        if choice == 2 and depth == 0 and kind in ("int", "num", "str"):
            return self.scalar_subquery(scope, kind)
        if kind == "int":
            return r.choice(
                [
                    lambda: f"({self.expr(scope, 'int', d)} {r.choice('+-*')} {self.expr(scope, 'int', d)})",
                    lambda: f"ABS({self.expr(scope, 'int', d)})",
                    lambda: self._cast(f"CAST({self.column(scope, 'num')} AS INT)"),
                    lambda: f"EXTRACT(DAY FROM {self.expr(scope, 'date', d)})",
                    lambda: f"LENGTH({self.expr(scope, 'str', d)})",
                ]
            )()
        if kind == "num":
            return r.choice(
                [
                    lambda: f"({self.expr(scope, 'num', d)} {r.choice('+-')} {self.expr(scope, 'num', d)})",
                    lambda: self._cast(f"CAST({self.column(scope, 'int')} AS DECIMAL(12,2))"),
                    lambda: f"({self.column(scope, 'num')} * 2)",
                ]
            )()
        if kind == "str":
            return r.choice(
                [
                    lambda: f"({self.expr(scope, 'str', d)} || {self.expr(scope, 'str', d)})",
                    lambda: f"UPPER({self.expr(scope, 'str', d)})",
                    lambda: f"SUBSTRING({self.expr(scope, 'str', d)}, 1, 2)",
                    lambda: self._cast(f"CAST({self.column(scope, 'int')} AS VARCHAR(20))"),
                ]
            )()
        if kind == "date":
            self.mark("interval")
            return r.choice(
                [
                    lambda: f"({self.column(scope, 'date')} + INTERVAL '{r.randint(1, 40)}' DAY)",
                    lambda: f"({self.column(scope, 'date')} - INTERVAL '{r.randint(1, 3)}' MONTH)",
                    lambda: self._cast(f"CAST({self.column(scope, 'ts')} AS DATE)"),
                ]
            )()
        if kind == "ts":
            self.mark("interval")
            return r.choice(
                [
                    lambda: f"({self.column(scope, 'ts')} + INTERVAL '{r.randint(1, 30)}' HOUR)",
                    lambda: f"({self.column(scope, 'ts')} - INTERVAL '{r.randint(1, 90)}' MINUTE)",
                    lambda: f"({self.column(scope, 'ts')} + INTERVAL '{r.randint(1, 9)}' DAY)",
                ]
            )()
        return self.pred(scope, d)  # bool

    def _cast(self, sql: str) -> str:
        self.mark("cast")
        return sql

    def pred(self, scope: list[str], depth: int = 0) -> str:
        r = self.rng
        kind = r.choice(("int", "int", "num", "str", "date", "ts", "bool"))
        choice = r.randrange(3) if depth >= 2 else r.randrange(11)
        d = depth + 1
        if choice == 0 or (kind == "bool" and choice < 3):
            if kind == "bool":
                return self.column(scope, "bool")
            return f"{self.expr(scope, kind, d)} {r.choice(COMPARE)} {self.expr(scope, kind, d)}"
        if choice == 1:
            return f"{self.expr(scope, kind, d)} IS {r.choice(('', 'NOT '))}NULL"
        if choice == 2:
            return f"{self.expr(scope, kind, d)} {r.choice(COMPARE)} {literal(r, kind, 0)}"
        if choice == 3:
            return f"NOT ({self.pred(scope, d)})"
        if choice == 4:
            return f"({self.pred(scope, d)} {r.choice(('AND', 'OR'))} {self.pred(scope, d)})"
        if choice == 5:
            self.mark("between")
            k = r.choice(("int", "num", "date"))
            return f"{self.expr(scope, k, d)} {r.choice(('', 'NOT '))}BETWEEN {literal(r, k, 0)} AND {literal(r, k, 0)}"
        if choice == 6:
            self.mark("like")
            pattern = r.choice(("a%", "%b%", "_", "A%", "%", "x\\_%"))
            return f"{self.expr(scope, 'str', d)} {r.choice(('', 'NOT '))}LIKE '{pattern}'"
        if choice == 7:
            self.mark("in_list")
            k = r.choice(("int", "str"))
            lits = ", ".join(literal(r, k, 0.1) for _ in range(r.randint(1, 4)))
            return f"{self.expr(scope, k, d)} {r.choice(('', 'NOT '))}IN ({lits})"
        if choice == 8:
            return self.in_subquery(scope)
        if choice == 9:
            return self.exists(scope)
        return f"{self.column(scope, 'bool')} IS {r.choice(('TRUE', 'FALSE', 'NOT TRUE'))}".replace(
            "IS NOT TRUE", "IS NOT NULL"
        )

    def _inner(self, scope: list[str], correlated: bool) -> tuple[str, str, str]:
        """A source for a subquery: (FROM clause, its alias, a correlation conjunct or TRUE)."""
        table = self.rng.choice(self.schema.tables)
        a = self.alias()
        corr = "TRUE"
        if correlated and scope:
            self.mark("correlated_subquery")
            corr = f"{a}.{self.rng.choice(('k0', 'i'))} = {self.column(scope, 'int')}"
        else:
            self.mark("uncorrelated_subquery")
        return f"{{{table.name}}} AS {a}", a, corr

    def in_subquery(self, scope: list[str]) -> str:
        self.mark("in_subquery")
        kind = self.rng.choice(("int", "str"))
        # uncorrelated only: MonetDB 11.41 itself answers a correlated [NOT] IN over an empty subquery wrongly
        # (test_differential_regressions.py::test_correlated_not_in_over_an_empty_subquery)
        src, a, corr = self._inner(scope, False)
        inner = f"SELECT {self.column([a], kind)} FROM {src} WHERE {corr} AND {self.pred([a], 2)}"
        return f"{self.expr(scope, kind, 2)} {self.rng.choice(('', 'NOT '))}IN ({inner})"

    def exists(self, scope: list[str]) -> str:
        self.mark("exists")
        src, a, corr = self._inner(scope, self.rng.random() < 0.7)
        return f"{self.rng.choice(('', 'NOT '))}EXISTS (SELECT 1 FROM {src} WHERE {corr} AND {self.pred([a], 2)})"

    def scalar_subquery(self, scope: list[str], kind: str) -> str:
        self.mark("scalar_subquery")
        src, a, corr = self._inner(scope, self.rng.random() < 0.6)
        agg = self.rng.choice(("MAX", "MIN")) if kind == "str" else self.rng.choice(("MAX", "MIN", "SUM", "COUNT"))
        arg = self.column([a], kind)
        if agg == "COUNT":
            self.mark("count")
        return f"(SELECT {agg}({arg}) FROM {src} WHERE {corr})"

    # ---- queries -----------------------------------------------------------------------------------------------

    def from_clause(self) -> tuple[str, list[str]]:
        r = self.rng
        first = r.choice(self.schema.tables)
        a = self.alias()
        sql, scope = f"{{{first.name}}} AS {a}", [a]
        for _ in range(r.choice((0, 0, 1, 1, 2))):
            table = r.choice(self.schema.tables)
            b = self.alias()
            side = r.choice(("", "", "LEFT ", "RIGHT ", "FULL "))
            self.mark(f"{(side.strip() or 'INNER').lower()}_join")
            on = f"{b}.{r.choice(('k0', 'i'))} = {self.column(scope, 'int')}"
            if r.random() < 0.4:
                on += f" AND {self.pred([*scope, b], 1)}"
            sql += f" {side}JOIN {{{table.name}}} AS {b} ON {on}"
            scope.append(b)
        return sql, scope

    def select(self) -> tuple[str, bool]:
        """A query and whether it is totally ordered (compare as lists, else as multisets)."""
        r = self.rng
        shape = r.randrange(10)
        if shape < 3:
            return self.plain_select()
        if shape < 5:
            return self.aggregate(), False
        if shape == 5:
            return self.window(), False
        if shape == 6:
            return self.cte(), False
        if shape < 9:
            return self.set_operation(), False
        return self.ordered_limit(), True

    def projection(self, scope: list[str], kinds: list[str]) -> str:
        return ", ".join(f"{self.expr(scope, k)} AS c{n}" for n, k in enumerate(kinds))

    def kinds(self) -> list[str]:
        return [self.rng.choice(("int", "num", "str", "date", "ts", "bool")) for _ in range(self.rng.randint(1, 4))]

    def plain_select(self, kinds: list[str] | None = None) -> tuple[str, bool]:
        self.mark("select")
        src, scope = self.from_clause()
        distinct = "DISTINCT " if self.rng.random() < 0.15 else ""
        if distinct:
            self.mark("distinct")
        where = f" WHERE {self.pred(scope)}" if self.rng.random() < 0.7 else ""
        return f"SELECT {distinct}{self.projection(scope, kinds or self.kinds())} FROM {src}{where}", False

    def aggregate(self) -> str:
        self.mark("group_by")
        r = self.rng
        src, scope = self.from_clause()
        key_kind = r.choice(("int", "str", "bool", "date"))
        key = self.column(scope, key_kind)
        aggs = [
            "COUNT(*)",
            f"COUNT({self.column(scope, r.choice(('str', 'ts')))})",
            f"SUM({self.column(scope, 'int')})",
            f"MIN({self.expr(scope, r.choice(('str', 'date', 'num')))})",
            f"MAX({self.column(scope, 'ts')})",
            f"SUM({self.column(scope, 'num')})",
            f"COUNT(DISTINCT {self.column(scope, 'int')})",
        ]
        chosen = r.sample(aggs, r.randint(1, 3))
        where = f" WHERE {self.pred(scope)}" if r.random() < 0.5 else ""
        having = ""
        if r.random() < 0.4:
            self.mark("having")
            having = f" HAVING COUNT(*) {r.choice(COMPARE)} {r.randint(0, 3)}"
        cols = ", ".join(f"{a} AS c{n + 1}" for n, a in enumerate(chosen))
        return f"SELECT {key} AS c0, {cols} FROM {src}{where} GROUP BY {key}{having}"

    def window(self) -> str:
        self.mark("window")
        r = self.rng
        src, scope = self.from_clause()
        part = self.column(scope, r.choice(("int", "str", "bool")))
        order = self.column(scope, r.choice(("int", "str", "date")))
        funcs = [
            f"RANK() OVER (PARTITION BY {part} ORDER BY {order})",
            f"DENSE_RANK() OVER (ORDER BY {order})",
            f"SUM({self.column(scope, 'int')}) OVER (PARTITION BY {part})",
            f"COUNT(*) OVER (PARTITION BY {part} ORDER BY {order})",
            f"MAX({self.column(scope, 'str')}) OVER (PARTITION BY {part})",
        ]
        where = f" WHERE {self.pred(scope)}" if r.random() < 0.5 else ""
        return f"SELECT {self.column(scope, 'int')} AS c0, {r.choice(funcs)} AS c1 FROM {src}{where}"

    def cte(self) -> str:
        self.mark("cte")
        r = self.rng
        table = r.choice(self.schema.tables)
        a = self.alias()
        inner = f"SELECT {a}.k0 AS ck, {a}.i AS ci, {a}.v AS cv FROM {{{table.name}}} AS {a} WHERE {self.pred([a])}"
        other = r.choice(self.schema.tables)
        b = self.alias()
        side = r.choice(("", "LEFT "))
        return (
            f"WITH w AS ({inner}) SELECT w.ck AS c0, w.cv AS c1, {b}.{r.choice(('i', 'v', 'dt'))} AS c2 "
            f"FROM w {side}JOIN {{{other.name}}} AS {b} ON {b}.k0 = w.ci"
        )

    def set_operation(self) -> str:
        op = self.rng.choice(("UNION", "UNION ALL", "INTERSECT", "EXCEPT"))
        self.mark(op.lower().replace(" ", "_"))
        kinds = self.kinds()
        left, _ = self.plain_select(kinds)
        right, _ = self.plain_select(kinds)
        return f"{left} {op} {right}"

    def ordered_limit(self) -> str:
        self.mark("order_limit")
        kinds = self.kinds()
        sql, _ = self.plain_select(kinds)
        order = ", ".join(f"c{n} {self.rng.choice(('ASC', 'DESC'))}" for n in range(len(kinds)))
        offset = f" OFFSET {self.rng.randint(1, 5)}" if self.rng.random() < 0.5 else ""
        return f"SELECT * FROM ({sql}) AS q ORDER BY {order} LIMIT {self.rng.randint(1, 10)}{offset}"

    def tlp(self) -> tuple[str, str]:
        """(the unfiltered query, the union of its three partitions on a random predicate)."""
        self.mark("tlp")
        src, scope = self.from_clause()
        proj = self.projection(scope, self.kinds())
        p = self.pred(scope)
        base = f"SELECT {proj} FROM {src}"
        parts = " UNION ALL ".join(f"{base} WHERE {w}" for w in (f"({p})", f"NOT ({p})", f"({p}) IS NULL"))
        return base, parts

    # ---- DML -------------------------------------------------------------------------------------------------

    def dml(self) -> str:
        r = self.rng
        table = r.choice(self.schema.tables)
        a = table.name
        choice = r.randrange(3)
        if choice == 0:
            self.mark("dml_insert")
            return insert(r, self.schema, table, 1)  # multi-row VALUES: see test_differential_regressions
        if choice == 1:
            self.mark("dml_update")
            col = r.choice([c for c in COLUMNS if c not in table.key])
            kind = COLUMNS[col][1]
            value = self.expr([a], kind, 1) if kind != "bool" else self.pred([a], 2)
            if col == "s":
                value = literal(r, "int")
            return f"UPDATE {{{a}}} SET {col} = {value} WHERE {self.pred([a], 1)}".replace(f"{a}.", f"{{{a}}}.")
        self.mark("dml_delete")
        return f"DELETE FROM {{{a}}} WHERE {self.pred([a], 1)}".replace(f"{a}.", f"{{{a}}}.")
