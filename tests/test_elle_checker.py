"""The checker on small hand-written histories: each anomaly detected and named, valid histories accepted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tique.elle.checker import analyze
from tique.elle.history import HistoryError, load, parse

Mops = list[list[Any]]


class H:
    """Builds a history: each call adds one transaction (invoke + completion) at increasing times."""

    def __init__(self) -> None:
        self.ops: list[dict[str, Any]] = []
        self.clock = 0

    def txn(
        self, process: int, done: Mops, kind: str = "ok", invoke_at: int | None = None, complete_at: int | None = None
    ) -> H:
        invoked = [[f, k, None if f == "r" else v] for f, k, v in done]
        self.clock += 10
        start = invoke_at if invoke_at is not None else self.clock
        self.ops.append({"index": len(self.ops), "type": "invoke", "process": process, "value": invoked, "time": start})
        self.clock += 10
        end = complete_at if complete_at is not None else self.clock
        self.ops.append({"index": len(self.ops), "type": kind, "process": process, "value": done, "time": end})
        return self

    def check(self) -> Any:
        return analyze(parse(json.loads(json.dumps(self.ops))))


def test_valid_history_is_valid_everywhere() -> None:
    r = H().txn(0, [["append", 1, 1]]).txn(1, [["r", 1, [1]], ["append", 1, 2]]).txn(2, [["r", 1, [1, 2]]]).check()
    assert r.anomalies == {}
    assert all(r.verdicts().values())


def test_write_skew_is_g2_item_allowed_by_snapshot_isolation() -> None:
    r = (
        H()
        .txn(0, [["r", 1, []], ["r", 2, []], ["append", 1, 1]], invoke_at=0, complete_at=50)
        .txn(1, [["r", 1, []], ["r", 2, []], ["append", 2, 2]], invoke_at=0, complete_at=50)
        .txn(2, [["r", 1, [1]], ["r", 2, [2]]])
        .check()
    )
    assert set(r.anomalies) == {"G2-item"}
    assert r.valid("snapshot-isolation") and r.valid("strong-snapshot-isolation")
    assert not r.valid("serializable")


def test_g0_write_cycle() -> None:
    r = (
        H()
        .txn(0, [["append", 1, 1], ["append", 2, 1]])
        .txn(1, [["append", 1, 2], ["append", 2, 2]])
        .txn(2, [["r", 1, [1, 2]], ["r", 2, [2, 1]]])
        .check()
    )
    assert "G0" in r.anomalies and not r.valid("snapshot-isolation")
    assert any("-ww->" in line for line in r.anomalies["G0"][0].explanation)


def test_g1a_aborted_read() -> None:
    r = H().txn(0, [["append", 1, 1]], kind="fail").txn(1, [["r", 1, [1]]]).check()
    assert "G1a" in r.anomalies


def test_g1b_intermediate_read() -> None:
    r = H().txn(0, [["append", 1, 1], ["append", 1, 2]]).txn(1, [["r", 1, [1]]]).check()
    assert "G1b" in r.anomalies


def test_g1c_circular_information_flow() -> None:
    r = (
        H()
        .txn(0, [["append", 1, 1], ["r", 2, [2]]], invoke_at=0, complete_at=50)
        .txn(1, [["append", 2, 2], ["r", 1, [1]]], invoke_at=0, complete_at=50)
        .check()
    )
    assert "G1c" in r.anomalies


def test_g_single_read_skew() -> None:
    r = (
        H()
        .txn(0, [["append", 1, 1], ["append", 2, 1]], invoke_at=0, complete_at=50)
        .txn(1, [["append", 1, 2], ["r", 2, []]], invoke_at=0, complete_at=50)
        .txn(2, [["r", 1, [1, 2]]])
        .check()
    )
    assert "G-single" in r.anomalies and not r.valid("snapshot-isolation")
    cycle = r.anomalies["G-single"][0]
    assert len(cycle.txns) == 2 and sum("-rw->" in line for line in cycle.explanation) == 1


def test_g_nonadjacent() -> None:
    # T1 -rw-> T2 -wr-> T3 -rw-> T4 -wr-> T1: two anti-dependencies, not adjacent
    r = (
        H()
        .txn(0, [["r", "x", []], ["r", "w", [1]]], invoke_at=0, complete_at=100)
        .txn(1, [["append", "x", 1], ["append", "y", 1]], invoke_at=0, complete_at=100)
        .txn(2, [["r", "y", [1]], ["r", "z", []]], invoke_at=0, complete_at=100)
        .txn(3, [["append", "z", 1], ["append", "w", 1]], invoke_at=0, complete_at=100)
        .txn(4, [["r", "x", [1]], ["r", "z", [1]]], invoke_at=200, complete_at=210)
        .check()
    )
    assert "G-nonadjacent" in r.anomalies and "G-single" not in r.anomalies
    assert not r.valid("snapshot-isolation")


def test_lost_update() -> None:
    r = (
        H()
        .txn(0, [["r", 1, []], ["append", 1, 1]], invoke_at=0, complete_at=50)
        .txn(1, [["r", 1, []], ["append", 1, 2]], invoke_at=0, complete_at=50)
        .txn(2, [["r", 1, [1, 2]]])
        .check()
    )
    assert "lost-update" in r.anomalies and not r.valid("snapshot-isolation")


def test_internal_inconsistency() -> None:
    r = H().txn(0, [["append", 1, 1], ["r", 1, []]]).check()
    assert "internal" in r.anomalies


def test_incompatible_order() -> None:
    r = (
        H()
        .txn(0, [["append", 1, 1]])
        .txn(1, [["append", 1, 2]])
        .txn(2, [["r", 1, [1, 2]]])
        .txn(3, [["r", 1, [2, 1]]])
        .check()
    )
    assert "incompatible-order" in r.anomalies


def test_duplicate_elements() -> None:
    r = H().txn(0, [["append", 1, 1]]).txn(1, [["r", 1, [1, 1]]]).check()
    assert "duplicate-elements" in r.anomalies


def test_stale_read_is_a_realtime_anomaly_only() -> None:
    # T1 appends and completes; T2 begins afterwards and still reads the empty list
    r = H().txn(0, [["append", 1, 1]], invoke_at=0, complete_at=10).txn(1, [["r", 1, []]], invoke_at=20, complete_at=30)
    result = r.txn(2, [["r", 1, [1]]], invoke_at=40, complete_at=50).check()
    assert "G-single-realtime" in result.anomalies
    assert result.valid("snapshot-isolation") and not result.valid("strong-snapshot-isolation")


def test_info_transactions_may_or_may_not_have_committed() -> None:
    r = H().txn(0, [["append", 1, 1]], kind="info").txn(1, [["r", 1, [1]]]).check()
    assert r.anomalies == {}


def test_truncated_file_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_text('[{"index": 0, "type": "invoke", "process": 0, "value": [["r", 1, null]]},\n {"index": 1, "ty')
    with pytest.raises(HistoryError, match="line 2"):
        load(path)


@pytest.mark.parametrize(
    ("op", "message"),
    [
        ({"index": 3, "type": "crash", "process": 0, "value": []}, "unknown operation type 'crash'"),
        ({"index": 3, "type": "ok", "process": 0, "value": [["cas", 1, 2]]}, "unknown micro-operation 'cas'"),
        ({"index": 3, "type": "ok", "process": 0, "value": [["r", 1, 5]]}, "must return a list"),
        ({"index": 3, "type": "ok", "f": "read", "process": 0, "value": []}, "unknown function"),
    ],
)
def test_unknown_things_are_refused_with_the_index(op: dict[str, Any], message: str) -> None:
    with pytest.raises(HistoryError, match=message) as info:
        parse([op])
    assert "index 3" in str(info.value)
