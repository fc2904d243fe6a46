"""The command line: one-line errors, exit codes, --json output."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hubwatch.cli import EXIT_ERROR, EXIT_NOT_FOUND, EXIT_UNREACHABLE, EXIT_USAGE, app
from tests.support.gitrepo import CommitSpec, make_repo


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
        "HUBWATCH_LOG_LEVEL": "ERROR",
        "HUBWATCH_RETRIES": "0",
        "HUBWATCH_HTTP_TIMEOUT_S": "2",
    }


def run(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("repo_id", ["../x", "", "a" * 100 + "/" + "b" * 100, "org/<b>x</b>"])
def test_bad_repo_id_is_one_line_and_exit_2(env: dict[str, str], repo_id: str) -> None:
    code, _, stderr = run(env, "track", repo_id)
    assert code == EXIT_USAGE
    assert stderr.startswith("error: repo id") and stderr.count("\n") == 1


def test_unreachable_hub_is_exit_5(env: dict[str, str]) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code, _, stderr = run({**env, "HF_ENDPOINT": f"http://127.0.0.1:{port}"}, "track", "org/m")
    assert code == EXIT_UNREACHABLE
    assert "cannot reach the Hub" in stderr and stderr.count("\n") == 1
    assert run(env, "list", "--json")[1].strip() == "[]"  # nothing stored


def test_track_history_show_json(env: dict[str, str], tmp_path: Path) -> None:
    shas = make_repo(
        tmp_path / "up",
        [
            CommitSpec({"config.json": b"{}"}, message="one"),
            CommitSpec({"config.json": b'{"a": 1}'}, message="two"),
        ],
    )
    code, _, stderr = run(env, "track", "org/m", "--source", "git", "--url", str(tmp_path / "up"))
    assert code == 0, stderr
    code, stdout, _ = run(env, "history", "org/m", "--json")
    assert [r["sha"] for r in json.loads(stdout)["revisions"]] == shas
    code, stdout, _ = run(env, "show", "org/m", shas[1][:8], "--json")
    shown = json.loads(stdout)
    assert shown["revision"]["title"] == "two"
    assert shown["files"][0]["path"] == "config.json"
    code, stdout, _ = run(env, "list", "--json")
    assert json.loads(stdout)[0]["revisions"] == 2


def test_unknown_revision_is_exit_3(env: dict[str, str], tmp_path: Path) -> None:
    make_repo(tmp_path / "up", [CommitSpec({"config.json": b"{}"})])
    run(env, "track", "org/m", "--source", "git", "--url", str(tmp_path / "up"))
    code, _, stderr = run(env, "show", "org/m", "deadbeef")
    assert code == EXIT_NOT_FOUND and "no stored revision deadbeef" in stderr


def test_untracked_repo_history_is_exit_3(env: dict[str, str]) -> None:
    code, _, stderr = run(env, "history", "org/never")
    assert code == EXIT_NOT_FOUND
    assert stderr == "error: org/never is not tracked: run `hubwatch track org/never` first\n"


def test_git_source_without_url_is_exit_2(env: dict[str, str]) -> None:
    code, _, stderr = run(env, "track", "org/m", "--source", "git")
    assert code == EXIT_USAGE and "--url" in stderr


def test_bad_setting_is_exit_2(env: dict[str, str]) -> None:
    code, _, stderr = run({**env, "HUBWATCH_MAX_FILE_BYTES": "-1"}, "list")
    assert code == EXIT_USAGE and "max_file_bytes" in stderr


def test_unwritable_export_directory_is_one_line_and_exit_1(
    env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("")
    code, _, stderr = run(env, "osv", "export", str(tmp_path / "file" / "records"))
    assert code == EXIT_ERROR
    assert stderr.startswith("error: ") and stderr.count("\n") == 1


def test_python_dash_m_runs_the_cli() -> None:
    import subprocess
    import sys

    from hubwatch import __version__

    done = subprocess.run(
        [sys.executable, "-m", "hubwatch", "--version"], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == f"hubwatch {__version__}"


def test_hf_endpoint_and_token_come_from_the_hub_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    from hubwatch.settings import Settings

    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value")
    loaded = Settings()
    assert loaded.hf_endpoint == "http://127.0.0.1:9"
    assert loaded.hf_token is not None and loaded.hf_token.get_secret_value() == "hf_secret_value"
    assert "hf_secret_value" not in repr(loaded)
