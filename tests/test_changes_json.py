"""`hubwatch changes --json` stays small on a long history: details only with --detail, once."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from hubwatch.cli import app
from tests.support.long_history import REVISIONS, build

LIMIT = 2 * 1024 * 1024


def run(env: dict[str, str], *args: str) -> str:
    result = CliRunner().invoke(app, list(args), env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def tracked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("long")
    build(tmp / "up")
    env = {"HUBWATCH_DATA_DIR": str(tmp / "data"), "HUBWATCH_LOG_LEVEL": "ERROR"}
    run(env, "track", "org/long", "--source", "git", "--url", str(tmp / "up"))
    return env


def changes(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for revision in body["revisions"] for c in revision["changes"]]


@pytest.mark.slow
def test_a_345_revision_history_is_under_2_mb_without_details(tracked: dict[str, str]) -> None:
    text = run(tracked, "changes", "org/long", "--json")
    body = json.loads(text)
    assert len(body["revisions"]) == REVISIONS
    assert len(text.encode()) < LIMIT
    assert all("detail" not in c for c in changes(body))
    assert any(c.get("detail_chars", 0) > 0 for c in changes(body))


@pytest.mark.slow
def test_detail_keeps_each_text_once_and_names_it(tracked: dict[str, str]) -> None:
    body = json.loads(run(tracked, "changes", "org/long", "--json", "--detail"))
    refs = [c["detail"] for c in changes(body) if "detail" in c]
    assert refs and set(refs) == set(body["details"])
    assert all(isinstance(text, str) and text for text in body["details"].values())
    code = next(c for c in changes(body) if c["kind"] == "code.custom_changed")
    assert "@@" in body["details"][code["detail"]]  # the unified diff is there, by reference
