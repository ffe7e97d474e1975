"""Dispatch: python -m benchmarks {engine,...} [options]."""

from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "engine": "benchmarks.engine",
    "txn": "benchmarks.txn",
    "elle": "benchmarks.elle",
    "checkpoint": "benchmarks.checkpoint",
    "tpcc": "benchmarks.tpcc.cli",
    "contention": "benchmarks.tpcc.cli",
    "ch": "benchmarks.tpcc.cli",
    "htap": "benchmarks.tpcc.cli",
    "longtx": "benchmarks.tpcc.cli",
    "profile": "benchmarks.tpcc.cli",
    "soak": "benchmarks.soak",
    "report": "benchmarks.report",
    "differential": "benchmarks.differential",
    "faults": "benchmarks.faults",
    "flush_costs": "benchmarks.flush_costs",
}


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        print(
            f"usage: python -m benchmarks {{{','.join(COMMANDS)}}} [options]  (--help after a command for its options)"
        )
        return 2
    module = importlib.import_module(COMMANDS[sys.argv[1]])
    if module.__name__ == "benchmarks.tpcc.cli":
        return int(module.main(sys.argv[2:], sys.argv[1]))
    return int(module.main(sys.argv[2:]))


if __name__ == "__main__":
    sys.exit(main())
