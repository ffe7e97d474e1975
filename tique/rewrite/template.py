"""A statement ready to run: SQL text split around its slots (snapshot, transaction id, parameters).

Rewriting happens once per distinct statement text; each execution only joins the parts with the values.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from sqlglot import exp

from tique.rewrite.dialect import MonetDB
from tique.rewrite.lists import put_back

# Slot names carry a per-process nonce, so no text a user writes can be mistaken for one.
NONCE = secrets.token_hex(3)
SLOT_PREFIX = f"tq{NONCE}_"  # a slot in SQL text is ":" + SLOT_PREFIX + its name
_SLOT_PREFIX = SLOT_PREFIX
_SLOT_RE = re.compile(r":" + _SLOT_PREFIX + r"(\w+)")

STS = "sts"
TXID = "txid"


def slot(name: str) -> exp.Placeholder:
    """A slot in a tree; ``name`` is sts, txid, pN (N-th positional parameter) or n_NAME (named)."""
    return exp.Placeholder(this=_SLOT_PREFIX + name)


def slot_name(node: exp.Expression) -> str | None:
    if isinstance(node, exp.Placeholder) and node.name.startswith(_SLOT_PREFIX):
        return node.name[len(_SLOT_PREFIX) :]
    return None


@dataclass(frozen=True)
class Template:
    parts: tuple[str, ...]  # literal SQL, alternating with slots: parts[0] slot[0] parts[1] ...
    slots: tuple[str, ...]

    @classmethod
    def from_tree(cls, tree: exp.Expression) -> Template:
        return cls.from_sql(put_back(tree.sql(dialect=MonetDB), _SLOT_PREFIX))

    @classmethod
    def from_sql(cls, sql: str) -> Template:
        pieces = _SLOT_RE.split(sql)
        return cls(tuple(pieces[0::2]), tuple(pieces[1::2]))

    def render(self, values: dict[str, str]) -> str:
        out = [self.parts[0]]
        for name, part in zip(self.slots, self.parts[1:]):
            out.append(values[name])
            out.append(part)
        return "".join(out)

    @property
    def param_slots(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s for s in self.slots if s not in (STS, TXID)))
