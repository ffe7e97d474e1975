"""Loading tique's C module: version check, rebuild, ABI."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT
from tique.engine import udf


def test_kernel_version_is_the_supported_one() -> None:
    assert udf.kernel_version().startswith(udf.SUPPORTED_KERNEL + ".")


def test_engine_version_mismatch_is_refused_before_anything_is_opened(tmp_path) -> None:  # type: ignore[no-untyped-def]
    script = (
        "import tique.engine.udf as u\n"
        "u.SUPPORTED_KERNEL = '99.1'\n"
        "from tique.engine import open_engine\n"
        f"open_engine('monetdbe://{tmp_path}/db')\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode != 0
    assert "declared for MonetDB 99.1" in proc.stderr and "sequencer='sql'" in proc.stderr
    assert not (tmp_path / "db").exists()


def test_module_abi_matches(embedded_engine) -> None:  # type: ignore[no-untyped-def]
    from tique.sequencer import CSequencer

    conn = embedded_engine.connect()
    CSequencer().install(conn)
    assert conn.execute("SELECT tique.abi()").scalar() == udf.ABI
    conn.close()


def test_build_compiles_from_source(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "tique_udf.so"
    monkeypatch.setattr(udf, "LIBRARY", target)  # build into a scratch place, not the loaded library
    assert udf.build(force=True) == target and target.stat().st_size > 0
    symbols = subprocess.run(["nm", "-D", str(target)], capture_output=True, text=True).stdout
    assert "mal_module" in symbols  # the constructor registers with MAL
