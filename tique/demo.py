"""``make demo``: tique's main job on the embedded engine, in about half a minute.

Four client threads move money between 1,000 accounts in short read-write transactions (first committer
wins; retried on conflict) while an analytical client repeatedly sums every balance and groups them. Snapshot
Isolation means every analytical query sees a total of exactly the starting amount, however many transfers
are in flight. The demo prints committed and aborted counts, throughput, and the analytical query's time.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

from tqdm import tqdm

import tique

ACCOUNTS = 1000
START_BALANCE = 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tique.demo", description=__doc__)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="tique-demo-") as tmp:
        url = f"monetdbe://{Path(tmp) / 'bank'}"
        setup = tique.connect(url)
        setup.cursor().execute("CREATE TABLE accounts (id INT PRIMARY KEY, branch INT, balance BIGINT)")
        setup.bulk_load("accounts", [(i, i % 10, START_BALANCE) for i in range(ACCOUNTS)])
        setup.close()
        print(f"tique demo: {ACCOUNTS} accounts x {START_BALANCE} on the embedded engine ({url})")
        print(f"{args.clients} clients transfer money for {args.seconds:.0f} s", end="")
        print(" while an analytical client sums all balances\n")

        stop = threading.Event()
        counts = {"committed": 0, "aborted": 0}
        lock = threading.Lock()
        olap_times: list[float] = []
        totals: set[int] = set()

        def transfer_client(seed: int) -> None:
            rng = random.Random(seed)
            conn = tique.connect(url)
            cur = conn.cursor()
            while not stop.is_set():
                a, b = rng.sample(range(ACCOUNTS), 2)
                amount = rng.randint(1, 50)
                try:
                    cur.execute("SELECT balance FROM accounts WHERE id = %s", (a,))
                    (balance,) = cur.fetchone()
                    if balance >= amount:
                        cur.execute("UPDATE accounts SET balance = balance - %s WHERE id = %s", (amount, a))
                        cur.execute("UPDATE accounts SET balance = balance + %s WHERE id = %s", (amount, b))
                    conn.commit()
                    outcome = "committed"
                except tique.SerializationFailure:
                    conn.rollback()
                    outcome = "aborted"
                with lock:
                    counts[outcome] += 1
            conn.close()

        def analytical_client() -> None:
            conn = tique.connect(url)
            cur = conn.cursor()
            while not stop.is_set():
                t0 = time.perf_counter()
                cur.execute("SELECT SUM(balance), COUNT(*) FROM accounts")
                total, _ = cur.fetchone()
                cur.execute("SELECT branch, SUM(balance), AVG(balance) FROM accounts GROUP BY branch ORDER BY branch")
                cur.fetchall()
                conn.commit()
                olap_times.append(time.perf_counter() - t0)
                totals.add(int(total))
            conn.close()

        threads = [threading.Thread(target=transfer_client, args=(i,)) for i in range(args.clients)]
        threads.append(threading.Thread(target=analytical_client))
        started = time.perf_counter()
        for th in threads:
            th.start()
        with tqdm(total=int(args.seconds), desc="running", unit="s", bar_format="{l_bar}{bar}| {n}/{total} s") as bar:
            while (elapsed := time.perf_counter() - started) < args.seconds:
                time.sleep(min(1.0, args.seconds - elapsed))
                bar.n = int(time.perf_counter() - started)
                with lock:
                    bar.set_postfix(committed=counts["committed"], aborted=counts["aborted"])
        stop.set()
        for th in threads:
            th.join()
        elapsed = time.perf_counter() - started

        check = tique.connect(url)
        final = check.execute("SELECT SUM(balance) FROM accounts").fetchone()[0]  # Connection.execute: a cursor
        check.close()
        attempted = counts["committed"] + counts["aborted"]
        expected = ACCOUNTS * START_BALANCE
        print(
            f"\ntransactions committed: {counts['committed']}, aborted (write-write conflicts): {counts['aborted']}"
            f" ({100 * counts['aborted'] / max(attempted, 1):.1f}% of {attempted})"
        )
        print(f"throughput: {counts['committed'] / elapsed:.0f} committed transactions/s with {args.clients} clients")
        if olap_times:
            print(
                f"analytical query (sum + group by over all accounts): {len(olap_times)} runs, "
                f"median {1000 * statistics.median(olap_times):.1f} ms"
            )
        ok = totals == {expected} and final == expected
        print(
            f"every analytical snapshot saw total {sorted(totals)} (expected {expected}); final total {final}: "
            f"{'consistent' if ok else 'INCONSISTENT'}"
        )
        return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
