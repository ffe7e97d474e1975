from __future__ import annotations

from collections.abc import Iterator

import pytest

import tique
from tests.conftest import ServeProcess


@pytest.fixture
def conns(embedded_url: str, server: ServeProcess) -> Iterator[dict[str, tique.Connection]]:
    """A connection embedded and one over MAPI (tests/embedded_and_served.py compares their answers)."""
    made = {"embedded": tique.connect(embedded_url), "server": tique.connect(server.url)}
    yield made
    for conn in made.values():
        conn.close()
