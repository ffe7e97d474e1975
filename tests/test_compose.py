"""compose.yaml: its shape always; the real thing only where a Docker engine answers."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from tests.conftest import ROOT


def docker_engine_answers() -> bool:
    if not shutil.which("docker"):
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0


def test_compose_file_names_server_and_checkpointer() -> None:
    spec = yaml.safe_load((ROOT / "compose.yaml").read_text())
    services = spec["services"]
    assert set(services) == {"monetdb", "checkpointer"}
    assert (ROOT / services["monetdb"]["build"]["dockerfile"]).exists()
    assert (ROOT / services["checkpointer"]["build"]["dockerfile"]).exists()
    assert services["checkpointer"]["command"][0] == "checkpoint"
    assert all(port.startswith("127.0.0.1:") for port in services["monetdb"]["ports"])  # loopback only


@pytest.mark.docker
@pytest.mark.skipif(not docker_engine_answers(), reason="no Docker engine answers here ('docker info' failed)")
def test_compose_config_is_valid() -> None:
    proc = subprocess.run(["docker", "compose", "config", "-q"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
