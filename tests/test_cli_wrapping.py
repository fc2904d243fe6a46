"""`history`, `changes`, `diff` and `show` wrap long titles, paths and change lines to the
terminal's width (80 and 200 columns) rather than cutting them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hubwatch.cli import app
from tests.support.gitrepo import CommitSpec, make_repo

TITLE = " ".join(f"word{i:02d}" for i in range(30))  # 209 characters
PATH = "/".join(f"folder{i:02d}" for i in range(14)) + "/tokenizer_extra.json"  # 132
BIG = {f"setting_number_{i:02d}": i for i in range(40)}


@pytest.fixture
def shas(tmp_path: Path) -> list[str]:
    shas = make_repo(
        tmp_path / "up",
        [
            CommitSpec({"config.json": b'{"model_type": "llama"}'}, message="first"),
            CommitSpec(
                {"config.json": json.dumps({"model_type": "llama", **BIG}).encode(), PATH: b"{}"},
                message=TITLE,
            ),
        ],
    )
    env = {"HUBWATCH_DATA_DIR": str(tmp_path / "data"), "HUBWATCH_LOG_LEVEL": "ERROR"}
    result = CliRunner().invoke(
        app, ["track", "org/m", "--source", "git", "--url", str(tmp_path / "up")], env=env
    )
    assert result.exit_code == 0, result.output
    return shas


def render(tmp_path: Path, columns: int, *args: str) -> str:
    env = {
        "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
        "HUBWATCH_LOG_LEVEL": "ERROR",
        "COLUMNS": str(columns),
        "TERM": "dumb",
        "NO_COLOR": "1",
    }
    result = CliRunner().invoke(app, list(args), env=env, terminal_width=columns)
    assert result.exit_code == 0, result.output
    return result.stdout


def commands(shas: list[str]) -> list[list[str]]:
    return [
        ["history", "org/m"],
        ["changes", "org/m"],
        ["diff", "org/m", shas[0], shas[1]],
        ["show", "org/m", shas[1]],
    ]


@pytest.mark.parametrize("columns", [80, 200])
@pytest.mark.parametrize("command", ["history", "changes", "diff", "show"])
def test_output_wraps_to_the_width_and_cuts_nothing(
    tmp_path: Path, shas: list[str], columns: int, command: str
) -> None:
    [args] = [a for a in commands(shas) if a[0] == command]
    stdout = render(tmp_path, columns, *args)
    # A summary over 160 characters ends in "…" when stored (the rest is in its detail); the
    # terminal adds none. (`show` prints its estimate short, without the notes JSON has.)
    body = json.loads(render(tmp_path, columns, *args, "--json"))
    if command == "show":
        body.pop("estimate")
    assert stdout.count("…") == json.dumps(body, ensure_ascii=False).count("…")
    widest = max(len(line) for line in stdout.splitlines())
    assert widest <= columns, stdout
    if command in ("history", "changes", "show"):
        words = stdout.split()
        assert all(f"word{i:02d}" in words for i in range(30)), stdout  # the whole title


def test_a_wide_terminal_shows_a_long_path_on_one_line(tmp_path: Path, shas: list[str]) -> None:
    assert PATH in render(tmp_path, 200, "show", "org/m", shas[1])


def test_history_says_how_many_more_files_it_leaves_out(tmp_path: Path) -> None:
    files = {f"file_{i:02d}.txt": b"x" for i in range(9)}
    make_repo(tmp_path / "up", [CommitSpec(files, message="many")])
    env = {"HUBWATCH_DATA_DIR": str(tmp_path / "data"), "HUBWATCH_LOG_LEVEL": "ERROR"}
    CliRunner().invoke(
        app, ["track", "org/m", "--source", "git", "--url", str(tmp_path / "up")], env=env
    )
    assert "and 3 more" in render(tmp_path, 200, "history", "org/m")
