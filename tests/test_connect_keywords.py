"""tique.connect takes what pymonetdb.connect takes (host=/user= aliases, autocommit=, a URL as database=),
and the engine reports its version where MonetDB clients look for it (sys.environment's monet_version)."""

from __future__ import annotations

import re
from typing import Any

import pytest

import tique

VERSION_QUERY = "SELECT value FROM environment WHERE name = 'monet_version'"  # what sqlalchemy-monetdb sends


@pytest.mark.parametrize(
    "keywords",
    [
        {"hostname": "127.0.0.1", "username": "monetdb"},
        {"host": "127.0.0.1", "user": "monetdb"},
        {"host": "127.0.0.1", "username": "monetdb"},  # SQLAlchemy's URL.translate_connect_args() spelling
    ],
)
def test_pymonetdb_keywords(server: Any, keywords: dict[str, str]) -> None:
    conn = tique.connect(
        database=server.directory.name, port=str(server.port), password=server.password, autocommit=True, **keywords
    )
    assert conn.autocommit
    assert conn.execute("SELECT 41 + 1").fetchall() == [(42,)]
    conn.close()


def test_a_url_as_database(embedded_url: str) -> None:
    conn = tique.connect(database=embedded_url)
    assert conn.execute("SELECT 1").fetchall() == [(1,)]
    conn.close()


def test_conflicting_aliases_are_refused() -> None:
    with pytest.raises(tique.InterfaceError, match="alias"):
        tique.connect(database="db", hostname="a", host="b")


def test_a_path_for_a_database_name_says_how_to_open_it(tmp_path: Any) -> None:
    """pymonetdb's connect("db") takes a database name; a path there (an embedded user's first try) says which URL
    opens it, instead of "not a MonetDB database name"."""
    with pytest.raises(tique.InterfaceError, match=re.escape(f"tique.connect('monetdbe://{tmp_path}/db')")):
        tique.connect(str(tmp_path / "db"))


def test_monet_version(connect: Any) -> None:
    conn = connect()
    rows = conn.execute(VERSION_QUERY).fetchall()
    assert len(rows) == 1 and re.fullmatch(r"\d+\.\d+\.\d+", rows[0][0]), rows
    assert conn.monet_version == rows[0][0]
    assert tuple(int(p) for p in conn.monet_version.split(".")) >= (11, 41, 0)


def test_pymonetdbs_positional_database_mapi_url_and_connect_timeout(server: Any) -> None:
    """pymonetdb's connect("db", hostname=...), its mapi:monetdb:// URL and its connect_timeout keyword were
    refused (found by a drop-in review)."""
    name, port, password = server.directory.name, server.port, server.password
    first = tique.connect(name, hostname="127.0.0.1", port=port, password=password, connect_timeout="5")
    assert first.execute("SELECT 1").fetchall() == [(1,)]
    second = tique.connect(f"mapi:monetdb://monetdb:{password}@127.0.0.1:{port}/{name}", connect_timeout=-1)
    assert second.execute("SELECT 2").fetchall() == [(2,)]
    first.close()
    second.close()
    with pytest.raises(tique.InterfaceError, match="connect_timeout"):
        tique.connect(name, hostname="127.0.0.1", port=port, password=password, connect_timeout=-5)
