"""sqlglot has no MonetDB dialect; PostgreSQL's is the closest reader and writer. Differences go here."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.tokens import Token, TokenType


def _verbatim(name: str) -> Callable[[list[exp.Expression]], exp.Expression]:
    """A MonetDB function sqlglot would read as one of its own and print as PostgreSQL's (or compute differently:
    log10(x) as LOG(10, x)), kept as the call the user wrote."""
    return lambda args: exp.Anonymous(this=name, expressions=args)


# MonetDB functions kept as written; the aggregates and rand() stay sqlglot's own (tique looks for them: reads.py)
# and are printed as MonetDB spells them (Generator.TRANSFORMS)
_VERBATIM = (
    "DAYOFWEEK",
    "DAYOFMONTH",
    "DAYOFYEAR",
    "WEEKOFYEAR",
    "INSERT",
    "TIME_TO_STR",
    "STR_TO_DATE",
    "STR_TO_TIME",
    "STR_TO_TIMESTAMP",
    "TIMESTAMP_TO_STR",
    "DATE_TO_STR",
    "LOG10",
    "LOG2",
    "LTRIM",
    "RTRIM",
    "CHARINDEX",  # with a start: a CASE over POSITION and SUBSTRING that MonetDB refuses
    "LOCATE",
)


def _hex_number(parser: Postgres.Parser, token: Token) -> exp.Expression:
    """0x41 is the integer 65 in MonetDB, X'41' a blob: sqlglot makes one token of either, so the text tells."""
    is_integer = parser.sql[token.start : token.start + 2].lower() == "0x" or None
    return parser.expression(exp.HexString(this=token.text, is_integer=is_integer), token)


def _time_literal(parser: Postgres.Parser, this: exp.Expression, to: exp.DataType) -> exp.Expression:
    """TIME '12:34:56.789' is a TIME(3) in MonetDB: a literal's precision is its digits. Printed back as
    CAST('12:34:56.789' AS TIME) it would be a TIME(0), rounded to 12:34:57 (found by a differential review: an
    INSERT stored the rounded value and the literal no longer found its row)."""
    text = this.name if isinstance(this, exp.Literal) and this.is_string else ""
    digits = len(text.strip().partition(".")[2]) if "." in text else 0
    if digits and not to.expressions:
        to = exp.DataType.build(f"TIME({min(digits, 6)})", dialect="postgres")
    return parser.expression(exp.Cast(this=this, to=to))


class MonetDB(Postgres):
    # MonetDB sorts NULL as the smallest value: first ascending, last descending (PostgreSQL: the largest). With
    # PostgreSQL's setting an explicit NULLS LAST ascending (NULLS FIRST descending) was dropped as the default
    NULL_ORDERING = "nulls_are_small"

    class Tokenizer(Postgres.Tokenizer):
        # MonetDB: # starts a comment to the end of the line (also in #-, PostgreSQL's JSON delete operator)
        COMMENTS = [*Postgres.Tokenizer.COMMENTS, "#"]
        KEYWORDS = {k: v for k, v in Postgres.Tokenizer.KEYWORDS.items() if k != "#-"}

    class Parser(Postgres.Parser):
        # MonetDB's ^ is bitwise XOR at the level of & and | (5 ^ 3 = 6), not PostgreSQL's POWER (125.0); its # starts
        # a comment, not PostgreSQL's XOR
        BITWISE = {
            **{k: v for k, v in Postgres.Parser.BITWISE.items() if k != TokenType.HASH},
            TokenType.CARET: exp.BitwiseXor,
        }
        EXPONENT: dict = {}
        FUNCTIONS = {**Postgres.Parser.FUNCTIONS, **{name: _verbatim(name) for name in _VERBATIM}}
        PRIMARY_PARSERS = {**Postgres.Parser.PRIMARY_PARSERS, TokenType.HEX_STRING: _hex_number}
        TYPE_LITERAL_PARSERS = {**Postgres.Parser.TYPE_LITERAL_PARSERS, exp.DataType.Type.TIME: _time_literal}

    class Generator(Postgres.Generator):
        # MonetDB reads INTERVAL '1' DAY, not PostgreSQL's INTERVAL '1 DAY' (a syntax error in 11.41)
        SINGLE_STRING_INTERVAL = False
        TYPE_MAPPING = {
            **Postgres.Generator.TYPE_MAPPING,
            exp.DataType.Type.TINYINT: "TINYINT",
            exp.DataType.Type.DOUBLE: "DOUBLE",
            exp.DataType.Type.VARBINARY: "BLOB",
            exp.DataType.Type.BINARY: "BLOB",
            exp.DataType.Type.INT128: "HUGEINT",  # sqlglot reads HUGEINT as INT128, which MonetDB does not know
        }
        TRANSFORMS = {
            **Postgres.Generator.TRANSFORMS,
            exp.BitwiseXor: lambda self, e: self.binary(e, "^"),
            # MonetDB's names, where PostgreSQL's dialect printed STRING_AGG, PERCENTILE_CONT(0.5) WITHIN GROUP,
            # RANDOM(), GEN_RANDOM_UUID() and TRIM(chars FROM s), which MonetDB has not
            exp.GroupConcat: lambda self, e: self.func("GROUP_CONCAT", e.this, e.args.get("separator")),
            exp.Median: lambda self, e: self.func("MEDIAN", e.this),
            exp.Rand: lambda self, e: self.func("RAND", e.this),
            exp.Uuid: lambda self, e: "UUID()",
            exp.Trim: lambda self, e: self.trim_sql(e),  # trim(s, chars), ltrim(...), rtrim(...)
        }

        def hexstring_sql(self, expression: exp.HexString, binary_function_repr: str | None = None) -> str:
            if expression.args.get("is_integer"):
                return f"0x{expression.this}"
            return f"X'{expression.this}'"

        def placeholder_sql(self, expression: exp.Placeholder) -> str:
            # tique renders every slot itself before sending; ':name' is what Template looks for
            return f":{expression.name}" if expression.name else "?"
