"""The PEP 249 compliance suite (PyPI ``dbapi-compliance``), run on the embedded engine and over MAPI."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

import tique

dbapi20 = pytest.importorskip("dbapi20", reason="the dbapi-compliance package is not installed (pip install '.[dev]')")


@pytest.fixture(params=["embedded", "server"])
def compliance_url(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "embedded":
        yield request.getfixturevalue("embedded_url")
    else:
        yield request.getfixturevalue("server").url


def _suite(url: str) -> type:
    prefix = f"dbapi20_{os.getpid()}_"

    class Tique(dbapi20.DatabaseAPI20Test):
        driver = tique
        connect_args = (url,)
        connect_kw_args: dict[str, object] = {}
        table_prefix = prefix
        ddl1 = f"create table {prefix}booze (name varchar(20))"
        ddl2 = f"create table {prefix}barflys (name varchar(20), drink varchar(30))"
        xddl1 = f"drop table {prefix}booze"
        xddl2 = f"drop table {prefix}barflys"
        lower_func = ""  # MonetDB has no stored procedure returning rows; callproc is optional

        def _connect(self) -> tique.Connection:
            conn = super()._connect()
            self.__dict__.setdefault("opened", []).append(conn)
            return conn

        def tearDown(self) -> None:
            # Some of the suite's tests leave a connection open; the session database admits 64 sessions
            try:
                super().tearDown()
            finally:
                for conn in self.__dict__.get("opened", []):
                    if not conn.closed:
                        conn.close()

        def test_nextset(self) -> None:
            """Optional (PEP 249: nextset may be absent); tique has no multi-result statements."""

        def test_setoutputsize(self) -> None:
            """The suite leaves this to drivers: tique's setoutputsize does nothing, as PEP 249 allows."""

    return Tique


def test_dbapi_compliance(compliance_url: str) -> None:
    import unittest

    suite = unittest.defaultTestLoader.loadTestsFromTestCase(_suite(compliance_url))
    result = unittest.TextTestRunner(verbosity=0, stream=open(os.devnull, "w")).run(suite)  # noqa: SIM115
    problems = [f"{test.id()}: {text.strip().splitlines()[-1]}" for test, text in result.failures + result.errors]
    assert not problems, "\n".join(problems)
    assert result.testsRun >= 30
