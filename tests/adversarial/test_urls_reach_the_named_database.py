"""A connection reaches the database it names or fails saying why: never a database the name merely starts with.

Found by the security probe (issue 16, item 7): ``database="db1#x"`` connected to db1 (the URL tique built was cut
at '#', as URLs are), and so did ``monetdb://...@host:port/db1#x``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import tique
from tests.conftest import ServeProcess


def _keywords(server: ServeProcess, database: str) -> dict[str, Any]:
    return {"database": database, "hostname": "127.0.0.1", "port": server.port, "password": server.password}


@pytest.mark.parametrize("suffix", ["#x", "?x", "#", "?"])
def test_a_name_with_url_syntax_is_refused(server: ServeProcess, suffix: str) -> None:
    name = server.directory.name
    with pytest.raises(tique.InterfaceError, match="database name"):
        tique.connect(**_keywords(server, name + suffix))
    with pytest.raises(tique.InterfaceError, match="'#' or '\\?'"):
        tique.connect(server.url + suffix)


@pytest.mark.parametrize("name", ["db 1", "db/1", "db;1", "db'1", ""])
def test_names_monetdb_cannot_have_are_refused_before_connecting(server: ServeProcess, name: str) -> None:
    with pytest.raises(tique.InterfaceError):
        tique.connect(**_keywords(server, name))


def test_the_named_database_is_reached(server: ServeProcess) -> None:
    conn = tique.connect(**_keywords(server, server.directory.name))
    assert conn.execute("SELECT 1").fetchall() == [(1,)]
    conn.close()


def test_an_embedded_path_is_never_cut_short(tmp_path: Path) -> None:
    with pytest.raises(tique.InterfaceError, match="%23"):
        tique.connect(f"monetdbe://{tmp_path / 'db'}#x")
    assert not (tmp_path / "db").exists()


def test_a_password_in_a_refused_url_is_not_shown(server: ServeProcess) -> None:
    with pytest.raises(tique.InterfaceError) as caught:
        tique.connect(f"monetdb://monetdb:pa#ss-secret@127.0.0.1:{server.port}/db")
    assert "ss-secret" not in str(caught.value)
