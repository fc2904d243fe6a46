"""The example CI job and the pre-commit hook run commands that exist, with options that exist."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml
from typer.testing import CliRunner

from hubwatch.cli import app

ROOT = Path(__file__).resolve().parents[2]


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
    for path in ["app.py", "deploy/Dockerfile", "x/hubwatch.lock", "c.yaml", "m.json", "a.toml"]:
        assert files.search(path), path
    assert not files.search("README.md")
