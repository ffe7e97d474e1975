"""The ``tique`` command."""

from __future__ import annotations

import argparse
import os
import sys

from tique.settings import CHECKPOINT_INTERVAL_S, CHECKPOINT_LOCK_LEASE_MS


def main(argv: list[str] | None = None) -> int:
    from tique import __version__

    parser = argparse.ArgumentParser(prog="tique", description="Snapshot-isolated transactions for MonetDB.")
    parser.add_argument("--version", action="version", version=f"tique {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve a database directory over MAPI (MonetDB's protocol)")
    serve.add_argument("directory", help="database directory (created if missing, with its parent directories)")
    serve.add_argument("--port", type=int, default=50000, help="TCP port on 127.0.0.1 (default 50000)")
    serve.add_argument(
        "--max-clients",
        type=int,
        default=None,
        help="client sessions the server admits at once (default 60: the embedded kernel's 64 less tique's own); "
        "one more is refused with 'maximum concurrent client limit reached'",
    )
    serve.add_argument(
        "--max-failed-logins",
        type=int,
        default=10,
        help="failed logins from one source address within --login-window after which its connections are "
        "refused (with an error saying for how long) until the oldest failure ages out (default 10)",
    )
    serve.add_argument(
        "--login-window",
        type=float,
        default=60.0,
        help="seconds a failed login counts against its source address (default 60)",
    )
    secret = serve.add_mutually_exclusive_group()
    secret.add_argument(
        "--password",
        default=None,
        help="password of the 'monetdb' admin user (visible in ps: prefer --password-file or $TIQUE_PASSWORD; "
        "default: $TIQUE_PASSWORD, else MonetDB's well-known 'monetdb', with a warning)",
    )
    secret.add_argument("--password-file", default=None, help="read the admin password from this file (first line)")

    ckpt = sub.add_parser(
        "checkpoint",
        help="move stable versions to Storage and trim metadata (exit 2: another checkpointer runs; "
        "3: not a tique database)",
    )
    ckpt.add_argument("url", help="monetdb://user:pw@host:port/db (a 'tique serve') or monetdbe:///dir")
    every = f"seconds between runs (default {CHECKPOINT_INTERVAL_S:g})"
    ckpt.add_argument("--interval", type=float, default=CHECKPOINT_INTERVAL_S, help=every)
    ckpt.add_argument(
        "--max-cache-rows", type=int, default=100_000, help="run early when a Cache table holds more rows"
    )
    ckpt.add_argument("--once", action="store_true", help="run one checkpoint and exit")
    ckpt.add_argument("--stats", action="store_true", help="print the metrics (JSON) and exit")
    ckpt.add_argument("--wait", action="store_true", help="wait for a running checkpointer instead of exiting")
    ckpt.add_argument(
        "--lock-lease",
        type=float,
        default=CHECKPOINT_LOCK_LEASE_MS / 1000,
        help="seconds after which a dead checkpointer's lock is free",
    )

    serve.add_argument(
        "--checkpoint-interval",
        type=float,
        default=None,
        help="also run the checkpointer inside the server, every this many seconds (default: off; "
        "or run 'tique checkpoint' separately)",
    )

    elle = sub.add_parser("elle", help="Elle-style consistency checking: run a list-append workload, check histories")
    elle_sub = elle.add_subparsers(dest="elle_command", required=True)
    run = elle_sub.add_parser("run", help="run the workload against a database and check its history")
    run.add_argument("url", help="tique URL (monetdbe:///dir, monetdbe::memory:, monetdb://...)")
    run.add_argument("--clients", type=int, default=8)
    run.add_argument("--txns", type=int, default=2000)
    run.add_argument("--keys", type=int, default=8, help="keys in the active window")
    run.add_argument("--max-ops", type=int, default=4)
    run.add_argument("--system", choices=["tique", "native"], default="tique")
    run.add_argument(
        "--negative",
        choices=["read-latest", "skip-certification"],
        help="break isolation on purpose (only to prove the checker catches it)",
    )
    run.add_argument("--processes", action="store_true", help="clients are processes (needs a monetdb:// URL)")
    run.add_argument(
        "--checkpoint-interval", type=float, default=None, help="run the checkpointer beside the workload (seconds)"
    )
    run.add_argument("--model", default="snapshot-isolation")
    run.add_argument("--out", default="results/elle", help="directory for history.json and results.json")
    check = elle_sub.add_parser("check", help="check a list-append history file (elle-cli's JSON)")
    check.add_argument("file")
    check.add_argument(
        "--model",
        default="snapshot-isolation",
        help="snapshot-isolation (default), strong-snapshot-isolation, serializable, strong-serializable",
    )
    check.add_argument("--json", action="store_true", help="print the result as JSON")

    args = parser.parse_args(argv)
    if args.command == "elle":
        from tique.elle.cli import main as elle_main

        return elle_main(args)
    if args.command == "checkpoint":
        from tique.checkpoint import main as checkpoint_main

        return checkpoint_main(args)
    if args.command == "serve":
        from tique.login_guard import LoginGuard
        from tique.serve import admin_password
        from tique.serve import serve as run_serve

        try:
            guard = LoginGuard(args.max_failed_logins, args.login_window)
            password = admin_password(args.password, args.password_file, os.environ.get("TIQUE_PASSWORD"))
        except OSError as exc:
            print(f"tique serve: cannot read --password-file {args.password_file}: {exc.strerror}", file=sys.stderr)
            return 2
        except ValueError as exc:
            print(f"tique serve: {exc}", file=sys.stderr)
            return 2
        return run_serve(
            args.directory,
            args.port,
            password,
            checkpoint_interval=args.checkpoint_interval,
            max_clients=args.max_clients,
            guard=guard,
        )
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
