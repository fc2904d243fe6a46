"""Guards that keep the README true: its --help block, its settings table, its two commands."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from hubwatch.cli import app
from hubwatch.diff.policy import RULES, markdown
from hubwatch.settings import Settings

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def block_after(marker: str) -> str:
    match = re.search(rf"<!-- {marker} -->\n```\w*\n(.*?)```", README, re.S)
    assert match, f"README lacks the {marker} block"
    return match.group(1)


def test_readme_help_block_matches_the_real_help() -> None:
    result = CliRunner().invoke(
        app,
        ["--help"],
        prog_name="hubwatch",
        terminal_width=100,
        env={"COLUMNS": "100", "TERM": "dumb", "NO_COLOR": "1"},
    )
    real = "\n".join(line.rstrip() for line in result.stdout.strip("\n").splitlines())
    assert block_after("help") == f"$ hubwatch --help\n{real}\n"


def test_every_setting_is_documented() -> None:
    for name in Settings.model_fields:
        assert f"`HUBWATCH_{name.upper()}`" in README, f"HUBWATCH_{name.upper()} is undocumented"


def test_readme_has_exactly_two_setup_commands() -> None:
    run, test = block_after("run-command"), block_after("test-command")
    assert run.count("\n") == 1 and test.count("\n") == 1
    assert "hubwatch serve" in run and "pytest" in test
    assert README.count("```sh\npython3 -m venv") == 2


def test_readme_severity_table_is_the_policy() -> None:
    match = re.search(r"<!-- policy -->\n(.*?)<!-- /policy -->", README, re.S)
    assert match, "README lacks the policy table"
    assert match.group(1) == markdown(), (
        "regenerate it: python -c 'from hubwatch.diff.policy import markdown; print(markdown())'"
    )


def test_changes_explain_prints_every_row_of_the_policy() -> None:
    result = CliRunner().invoke(
        app,
        ["changes", "--explain"],
        terminal_width=400,
        env={"COLUMNS": "400", "TERM": "dumb", "NO_COLOR": "1"},
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    for rule in RULES:
        assert any(
            rule.kind in line
            and rule.condition.name in line
            and rule.reason in line
            and rule.severity.value in line
            for line in lines
        ), rule


def test_changes_needs_a_repo_without_explain() -> None:
    result = CliRunner().invoke(app, ["changes"], env={"COLUMNS": "100"})
    assert result.exit_code == 2
