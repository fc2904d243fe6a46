"""deploy/ with no Docker engine: compose validates it, the files declare, the install replays."""

from __future__ import annotations

import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hubwatch.settings import Settings
from tests.support.require import REQUIRE_COMPOSE, require
from tests.test_docs import block_after

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"


def _compose_available() -> bool:
    if shutil.which("docker") is None:
        return False
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.fixture
def docker_compose() -> None:
    """The docker client with its Compose v2 plugin, or a skip (a failure in CI)."""
    if not _compose_available():
        # CI (.ci/run) fetches Debian's Compose v2 plugin and sets the switch.
        require(
            REQUIRE_COMPOSE,
            "needs the docker client with its compose plugin (.ci/compose-plugin fetches one)",
        )


@pytest.mark.usefixtures("docker_compose")
def test_docker_compose_config_validates() -> None:
    result = subprocess.run(
        ["docker", "compose", "-f", str(DEPLOY / "docker-compose.yml"), "config", "--quiet"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_the_compose_file_declares_postgres_one_server_and_two_workers() -> None:
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    services = compose["services"]
    assert services["postgres"]["image"].startswith("postgres:")
    assert services["serve"]["command"] == ["serve"]
    assert services["worker"]["command"][0] == "worker"
    assert services["worker"]["deploy"]["replicas"] == 2
    assert services["migrate"]["command"] == ["db", "upgrade"]
    url = compose["x-hubwatch"]["environment"]["HUBWATCH_DATABASE_URL"]
    assert url.startswith("postgresql+psycopg://")


def test_the_dockerfile_installs_as_the_readme_says_and_its_last_user_is_not_root() -> None:
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


def _dockerfile_steps() -> tuple[list[tuple[list[str], str]], str]:
    """The build context's COPY steps (sources, destination) and the RUN that installs."""
    copies: list[tuple[list[str], str]] = []
    install = ""
    lines = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ").splitlines()
    for line in lines:
        words = line.split()
        if words[:1] == ["COPY"] and not any(w.startswith("--from") for w in words):
            copies.append((words[1:-1], words[-1]))
        elif words[:1] == ["RUN"] and "pip install" in line:
            install = line.removeprefix("RUN").strip()
    return copies, install


def _package_files(package: Path) -> set[Path]:
    files = package.rglob("*")
    return {p.relative_to(package) for p in files if p.is_file() and "__pycache__" not in p.parts}


def test_the_image_install_replayed_without_an_engine_works(tmp_path: Path) -> None:
    """No Docker engine runs here, so the image's install is replayed by hand: only the files the
    Dockerfile COPYs, then `pip install .` as its RUN step does (as a wheel built offline and
    installed to a folder). The result must hold every file of the package and run its
    migrations, which is what `serve` and `worker` do first."""
    copies, install = _dockerfile_steps()
    assert "pip install --no-cache-dir ." in install
    assert shlex.split(install)[-4:] == ["&&", "rm", "-rf", "/src"]
    context = tmp_path / "src"
    for sources, dest in copies:
        target = context / dest
        for source in sources:
            if (ROOT / source).is_dir():
                shutil.copytree(ROOT / source, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / source, target / source)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    wheels, site = tmp_path / "wheels", tmp_path / "site"
    # Offline: hatchling (the build backend) comes with the test extra; the dependencies are
    # the ones this environment already holds.
    build = [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(context)]
    built = subprocess.run(build, capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr
    wheel = next(wheels.glob("hubwatch-*.whl"))
    install_cmd = [*pip, "install", "--no-deps", "--target", str(site), str(wheel)]
    installed = subprocess.run(install_cmd, capture_output=True, text=True, check=False)
    assert installed.returncode == 0, installed.stderr

    package = ROOT / "src" / "hubwatch"
    wanted, got = _package_files(package), _package_files(site / "hubwatch")
    assert wanted <= got, sorted(wanted - got)

    db = tmp_path / "image.db"
    env = {
        **os.environ,
        "PYTHONPATH": str(site),
        "HUBWATCH_DATABASE_URL": f"sqlite:///{db}",
        "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
    }
    code = "import sys, hubwatch.cli; print(hubwatch.cli.__file__); hubwatch.cli.main()"
    command = [sys.executable, "-c", code, "db", "upgrade"]
    ran = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith(str(site)), ran.stdout  # the replayed install, not this checkout
    with sqlite3.connect(db) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert {"repo", "revision", "change", "alembic_version"} <= tables, tables
