"""Guarantee: REAL and DOUBLE zeros keep their signs while writers flip them beside a checkpointer that moves and
deletes rows every few milliseconds (so new versions keep landing in slots deleted rows left; see
tests/adversarial/test_zero_signs_in_reused_slots.py). A small run of the stress that found a version coming out
with the wrong sign 20 sends running (tique/transaction.py, zero_signs_checked): no statement fails, and the final
table equals the writers' model."""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable

import tique
from tests.conftest import sized
from tique.checkpoint import Checkpointer
from tique.engine import open_engine

KEYS, WRITERS = 30, 3


def _sign(value: float) -> str:
    return "-" if math.copysign(1.0, value) < 0 else "+"


def test_flipping_zeros_beside_a_busy_checkpointer(
    url: str, connect: Callable[..., tique.Connection], unique_name: Callable[[str], str]
) -> None:
    t = unique_name("zw")
    setup = connect()
    setup.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, v INT, f DOUBLE, g REAL)")
    setup.cursor().executemany(f"INSERT INTO {t} VALUES (%s, 0, 0.0, 0.0)", [(k,) for k in range(KEYS)])
    setup.commit()
    model = {k: (0, 0.0, 0.0) for k in range(KEYS)}
    stop = threading.Event()
    errors: list[str] = []
    commits = [0]

    def writer(w: int) -> None:
        rng = random.Random(w)
        conn = connect()
        cur = conn.cursor()
        mine = [k for k in range(KEYS) if k % WRITERS == w]
        while not stop.is_set():
            new = {}
            try:
                for k in rng.sample(mine, 3):
                    f, g = rng.choice((0.0, -0.0)), rng.choice((0.0, -0.0, 1.5))
                    if rng.random() < 0.5:  # as text: the engine reads the literals
                        cur.execute(f"UPDATE {t} SET v = v + 1, f = {f!r}e0, g = {g!r}e0 WHERE k = {k}")
                    else:
                        cur.execute(f"UPDATE {t} SET v = v + 1, f = %s, g = %s WHERE k = %s", (f, g, k))
                    new[k] = (model[k][0] + 1, f, g)
                conn.commit()
                model.update(new)
                commits[0] += 1
            except tique.SerializationFailure:
                conn.rollback()
            except Exception as exc:  # every other failure is the finding
                errors.append(f"{type(exc).__name__}: {exc}")
                conn.rollback()

    def checkpointing() -> None:
        checkpointer = Checkpointer(open_engine(url).connect())
        while not stop.is_set():
            report = checkpointer.run_once()
            errors.extend(e for e in report.errors if t in e)
            time.sleep(0.005)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    threads.append(threading.Thread(target=checkpointing))
    for thread in threads:
        thread.start()
    time.sleep(sized(4, 30))
    stop.set()
    for thread in threads:
        thread.join(60)
    assert not errors, errors[:5]
    assert commits[0] >= 20
    got = {k: (v, _sign(f), _sign(g)) for k, v, f, g in setup.execute(f"SELECT k, v, f, g FROM {t}").fetchall()}
    assert got == {k: (v, _sign(f), _sign(g)) for k, (v, f, g) in model.items()}
