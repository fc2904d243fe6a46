"""Refs, code links and linked changes: the config reading, the LinkStore on SQLite and
PostgreSQL, and what `hubwatch changes` and the API show of them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from hubwatch.api import create_app
from hubwatch.cli import app
from hubwatch.errors import NotTracked
from hubwatch.formats.links import code_links
from hubwatch.models import Change, CommitSha, RepoRef, Severity
from hubwatch.models.refs import (
    CodeLink,
    GitRef,
    LinkedChanges,
    LinkKind,
    LinkOrigin,
    RefKind,
    RefWatch,
)
from hubwatch.settings import Settings
from hubwatch.store.sql import SqlStore
from tests.support.asgi import InProcess
from tests.support.gitrepo import CommitSpec, make_repo

A, B, C = (CommitSha(x * 40) for x in "abc")
T0 = datetime(2026, 12, 2, 10, tzinfo=UTC)
EOS = Change(
    "config.special_token_ids",
    Severity.BREAKING,
    "config.json: eos_token_id 2 → [2, 7]",
    "config.json",
    {"eos_token_id": 2},
    {"eos_token_id": [2, 7]},
)
README = Change("card.text", Severity.INFO, "README.md: the card's text changed", "README.md")
PR = LinkedChanges("org/m", LinkOrigin.PULL_REQUEST, "refs/pr/12", B, A, (EOS, README), T0)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"auto_map": {"AutoModel": "o/code--modeling.M"}}, [("o/code", LinkKind.AUTO_MAP)]),
        (  # a tokenizer's [slow, fast] pair, one of them elsewhere; the repo named once
            {"auto_map": {"AutoTokenizer": ["o/tok--t.Slow", "o/tok--t.Fast"]}},
            [("o/tok", LinkKind.AUTO_MAP)],
        ),
        ({"auto_map": {"AutoModel": "modeling.M"}}, []),  # the repo's own code
        ({"auto_map": {"AutoModel": "../x--m.M"}}, []),  # no repo id
        ({"auto_map": "o/code--m.M"}, []),
        (
            {"kernel_config": {"kernel_mapping": {"RMSNorm": "kc/norm:Liger"}}},
            [("kc/norm", LinkKind.KERNEL)],
        ),
        (
            {"use_kernels": True, "kernels": ["kc/act@v1", "not a repo"]},
            [("kc/act", LinkKind.KERNEL)],
        ),
        ({"model_type": "llama", "name_or_path": "o/other"}, []),  # not a key about kernels
    ],
)
def test_code_links_are_read_from_the_config(
    config: dict[str, Any], expected: list[tuple[str, LinkKind]]
) -> None:
    assert [(repo, kind) for repo, kind, _ in code_links(config)] == expected


def test_a_ref_is_labelled_as_people_name_it() -> None:
    assert GitRef(RefKind.PULL_REQUEST, "refs/pr/12", A).label == "PR #12"
    assert GitRef(RefKind.PULL_REQUEST, "refs/pr/12", A).pr_number == 12
    assert GitRef(RefKind.TAG, "refs/tags/v1.0", A).label == "tag v1.0"
    assert GitRef(RefKind.BRANCH, "refs/heads/pr/1", A).pr_number is None


def test_refs_are_replaced_and_a_moved_ref_is_diffed_again(store: SqlStore) -> None:
    store.add_repo(RepoRef("org/m"))
    assert store.watched_refs("org/m") is RefWatch.NONE
    store.watch_refs("org/m", RefWatch.PRS)
    assert store.watched_refs("org/m") is RefWatch.PRS
    main, pr = (
        GitRef(RefKind.BRANCH, "refs/heads/main", A),
        GitRef(RefKind.PULL_REQUEST, "refs/pr/1", B),
    )
    store.set_refs("org/m", [main, pr])
    store.mark_diffed("org/m", "refs/pr/1", B)
    store.set_refs("org/m", [main, pr])
    assert store.diffed_refs("org/m") == {"refs/pr/1": B}
    store.set_refs("org/m", [main, GitRef(RefKind.PULL_REQUEST, "refs/pr/1", C)])
    assert store.diffed_refs("org/m") == {}
    store.set_refs("org/m", [main])
    assert store.refs("org/m") == [main]
    with pytest.raises(NotTracked):
        store.watch_refs("org/none", RefWatch.PRS)


def test_links_name_their_dependents(store: SqlStore) -> None:
    for repo in ("org/a", "org/b", "o/code"):
        store.add_repo(RepoRef(repo))
    link = CodeLink("org/a", "o/code", LinkKind.AUTO_MAP, "o/code--m.M")
    store.set_links("org/a", [link])
    store.set_links("org/b", [CodeLink("org/b", "o/code", LinkKind.KERNEL, "o/code:L")])
    assert store.links_of("org/a") == [link]
    assert [d.repo_id for d in store.dependents_of("o/code")] == ["org/a", "org/b"]
    store.set_links("org/b", [])
    assert [d.repo_id for d in store.dependents_of("o/code")] == ["org/a"]
    store.remove_repo("org/a")
    assert store.dependents_of("o/code") == []


def test_linked_changes_read_back_and_filter_by_severity(store: SqlStore) -> None:
    store.add_repo(RepoRef("org/m"))
    card_only = LinkedChanges("org/m", LinkOrigin.DEPENDENCY, "o/code", C, B, (README,), T0)
    store.add_linked_changes(PR)
    store.add_linked_changes(card_only)
    assert store.linked_changes("org/m") == [PR, card_only]
    [breaking] = store.linked_changes("org/m", min_severity=Severity.BEHAVIOR)
    assert breaking.changes == (EOS,)  # and the record left with none is left out
    assert store.history("org/m") == []  # not a revision


def test_the_api_serves_linked_changes(store: SqlStore) -> None:
    store.add_repo(RepoRef("org/m"))
    store.add_linked_changes(PR)
    store.set_refs("org/m", [GitRef(RefKind.PULL_REQUEST, "refs/pr/12", B)])
    settings = Settings(api_token=SecretStr("s3cret-token"))  # type: ignore[arg-type]
    api = InProcess(create_app(store, settings), token="s3cret-token")

    [body] = api.get("/api/v1/repos/org/m/linked-changes?severity=breaking").json()

    assert (body["origin"], body["label"], body["head"], body["base"]) == (
        "pull_request",
        "PR #12",
        B,
        A,
    )
    assert [c["after"] for c in body["changes"]] == [{"eos_token_id": [2, 7]}]
    assert api.get("/api/v1/repos/org/m/refs").json() == [
        {"kind": "pull_request", "ref": "refs/pr/12", "target": B, "pr": 12}
    ]
    assert api.get("/api/v1/repos/org/m/dependencies").json() == []
    assert api.get("/api/v1/repos/org/none/linked-changes").status_code == 404
    created = api.post("/api/v1/repos", json={"repo_id": "org/new", "refs": "prs"})
    assert created.status_code == 201 and store.watched_refs("org/new") is RefWatch.PRS


def test_changes_shows_what_a_pull_request_would_change(tmp_path: Path) -> None:
    env = {
        "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
        "HUBWATCH_LOG_LEVEL": "ERROR",
        "COLUMNS": "200",
    }
    make_repo(tmp_path / "up", [CommitSpec({"config.json": b"{}"})])
    runner = CliRunner()
    tracked = runner.invoke(
        app, ["track", "org/m", "--source", "git", "--url", str(tmp_path / "up")], env=env
    )
    assert tracked.exit_code == 0, tracked.output
    store = SqlStore(Settings(data_dir=tmp_path / "data").resolved_database_url())
    store.start()
    store.add_linked_changes(PR)
    store.close()

    shown = runner.invoke(app, ["changes", "org/m", "--severity", "behavior"], env=env)
    as_json = runner.invoke(app, ["changes", "org/m", "--json"], env=env)

    assert shown.exit_code == 0, shown.output
    assert f"PR #12 {B[:12]}" in shown.stdout and "would change" in shown.stdout
    assert "eos_token_id 2 → [2, 7]" in shown.stdout and "card.text" not in shown.stdout
    [linked] = json.loads(as_json.stdout)["linked"]
    assert (linked["source"], [c["kind"] for c in linked["changes"]]) == (
        "refs/pr/12",
        ["config.special_token_ids", "card.text"],
    )
