"""How often MonetDB 11.41 returns a wrong string to a reader while another session appends to the same column.

Each round is a fresh database in a child process: a table with two fixed rows, one session appending rows
(growing the column's heaps), one reading the two fixed rows over and over for ``--seconds``. A round is bad when
any read returned other values. The query forms compared:

- ``plain``: ``SELECT id, v, name`` (the strings come out of the column's own heap);
- ``copy``: ``name || ''`` (a copy made by the statement);
- ``castcopy``: ``CAST(name || '' AS VARCHAR(128))``;
- ``blob``: a BLOB column, plain;
- ``guarded``: ``plain``, with the writer's statements and the reader's kept apart by tique's AppendGuard
  (tique/append_guard.py: reads and appends of a table wait for each other);
- ``tique``: the rows read through tique (a writer committing, the checkpointer every 20 ms);
- ``mapi``: ``plain`` by two MAPI sessions of a served kernel (as ``tique serve`` serves its clients);
- ``mapi_turns``: ``mapi``, each statement taking its turn in tique's C module (tique/turns.py), as tique's MAPI
  clients do.

    python -m benchmarks.string_race --rounds 12 --seconds 6 --out benchmarks/results_scale/string_race

writes ``<out>.json`` and ``<out>.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

FORMS = ("plain", "copy", "castcopy", "blob", "guarded", "tique", "mapi", "mapi_turns")
QUERIES = {
    "plain": "SELECT id, name FROM tt WHERE id < 10",
    "copy": "SELECT id, name || '' FROM tt WHERE id < 10",
    "castcopy": "SELECT id, CAST(name || '' AS VARCHAR(128)) FROM tt WHERE id < 10",
    "blob": "SELECT id, b FROM tt WHERE id < 10",
    "guarded": "SELECT id, name FROM tt WHERE id < 10",
}


def _raw_round(directory: str, form: str, seconds: float) -> dict[str, object]:
    from tique.append_guard import AppendGuard
    from tique.database import Database

    db = Database.get(f"monetdbe://{directory}")
    writer, reader = db.connect_raw(), db.connect_raw()
    writer.execute("CREATE TABLE tt (id INT, name VARCHAR(128), b BLOB)")
    writer.execute("INSERT INTO tt VALUES (1, 'a', x'0a0b'), (2, 'b', x'0c0d0e')")
    want = {(1, b"\x0a\x0b"), (2, b"\x0c\x0d\x0e")} if form == "blob" else {(1, "a"), (2, "b")}

    guard = AppendGuard() if form == "guarded" else None
    tables = ["tt"] if guard is not None else []

    def write(i: int) -> None:
        with guard.appending(tables) if guard is not None else contextlib.nullcontext():
            writer.execute(f"INSERT INTO tt VALUES ({i + 10}, 'n{i} {'p' * (i % 50)}', x'{'ab' * (i % 40)}')")

    def read() -> set[tuple[object, ...]]:
        def run() -> set[tuple[object, ...]]:
            return {tuple(row) for row in reader.execute(QUERIES[form]).rows}

        return guard.reading(tables, run) if guard is not None else run()

    result = _race(write, read, want, seconds)
    writer.close()
    reader.close()
    return result


def _tique_round(directory: str, seconds: float) -> dict[str, object]:
    import tique
    from tique.checkpoint import Checkpointer
    from tique.database import Database

    url = f"monetdbe://{directory}"
    setup = tique.connect(url)
    cur = setup.cursor()
    cur.execute("CREATE TABLE t (k INT PRIMARY KEY, s VARCHAR(100))")
    cur.executemany("INSERT INTO t VALUES (%s, %s)", [(k, f"orig{k}") for k in range(5)])
    setup.commit()
    raw = Database.get(url).connect_raw()
    checkpointer = Checkpointer(raw)
    checkpointer.run_once()
    writing, reading = tique.connect(url), tique.connect(url)
    want = {(k, f"orig{k}") for k in range(5)}

    def write(i: int) -> None:
        writing.cursor().execute("INSERT INTO t VALUES (%s, %s)", (1000 + i, f"new {i} " + "p" * (i % 60)))
        writing.commit()
        if i % 10 == 0:
            checkpointer.run_once()

    def read() -> set[tuple[object, ...]]:
        c = reading.cursor()
        c.execute("SELECT k, s FROM t WHERE k < 5")
        rows = {tuple(row) for row in c.fetchall()}
        reading.commit()
        return rows

    result = _race(write, read, want, seconds)
    for conn in (writing, reading, setup):
        conn.close()
    raw.close()
    return result


def _mapi_round(directory: str, form: str, seconds: float) -> dict[str, object]:
    from benchmarks.common import free_port
    from tique.engine.server import ServerEngine
    from tique.engine.url import parse_url

    port = free_port()
    log = Path(directory).with_suffix(".log")
    with open(log, "wb") as out:  # a process of its own, as tique serve runs (in the same one, the race is rarer)
        server = subprocess.Popen(
            [sys.executable, "-m", "tique.cli", "serve", directory, "--port", str(port), "--password", "monetdb"],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 120
        while b"ready on" not in log.read_bytes():
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"tique serve did not start: {log.read_text()[-2000:]}")
            time.sleep(0.05)
        engine = ServerEngine(parse_url(f"monetdb://monetdb:monetdb@127.0.0.1:{port}/{Path(directory).name}"))
        engine.turns.enabled = form == "mapi_turns"
        writer, reader = engine.connect(), engine.connect()
        writer.execute("CREATE TABLE tt (id INT, name VARCHAR(128))")
        writer.execute("INSERT INTO tt VALUES (1, 'a'), (2, 'b')")
        want = {(1, "a"), (2, "b")}

        def write(i: int) -> None:
            with engine.turns.appending(["tt"]):
                writer.execute(f"INSERT INTO tt VALUES ({i + 10}, 'n{i} {'p' * (i % 50)}')")

        def read() -> set[tuple[object, ...]]:
            rows = engine.turns.reading(["tt"], lambda: reader.execute(QUERIES["plain"]).rows)
            return {tuple(row) for row in rows}

        result = _race(write, read, want, seconds)
        writer.close()
        reader.close()
        return result
    finally:
        server.terminate()
        server.wait(60)


def _race(write, read, want: set[tuple[object, ...]], seconds: float) -> dict[str, object]:  # type: ignore[no-untyped-def]
    stop = threading.Event()
    counts = {"writes": 0, "reads": 0, "bad": 0, "errors": 0}
    seen: list[str] = []

    def writer() -> None:
        while not stop.is_set():
            counts["writes"] += 1
            write(counts["writes"])

    def reader() -> None:
        while not stop.is_set():
            try:
                rows = read()
            except Exception as exc:  # a garbled string that is not UTF-8 fails to decode: counted as wrong
                counts["errors"] += 1
                seen.append(f"{type(exc).__name__}: {exc}"[:160])
                continue
            counts["reads"] += 1
            if rows != want:
                counts["bad"] += 1
                seen.append(repr(sorted(rows, key=repr))[:160])

    threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    return {**counts, "examples": seen[:3]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--forms", default=",".join(FORMS))
    parser.add_argument("--out", default="", help="path without suffix: writes .json and .md")
    parser.add_argument("--child", nargs=2, metavar=("FORM", "DIRECTORY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        form, directory = args.child
        if form == "tique":
            result = _tique_round(directory, args.seconds)
        elif form.startswith("mapi"):
            result = _mapi_round(directory, form, args.seconds)
        else:
            result = _raw_round(directory, form, args.seconds)
        print(json.dumps(result))
        return
    forms = args.forms.split(",")
    rounds: dict[str, list[dict[str, object]]] = {form: [] for form in forms}
    for n in range(args.rounds):  # the forms alternate, so the machine's load falls on all alike
        for form in forms:
            with tempfile.TemporaryDirectory() as tmp:
                ran = subprocess.run(
                    [
                        *(sys.executable, "-m", "benchmarks.string_race", "--seconds", str(args.seconds)),
                        *("--child", form, str(Path(tmp, "db"))),
                    ],
                    capture_output=True,
                    text=True,
                    timeout=args.seconds * 10 + 120,
                )
            if ran.returncode != 0:
                raise SystemExit(f"round {n} of {form} failed: {ran.stderr[-2000:]}")
            rounds[form].append(json.loads(ran.stdout.strip().splitlines()[-1]))
            print(f"round {n + 1}/{args.rounds} {form}: {rounds[form][-1]}", file=sys.stderr)
    lines = [
        f"MonetDB 11.41, {args.rounds} rounds of {args.seconds:g} s per form (fresh database each), forms alternating",
        "",
        "| form | rounds with a wrong read | wrong reads | reads | writes |",
        "|---|---|---|---|---|",
    ]
    for form, results in rounds.items():
        wrong_rounds = sum(1 for r in results if int(r["bad"]) + int(r["errors"]) > 0)  # type: ignore[call-overload]
        total = {key: sum(int(r[key]) for r in results) for key in ("bad", "errors", "reads", "writes")}  # type: ignore[call-overload]
        lines.append(
            f"| {form} | {wrong_rounds} of {len(results)} | {total['bad'] + total['errors']} | {total['reads']} | "
            f"{total['writes']} |"
        )
    print("\n".join(lines))
    if args.out:
        Path(f"{args.out}.json").write_text(json.dumps({"rounds": rounds, "seconds": args.seconds}, indent=1))
        Path(f"{args.out}.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
