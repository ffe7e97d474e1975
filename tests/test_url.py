import pytest

from tique.engine.url import parse_url
from tique.errors import InterfaceError


def test_embedded_path() -> None:
    url = parse_url("monetdbe:///tmp/some/db")
    assert url.kind == "embedded" and url.path == "/tmp/some/db" and not url.in_memory


@pytest.mark.parametrize("text", ["monetdbe::memory:", "monetdbe://:memory:", "monetdbe:///:memory:"])
def test_in_memory(text: str) -> None:
    assert parse_url(text).in_memory


def test_server_url() -> None:
    url = parse_url("monetdb://alice:s%40cret@db.example:50001/shop")
    assert (url.kind, url.host, url.port, url.database, url.username, url.password) == (
        "server",
        "db.example",
        50001,
        "shop",
        "alice",
        "s@cret",
    )
    assert "s@cret" not in url.redacted()


def test_server_defaults() -> None:
    url = parse_url("monetdb://localhost/shop")
    assert (url.port, url.username, url.password) == (50000, "monetdb", "monetdb")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("postgres://x/y", "unknown URL scheme 'postgres'"),
        ("just-a-path", "unknown URL scheme '(none)'"),
        ("monetdbe://relative/path", "absolute path"),
        ("monetdb://host:5000/", "must name one database"),
        ("monetdb://u:pw@host:notaport/db", "bad port"),
    ],
)
def test_bad_urls_say_what_is_accepted(text: str, fragment: str) -> None:
    with pytest.raises(InterfaceError) as info:
        parse_url(text)
    assert fragment in str(info.value)
    assert ":pw@" not in str(info.value)  # passwords never appear in messages
