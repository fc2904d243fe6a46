"""deploy/: the compose file validates, the image installs as the README says, as non-root."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from hubwatch.settings import Settings
from tests.test_docs import block_after

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"


def _compose_available() -> bool:
    if shutil.which("docker") is None:
        return False
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.skipif(not _compose_available(), reason="needs the docker client with compose")
def test_docker_compose_config_validates() -> None:
    result = subprocess.run(
        ["docker", "compose", "-f", str(DEPLOY / "docker-compose.yml"), "config", "--quiet"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_compose_runs_postgres_one_server_and_two_workers() -> None:
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    services = compose["services"]
    assert services["postgres"]["image"].startswith("postgres:")
    assert services["serve"]["command"] == ["serve"]
    assert services["worker"]["command"][0] == "worker"
    assert services["worker"]["deploy"]["replicas"] == 2
    assert services["migrate"]["command"] == ["db", "upgrade"]
    url = compose["x-hubwatch"]["environment"]["HUBWATCH_DATABASE_URL"]
    assert url.startswith("postgresql+psycopg://")


def test_the_image_installs_as_the_readme_says_and_runs_as_non_root() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert " && pip install . && " in block_after("run-command")
    assert "python3 -m venv /opt/hubwatch" in dockerfile
    assert "/opt/hubwatch/bin/pip install --no-cache-dir ." in dockerfile
    users = [line.split()[1] for line in dockerfile.splitlines() if line.startswith("USER ")]
    assert users and users[-1] not in ("root", "0")


def test_the_example_env_file_names_only_real_settings() -> None:
    known = {f"HUBWATCH_{name.upper()}" for name in Settings.model_fields} | {
        "HF_TOKEN",
        "HF_ENDPOINT",
    }
    names = [
        line.lstrip("# ").split("=", 1)[0]
        for line in (DEPLOY / "hubwatch.env.example").read_text().splitlines()
        if "=" in line and line.lstrip("# ").split("=", 1)[0].isupper()
    ]
    assert names and set(names) <= known, set(names) - known
