"""sqlglot has no MonetDB dialect; PostgreSQL's is the closest reader and writer. Differences go here."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.tokens import TokenType


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
        }

        def placeholder_sql(self, expression: exp.Placeholder) -> str:
            # tique renders every slot itself before sending; ':name' is what Template looks for
            return f":{expression.name}" if expression.name else "?"
