"""Setting up a database for tique, once per open: metadata, sequencer, privileges, recovery, views.

One sequence, used by every way a database is opened: ``tique.connect`` (tique/database.py), ``tique serve``
(tique/serve.py) and the checkpointer's own open (tique/checkpoint/cli.py). The process that holds the kernel
(embedded) recovers; a client over MAPI finds a database its server already recovered.
"""

from __future__ import annotations

from tique import catalog, privileges, string_offsets, views
from tique.engine.base import RawConnection
from tique.recovery import RecoveryReport, recover
from tique.sequencer import CSequencer, Sequencer


def install(conn: RawConnection, sequencer: Sequencer, *, owner: bool = True) -> None:
    """tique's metadata tables, the sequencer's functions and (C sequencer) the protocol procedures with PUBLIC's
    privileges. tique's owner installs; an ordinary user of a served database runs the protocol with PUBLIC's
    privileges (tique/privileges.py), so its sequencer only checks the module is there."""
    if owner:
        catalog.install(conn)
    elif isinstance(sequencer, CSequencer):
        sequencer.restrict()
    sequencer.install(conn)
    if owner and isinstance(sequencer, CSequencer):
        privileges.install(conn)


def recover_and_view(conn: RawConnection, sequencer: Sequencer) -> RecoveryReport:
    """Recovery (the process holding the kernel, before any transaction runs), then the view of every table made
    before tique made views."""
    report = recover(conn, sequencer)
    tables = catalog.Catalog()
    tables.refresh(conn)
    views.ensure(conn, tables.all())
    # a restart narrowed an empty column's offsets again; a Cache the engine lacks is not in sys.storage
    string_offsets.widen_caches(conn, [info.cache for info in tables.all() if info.kind == "tx"])
    return report


def bootstrap(conn: RawConnection, sequencer: Sequencer, *, owner: bool = True) -> RecoveryReport:
    """Everything the process that holds an embedded kernel does once when it opens the database."""
    install(conn, sequencer, owner=owner)
    return recover_and_view(conn, sequencer)
