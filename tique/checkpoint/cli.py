"""``tique checkpoint``: one run, a loop, or the stats, with exit codes a supervisor can act on."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading

from tique.checkpoint.algorithm import Checkpointer, CheckpointerBusy
from tique.checkpoint.opening import NotATiqueDatabase, open_for_checkpoint
from tique.checkpoint.scheduler import run_loop
from tique.checkpoint.stats import stats
from tique.errors import DatabaseError


def main(args: argparse.Namespace) -> int:
    """``tique checkpoint``: exit 0, 1 on an error, 2 when another checkpointer holds the lock, 3 when the
    database is not a tique database."""
    try:
        engine, conn = open_for_checkpoint(args.url)
    except NotATiqueDatabase as exc:
        print(f"tique checkpoint: {exc}", file=sys.stderr)
        return 3
    except DatabaseError as exc:
        print(f"tique checkpoint: cannot open {args.url}: {exc}", file=sys.stderr)
        return 1
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        if args.stats:
            print(json.dumps(stats(conn), indent=2, default=str))
            return 0
        ckpt = Checkpointer(conn, lock_lease_ms=int(args.lock_lease * 1000))
        while True:
            try:
                if args.once:
                    print(ckpt.run_once().line(), flush=True)
                else:
                    print(f"tique checkpoint: every {args.interval} s on {engine.describe()}", flush=True)
                    run_loop(ckpt, args.interval, args.max_cache_rows, stop, lambda r: print(r.line(), flush=True))
                break
            except CheckpointerBusy as exc:
                if not args.wait:
                    print(f"tique checkpoint: {exc}; exiting (--wait waits for it)", file=sys.stderr)
                    return 2
                if stop.wait(1.0):
                    break
        ckpt.release()
        return 0
    except KeyboardInterrupt:
        return 0
    except DatabaseError as exc:
        print(f"tique checkpoint: {exc}", file=sys.stderr)
        return 1
    finally:
        conn.close()
        engine.close()
