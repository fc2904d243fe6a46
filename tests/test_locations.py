"""plain_database_url: the URL Settings resolves, read without pydantic, or None."""

from __future__ import annotations

from pathlib import Path

import pytest

from hubwatch.locations import default_data_dir, plain_database_url
from hubwatch.settings import Settings


@pytest.fixture(autouse=True)
def _no_settings_around(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Settings reads the process environment and ./.env: both emptied of hubwatch settings."""
    import os

    for key in list(os.environ):
        if key.upper().startswith("HUBWATCH_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize(
    "environ",
    [
        {},
        {"HUBWATCH_DATA_DIR": "/srv/hubwatch"},
        {"hubwatch_data_dir": "relative/dir"},
        {"HUBWATCH_DATABASE_URL": "postgresql+psycopg://u:secret@db/hw"},
        {"HUBWATCH_DATA_DIR": "/x", "HUBWATCH_DATABASE_URL": "sqlite:////y.db", "HF_TOKEN": "t"},
    ],
    ids=["default", "data-dir", "lower-case", "database-url", "both"],
)
def test_plain_environment_gives_what_settings_resolves(
    monkeypatch: pytest.MonkeyPatch, environ: dict[str, str]
) -> None:
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    assert plain_database_url(environ) == Settings().resolved_database_url()


def test_default_is_the_platform_data_dir() -> None:
    assert plain_database_url({}) == f"sqlite:///{default_data_dir() / 'hubwatch.db'}"


@pytest.mark.parametrize(
    "environ",
    [
        {"HUBWATCH_LOG_LEVEL": "ERROR"},
        {"HUBWATCH_MAX_FILE_BYTES": "-1"},
        {"HUBWATCH_DATA_DIR": "/a", "hubwatch_data_dir": "/b"},
        {"HUBWATCH_DATA_DIR": ""},
        {"HUBWATCH_DATABASE_URL": ""},
    ],
    ids=["other-setting", "bad-setting", "two-cases", "empty-dir", "empty-url"],
)
def test_anything_settings_must_judge_gives_none(environ: dict[str, str]) -> None:
    assert plain_database_url(environ) is None


def test_a_dotenv_file_gives_none(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("HUBWATCH_DATA_DIR=/elsewhere\n")
    assert plain_database_url({}) is None
