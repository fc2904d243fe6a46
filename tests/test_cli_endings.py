"""Commands end with a summary and the next command: `track` counts what it found by severity,
`osv sync` groups what newly applies instead of a line per revision and advisory."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hubwatch.cli import app
from hubwatch.cli.tracking import track_summary
from hubwatch.models import Severity
from tests.support.gitrepo import CommitSpec, add_commits, make_repo
from tests.support.osvsim import osv_simulator
from tests.test_advisories_attach import _real_records, upstream

GRANITE = "ibm-granite/granite-3.1-1b-a400m-instruct"


def env_for(tmp_path: Path) -> dict[str, str]:
    return {
        "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
        "HUBWATCH_LOG_LEVEL": "ERROR",
        "HUBWATCH_RETRIES": "0",
        "HUBWATCH_ADVISORY_SERVICE": "off",
    }


def track(env: dict[str, str], repo_id: str, url: Path) -> str:
    result = CliRunner().invoke(
        app, ["track", repo_id, "--source", "git", "--url", str(url)], env=env
    )
    assert result.exit_code == 0, result.output
    return result.stderr


def test_track_of_the_granite_history_counts_its_changes_and_names_history(
    tmp_path: Path, granite_git: Path
) -> None:
    stderr = track(env_for(tmp_path), GRANITE, granite_git)
    assert stderr.splitlines()[-1] == (
        f"{GRANITE}: 9 revisions stored: 4 behavior, 17 info changes — next: "
        f"`hubwatch history {GRANITE}` or `hubwatch serve`"
    )


def test_track_again_says_nothing_new_and_how_many_are_stored(
    tmp_path: Path, granite_git: Path
) -> None:
    env = env_for(tmp_path)
    track(env, GRANITE, granite_git)
    assert f"{GRANITE}: no new revisions (9 stored)" in track(env, GRANITE, granite_git)


@pytest.mark.parametrize(
    ("second", "said", "step"),
    [
        ({"generation_config.json": b'{"eos_token_id": 2}'}, "1 breaking", "breaking"),
        # security and breaking: --severity security shows both
        (
            {"generation_config.json": b'{"eos_token_id": 2}', "modeling_x.py": b"import os\n"},
            "1 breaking, 1 security",
            "security",
        ),
    ],
)
def test_track_points_at_the_changes_that_need_a_look(
    tmp_path: Path, second: dict[str, bytes], said: str, step: str
) -> None:
    make_repo(
        tmp_path / "up",
        [
            CommitSpec({"generation_config.json": b'{"eos_token_id": 1}'}, message="one"),
            CommitSpec(second, message="two"),
        ],
    )
    last = track(env_for(tmp_path), "org/m", tmp_path / "up").splitlines()[-1]
    assert last.startswith(f"org/m: 2 revisions stored: {said}")
    assert last.endswith(f"— next: `hubwatch changes org/m --severity {step}`")


@pytest.mark.parametrize(
    ("new", "found", "expected"),
    [
        (1, {}, "org/m: 1 revision stored, no changes found — next: `hubwatch history org/m`"),
        (3, {Severity.INFO: 2}, "org/m: 3 revisions stored: 2 info changes — next: `hubwatch"),
        (2, {Severity.SECURITY: 1, Severity.INFO: 1}, "org/m: 2 revisions stored: 1 security,"),
    ],
)
def test_track_summary_reads_as_a_sentence(
    new: int, found: dict[Severity, int], expected: str
) -> None:
    assert track_summary("org/m", new, new, Counter(found)).startswith(expected)


def test_osv_sync_ends_with_a_summary_grouped_by_package_and_severity(tmp_path: Path) -> None:
    repo, (_, second) = upstream(tmp_path)
    env = {**env_for(tmp_path), "COLUMNS": "120"}
    del env["HUBWATCH_ADVISORY_SERVICE"]
    runner = CliRunner()
    with osv_simulator([json.loads(json.dumps(r)) for r in _real_records()]) as sim:
        env["HUBWATCH_OSV_DATABASE_URL"] = sim.url
        track(env, "org/model", Path(repo.url or ""))
        sync = runner.invoke(app, ["osv", "sync"], env=env)
    assert sync.exit_code == 0, sync.output
    lines = sync.stdout.splitlines()
    assert (
        lines[0] == "2 revision(s) checked: 8 advisories newly apply to 2 revision(s) of 1 repo(s)"
    )
    rows = [line.split("│")[1:-1] for line in lines if line.startswith("│")]
    assert [[cell.strip() for cell in row] for row in rows] == [
        ["transformers", "high", "5", "2", "org/model"],  # most severe first
        ["transformers", "medium", "2", "2", "org/model"],
        ["transformers", "low", "1", "1", "org/model"],
    ]
    assert (
        lines[-1]
        == f"next: `hubwatch osv show org/model {second[:12]}` lists a revision's advisories"
    )
    # off a terminal: no progress bar, nothing per revision; only the download's own line
    assert sync.stderr.splitlines() == [
        line for line in sync.stderr.splitlines() if "downloaded" in line
    ]


def test_osv_sync_json_lists_each_new_match(tmp_path: Path) -> None:
    repo, (first, _) = upstream(tmp_path)
    env = env_for(tmp_path)
    del env["HUBWATCH_ADVISORY_SERVICE"]
    with osv_simulator([json.loads(json.dumps(r)) for r in _real_records()]) as sim:
        env["HUBWATCH_OSV_DATABASE_URL"] = sim.url
        track(env, "org/model", Path(repo.url or ""))
        sync = CliRunner().invoke(app, ["osv", "sync", "--json"], env=env)
    found = json.loads(sync.stdout)
    assert {"repo": "org/model", "sha": first} == {k: found[0][k] for k in ("repo", "sha")}
    assert "PYSEC-2024-227" in {m["match"]["advisory_id"] for m in found}


def test_osv_sync_when_off_names_the_setting_that_turns_it_on(tmp_path: Path) -> None:
    sync = CliRunner().invoke(app, ["osv", "sync"], env=env_for(tmp_path))
    assert sync.exit_code == 0
    assert "HUBWATCH_ADVISORY_SERVICE=off" in sync.stderr and "set it to offline" in sync.stderr


def test_poll_once_counts_the_new_revisions_changes_by_severity(tmp_path: Path) -> None:
    path = tmp_path / "up"
    make_repo(path, [CommitSpec({"generation_config.json": b'{"eos_token_id": 1}'})])
    env = env_for(tmp_path)
    track(env, "org/m", path)
    add_commits(path, [CommitSpec({"generation_config.json": b'{"eos_token_id": 2}'})])
    polled = CliRunner().invoke(app, ["poll", "--once"], env=env)
    assert polled.exit_code == 0, polled.output
    assert polled.stderr.startswith("org/m: 1 new (1 breaking")
