"""A checkpointer that stops at a named step of its run and waits to be killed (used by test_checkpoint).

python tests/checkpoint_client.py URL STEP     STEP: one of tique.checkpoint.STEPS
"""

from __future__ import annotations

import sys
import time

from tique.checkpoint import STEPS, Checkpointer, open_for_checkpoint


def main(url: str, step: str) -> None:
    if step not in STEPS:
        raise SystemExit(f"unknown step {step!r}: one of {', '.join(STEPS)}")

    def pause(name: str) -> None:
        if name == step:
            print(f"paused at {name}", flush=True)
            time.sleep(3600)

    _, conn = open_for_checkpoint(url)
    # a short lock lease: the test's next checkpointer takes the lock soon after this one is killed
    Checkpointer(conn, step_hook=pause, lock_lease_ms=1000).run_once()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
