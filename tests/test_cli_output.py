"""Upstream text reaches the terminal without escape sequences, control characters or markup."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.text import Text
from typer.testing import CliRunner

from hubwatch.cli import app
from hubwatch.cli.base import shown
from tests.support.gitrepo import CommitSpec, git, make_repo

# An OSC that sets the window title, a clear-screen CSI, an 8-bit CSI, rich markup, an emoji code.
HOSTILE = "\x1b]0;pwned\x07 \x1b[2J \x9b31m [bold red]x[/] :thumbs_up:"
RAW = ("\x1b", "\x07", "\x9b", "pwned", "31m", "2J")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\x1b]0;pwned\x07title", "title"),  # OSC ended by BEL, removed whole
        ("a\x1b]8;;https://x\x1b\\link\x1b]8;;\x1b\\", "alink"),  # hyperlink, ended by ST
        ("\x1b[2J\x1b[1;31mred\x1b[0m", "red"),  # CSI
        ("\x9b31mred", "red"),  # 8-bit CSI
        ("\x9d0;title\x9cz", "z"),  # 8-bit OSC and ST
        ("\x1b(Bok\x1bc", "ok"),  # charset designation, full reset
        ("\x1b]0;no end", "0;no end"),  # unterminated: only the introducer goes
        ("a\x00b\x08c\rd\x7fe\x85f", "abcdef"),  # C0, DEL, C1
        ("one\ntwo\tthree", "one two three"),
        ("[bold red]x[/]", r"\[bold red]x\[/]"),
        ("caf\udce9", "caf\ufffd"),  # an undecodable byte kept by surrogateescape
    ],
)
def test_shown_removes_control_and_escapes_markup(text: str, expected: str) -> None:
    assert shown(text) == expected


def test_shown_keeps_lines_of_a_multi_line_detail() -> None:
    assert shown("a\r\nb\tc\x1b[2Jd", lines=True) == "a\nb\tcd"


def test_shown_cuts_after_cleaning() -> None:
    assert shown("\x1b[31m[b]abcdef", 4) == r"\[b]a"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
        "HUBWATCH_LOG_LEVEL": "ERROR",
        "COLUMNS": "400",  # no table cell wraps
    }


def run(env: dict[str, str], *args: str) -> str:
    result = CliRunner().invoke(app, list(args), env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture
def hostile_repo(env: dict[str, str], tmp_path: Path) -> list[str]:
    shas = make_repo(
        tmp_path / "up",
        [
            CommitSpec({"config.json": b"{}"}, message="first"),
            CommitSpec(
                {"config.json": b'{"a": 1}', f"{HOSTILE}.txt": b"x"},
                message=f"title {HOSTILE}\n\nbody {HOSTILE}",
                author=f"Eve {HOSTILE} <eve@example.com>",
            ),
        ],
    )
    run(env, "track", "org/m", "--source", "git", "--url", str(tmp_path / "up"))
    return shas


@pytest.mark.parametrize("command", ["history", "show", "changes"])
def test_upstream_text_prints_without_escapes_and_markup_literally(
    env: dict[str, str], hostile_repo: list[str], command: str
) -> None:
    args = ["org/m", hostile_repo[1]] if command == "show" else ["org/m"]
    stdout = run(env, command, *args)
    assert not any(raw in stdout for raw in RAW), repr(stdout)
    assert stdout.count("[bold red]x[/] :thumbs_up:") >= (3 if command == "show" else 2)
    assert "\U0001f44d" not in stdout  # no emoji


def test_json_output_stays_exact(env: dict[str, str], hostile_repo: list[str]) -> None:
    stdout = run(env, "show", "org/m", hostile_repo[1], "--json")
    assert "\x1b" not in stdout and "\x9b" not in stdout  # JSON escapes them
    revision = json.loads(stdout)["revision"]
    assert revision["title"] == f"title {HOSTILE}"
    assert revision["authors"] == [f"Eve {HOSTILE} <eve@example.com>"]


def test_unreachable_revisions_are_marked_in_history(env: dict[str, str], tmp_path: Path) -> None:
    upstream = tmp_path / "up"
    make_repo(upstream, [CommitSpec({"config.json": b"{}"}, message="kept")])
    run(env, "track", "org/m", "--source", "git", "--url", str(upstream))
    git(upstream, "commit", "-q", "--amend", "-m", "rewritten")
    CliRunner().invoke(app, ["poll", "--once"], env=env)
    stdout = run(env, "history", "org/m")
    assert "kept [unreachable]" in stdout


@given(st.text())
def test_shown_leaves_nothing_a_terminal_acts_on(text: str) -> None:
    printed = Text.from_markup(shown(text), emoji=False).plain
    assert not re.search(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]", printed)


@given(st.text(st.characters(exclude_categories=("Cc", "Cs"))))
def test_shown_prints_text_without_control_characters_as_written(text: str) -> None:
    assert Text.from_markup(shown(text), emoji=False).plain == text
