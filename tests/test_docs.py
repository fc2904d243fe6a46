"""Guards that keep the README true: its --help block, its settings table, its two commands."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from hubwatch.cli import app
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
