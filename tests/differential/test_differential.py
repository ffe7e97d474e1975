"""The bounded differential run: fixed seeds, a few hundred queries and DML statements, tique against plain
MonetDB twins and the TLP oracle (see runner.py). The long run is ``python -m benchmarks differential``."""

from __future__ import annotations

from tests.conftest import sized
from tests.differential.runner import minimal_failures, run

SEEDS = range(1000, 1000 + sized(8, 16))


def test_tique_answers_as_plain_monetdb(embedded_url: str) -> None:
    stats = run(embedded_url, SEEDS, queries=20)
    assert stats.cases == len(SEEDS) and stats.queries >= len(SEEDS) * 75 // 4  # 300 of 16 seeds' 320
    assert stats.both_failed < stats.queries // 4  # most generated statements are valid: the run tests something
    shapes = {"left_join", "window", "cte", "exists", "tlp", "group_by", "interval", "constraint_refused"}
    assert shapes <= set(stats.shapes)
    assert not stats.failures, "\n".join(minimal_failures(stats))
