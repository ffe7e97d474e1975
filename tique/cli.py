"""The ``tique`` command."""

from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tique", description="Snapshot-isolated transactions for MonetDB.")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve a database directory over MAPI (MonetDB's protocol)")
    serve.add_argument("directory", help="database directory (created if missing)")
    serve.add_argument("--port", type=int, default=50000, help="TCP port on 127.0.0.1 (default 50000)")
    serve.add_argument(
        "--password",
        default=os.environ.get("TIQUE_PASSWORD", "monetdb"),
        help="password of the 'monetdb' admin user (default: $TIQUE_PASSWORD or 'monetdb')",
    )

    args = parser.parse_args(argv)
    if args.command == "serve":
        from tique.serve import serve as run_serve

        return run_serve(args.directory, args.port, args.password)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
