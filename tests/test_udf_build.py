"""Where the C module is compiled on first use, and what a machine without a C compiler is told."""

from __future__ import annotations

from pathlib import Path

import pytest

import tique
from tique.engine import udf


def test_an_installed_package_compiles_into_the_user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(udf, "LIBRARY", tmp_path / "site-packages" / "tique" / "_lib" / "tique_udf.so")
    monkeypatch.setattr(udf, "_source_checkout", lambda: False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    built = udf.build()
    assert built.parent == tmp_path / "cache" / "tique" / tique.__version__
    assert built.is_file() and not udf.LIBRARY.exists()
    assert udf.build() == built  # the second use finds it


def test_no_c_compiler_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(udf, "LIBRARY", tmp_path / "_lib" / "tique_udf.so")
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no cc, gcc or clang here
    with pytest.raises(tique.OperationalError) as caught:
        udf.build()
    message = str(caught.value)
    assert "no C compiler" in message and "gcc" in message and "sequencer='sql'" in message
