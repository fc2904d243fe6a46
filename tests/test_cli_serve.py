"""`hubwatch badge` prints the same badge the API serves."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from hubwatch.cli import EXIT_NOT_FOUND, app
from hubwatch.store.sql import SqlStore
from tests.support.served import fill


def env(tmp_path: Path) -> dict[str, str]:
    data = tmp_path / "data"
    data.mkdir()
    store = SqlStore(f"sqlite:///{data / 'hubwatch.db'}")
    store.start()
    fill(store)
    store.close()
    return {"HUBWATCH_DATA_DIR": str(data), "HUBWATCH_LOG_LEVEL": "ERROR"}


def test_badge_prints_label_and_message(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["badge", "org/model", "--kind", "breaking"], env=env(tmp_path)
    )
    assert result.exit_code == 0
    assert result.stdout == "breaking changes (30d): 1\n"


def test_badge_json_is_the_shields_endpoint_schema(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["badge", "org/model", "--json"], env=env(tmp_path))
    badge = json.loads(result.stdout)
    assert badge["schemaVersion"] == 1 and badge["label"] == "revision"
    assert badge["cacheSeconds"] == 300 and "isError" not in badge


def test_unknown_repo_badge_is_grey_and_exit_3(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["badge", "org/none", "--json"], env=env(tmp_path))
    assert result.exit_code == EXIT_NOT_FOUND
    badge = json.loads(result.stdout)
    assert (badge["color"], badge["isError"], badge["message"]) == (
        "lightgrey",
        True,
        "not tracked",
    )
