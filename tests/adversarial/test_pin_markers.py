"""A call naming transaction id 0 or a negative id never touches the snapshot pins of live transactions.

The C module's pin table marks a free entry with id 0 (and a freed one with -1). ``pin_find(0)`` used to find
such an entry, and the caller then dropped it as if it were a pin: one live pin fewer was counted, so the
horizon's scan (which stops once it has seen that many) could stop before a live snapshot, and the checkpointer
then moved versions that snapshot must not see into Storage. Any session could do it: ``tique.snapshot_of(0)``,
``tique.next_cts_for(0)``, ``tique.renew(0, ...)``; found when a test's finish named txid 0."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import tique
from tique.checkpoint import Checkpointer
from tique.engine import open_engine
from tique.errors import DatabaseError

MARKERS = (0, -1, -9223372036854775807)


def _calls(txid: int) -> list[str]:
    return [
        f"SELECT tique.snapshot_of({txid})",
        f"SELECT tique.end_txn_as({txid}, 0)",
        f"SELECT tique.renew_as({txid}, 1000, 0)",
        f"SELECT tique.next_cts_as({txid}, 0)",
        f"SELECT tique.begin_txn_as({txid}, 1000, 0)",  # a begin whose previous id is a marker
    ]


def test_marker_ids_leave_live_pins_alone(embedded_url: str, unique_name: Callable[[str], str]) -> None:
    name = unique_name("pins")
    setup = tique.connect(embedded_url)
    setup.cursor().execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, v INT)")
    setup.cursor().execute(f"INSERT INTO {name} VALUES (1, 0)")
    setup.commit()
    setup.close()
    old, writer = tique.connect(embedded_url), tique.connect(embedded_url)
    raw = open_engine(embedded_url).connect()
    checkpointer = Checkpointer(open_engine(embedded_url).connect())
    begun: list[int] = []
    try:
        ocur = old.cursor()
        ocur.execute(f"SELECT v FROM {name} WHERE k = 1")
        assert ocur.fetchall() == [(0,)]  # the old snapshot is pinned
        pins = int(raw.execute("SELECT tique.pins()").scalar())
        for marker in MARKERS:
            for sql in _calls(marker):
                try:
                    row = raw.execute(sql).rows
                except DatabaseError:
                    continue  # refused: no such transaction
                if sql.startswith("SELECT tique.begin_txn_as"):
                    begun.append(int(row[0][0]))
        assert int(raw.execute("SELECT tique.pins()").scalar()) == pins + len(begun)
        for _ in range(3):
            writer.cursor().execute(f"UPDATE {name} SET v = v + 1 WHERE k = 1")
            writer.commit()
            checkpointer.run_once()
        ocur.execute(f"SELECT v FROM {name} WHERE k = 1")
        assert ocur.fetchall() == [(0,)], "the checkpointer moved versions a live snapshot must not see"
        ocur.execute(f"SELECT SUM(v) FROM {name}")
        assert ocur.fetchall() == [(0,)]
        old.rollback()
        ocur.execute(f"SELECT v FROM {name} WHERE k = 1")
        assert ocur.fetchall() == [(3,)]
    finally:
        for txid in begun:
            raw.execute(f"SELECT tique.end_txn_as({txid}, 0)")
        checkpointer.conn.close()
        raw.close()
        old.close()
        writer.close()


@pytest.mark.parametrize("marker", MARKERS)
def test_a_marker_id_is_no_snapshot(embedded_url: str, marker: int) -> None:
    raw = open_engine(embedded_url).connect()
    try:
        with pytest.raises(DatabaseError, match="holds no snapshot"):
            raw.execute(f"SELECT tique.snapshot_of({marker})")
        assert int(raw.execute(f"SELECT tique.end_txn_as({marker}, 0)").scalar()) == 0
        assert int(raw.execute(f"SELECT tique.renew_as({marker}, 1000, 0)").scalar()) == 0
    finally:
        raw.close()
