"""Errors name the next step: the command to run first, or the setting that would allow it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from hubwatch.cli import EXIT_NOT_FOUND, app
from hubwatch.cli.hints import with_next_step
from hubwatch.errors import (
    HubwatchError,
    RepoGated,
    RepoNotFound,
    StoreUnavailable,
    TokenRefused,
    UnknownSubscription,
    WebhookUrlRefused,
)
from tests.support.gitrepo import CommitSpec, make_repo


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"HUBWATCH_DATA_DIR": str(tmp_path / "data"), "HUBWATCH_LOG_LEVEL": "ERROR"}


def run(env: dict[str, str], *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["show", "org/never", "abc123"],
        ["changes", "org/never"],
        ["diff", "org/never", "a", "b"],
        ["estimate", "org/never"],
        ["osv", "show", "org/never", "abc123"],
    ],
)
def test_an_untracked_repo_names_the_track_command(env: dict[str, str], args: list[str]) -> None:
    code, stderr = run(env, *args)
    assert code == EXIT_NOT_FOUND
    assert stderr == "error: org/never is not tracked: run `hubwatch track org/never` first\n"


def test_untrack_of_an_untracked_repo_names_list(env: dict[str, str]) -> None:
    code, stderr = run(env, "untrack", "org/never")
    assert code == EXIT_NOT_FOUND
    assert "nothing to untrack (`hubwatch list` shows what is)" in stderr


def test_an_unknown_revision_names_history_and_poll(env: dict[str, str], tmp_path: Path) -> None:
    make_repo(tmp_path / "up", [CommitSpec({"config.json": b"{}"})])
    run(env, "track", "org/m", "--source", "git", "--url", str(tmp_path / "up"))
    code, stderr = run(env, "show", "org/m", "deadbeef")
    assert code == EXIT_NOT_FOUND
    assert stderr == (
        "error: org/m has no stored revision deadbeef: `hubwatch history org/m` lists the "
        "stored ones, `hubwatch poll --once` fetches new ones\n"
    )


@pytest.mark.parametrize(
    ("error", "step"),
    [
        (RepoGated("o/m: gated repo"), "request access on the repo's Hub page, then set HF_TOKEN"),
        (TokenRefused("o/m: the Hub refused HF_TOKEN (401)"), "set HF_TOKEN to a valid token"),
        (RepoNotFound("o/m: repo not found on the Hub"), "a private repo also needs HF_TOKEN"),
        (WebhookUrlRefused("webhook URLs must use https"), "HUBWATCH_WEBHOOK_ALLOW_HTTP=true"),
        (UnknownSubscription("no subscription 4"), "`hubwatch subscriptions list`"),
        (StoreUnavailable("database unavailable"), "HUBWATCH_DATABASE_URL"),
    ],
)
def test_a_refusal_names_what_would_allow_it(error: HubwatchError, step: str) -> None:
    said = with_next_step(error)
    assert said.startswith(f"{error}: ") and step in said


@pytest.mark.parametrize(
    "error",
    [
        RepoNotFound("o/m: repo not found, or private and the token lacks access"),
        WebhookUrlRefused("webhook URLs must use https or http"),  # http is allowed already
        WebhookUrlRefused(
            "webhook host 'x' resolves to private address 10.0.0.1; allow it "
            "with HUBWATCH_WEBHOOK_ALLOWED_NETWORKS"
        ),
        ValueError("not ours"),
    ],
)
def test_a_message_that_says_it_already_is_left_alone(error: Exception) -> None:
    assert with_next_step(error) == str(error)
