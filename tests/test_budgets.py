"""Every cost bounded by what a revision holds, not by how often it repeats it: a blob under
many paths is read, parsed and stored once; a change's values, a webhook's body and an API
answer stay small whatever upstream puts in a file (issue 29)."""

from __future__ import annotations

import json
import sqlite3
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hubwatch.api import create_app
from hubwatch.diff import DIFFERS, diff_revisions
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, RepoRef, SourceKind
from hubwatch.notify.outbox import MAX_BODY, WebhookNotifier
from hubwatch.settings import Settings
from hubwatch.sources.git import GitSource
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.poll import Tracker
from hubwatch.tracker.snapshot import Limits
from tests.support.asgi import InProcess
from tests.support.clirun import run_cli
from tests.support.gitrepo import CommitSpec, make_repo
from tests.support.revisions import view

REPO = RepoRef("org/long")

MIB = 1024 * 1024
KIB_PER_MIB = 1024


def big_config(size: int) -> bytes:
    """A valid config.json of about `size` bytes: a llama config and one long string."""
    head = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64}
    return json.dumps({**head, "notes": "x" * size}).encode()


@pytest.mark.slow
def test_one_blob_under_100_paths_is_read_and_stored_once(tmp_path: Path) -> None:
    blob = big_config(30 * MIB)
    paths = {f"m{i:02d}/config.json": blob for i in range(100)}
    repo = tmp_path / "up"
    make_repo(
        repo,
        [
            CommitSpec({"README.md": b"# a model\n"}, message="Start"),
            CommitSpec(paths, message="One config under a hundred folders"),
        ],
        bare=True,  # no work tree: 3 GB of checked-out copies would be the test's slowest part
        lfs_patterns=(),
    )
    data = tmp_path / "data"
    run = run_cli(data, "track", "org/many", "--source", "git", "--url", str(repo))
    assert run.code == 0, run.stderr[-2000:]
    assert run.maxrss_kib < 300 * KIB_PER_MIB, f"peaked at {run.maxrss_kib // 1024} MiB"
    with sqlite3.connect(data / "hubwatch.db") as db:
        (blobs,) = db.execute("SELECT count(*) FROM blob WHERE size >= ?", (MIB,)).fetchone()
        (changes,) = db.execute("SELECT sum(length(after)) FROM change").fetchone()
    assert blobs == 1  # stored once, whatever its paths
    assert changes < 4 * MIB  # each change's value bounded, not 30 MB a path
    assert (data / "hubwatch.db").stat().st_size < 80 * MIB


def test_a_32_mb_config_value_gives_a_bounded_changes_answer_and_webhook_body(
    store: SqlStore, tmp_path: Path
) -> None:
    small = {"model_type": "llama", "notes": "short"}
    make_repo(
        tmp_path / "up",
        [
            CommitSpec({"config.json": json.dumps(small).encode()}),
            CommitSpec({"config.json": big_config(32_000_000)}, message="A very long note"),
        ],
        lfs_patterns=(),
    )
    store.add_subscription(
        "https://hooks.example.com/in", "whsec_" + "a" * 32,
        repo_id=REPO.repo_id, org=None, kinds=(), min_severity=None,
    )  # fmt: skip
    notifier = WebhookNotifier(store)
    source = GitSource(tmp_path / "mirrors", timeout_s=60)
    tracker = Tracker(store, {SourceKind.GIT: source}, after_revision=[notifier.after_revision])
    tracker.track(RepoRef(REPO.repo_id, SourceKind.GIT, str(tmp_path / "up")))
    answer = InProcess(create_app(store, Settings())).get(f"/api/v1/repos/{REPO.repo_id}/changes")
    assert answer.status_code == 200
    assert len(answer.content) < 256 * 1024, len(answer.content)
    (other,) = [c for rc in answer.json() for c in rc["changes"] if c["kind"] == "config.other"]
    shown = other["after"]  # what stands for the 32 MB value: its start, size and hash
    assert shown["bytes"] > 32_000_000 and len(shown["sha256"]) == 64
    assert shown["truncated"].startswith('{"notes":"xxx')
    bodies = [m.body for m in store.due_messages(datetime.now(UTC) + timedelta(days=1))]
    assert bodies and max(map(len, bodies)) <= MAX_BODY


def swapped(lines: int) -> tuple[bytes, bytes]:
    text = [f"Line {i} of the card, with some words.\n" for i in range(lines)]
    swaps = text[:]
    for i in range(0, lines - 1, 2):
        swaps[i], swaps[i + 1] = swaps[i + 1], swaps[i]
    return "".join(text).encode(), "".join(swaps).encode()


def test_a_32k_line_readme_with_every_pair_swapped_is_counted_within_its_budget(
    store: SqlStore, tmp_path: Path
) -> None:
    before, after = swapped(32_000)
    make_repo(
        tmp_path / "up",
        [CommitSpec({"README.md": before}), CommitSpec({"README.md": after}, message="Swap")],
        lfs_patterns=(),
    )
    source = GitSource(tmp_path / "mirrors", timeout_s=60)
    Tracker(store, {SourceKind.GIT: source}, limits=Limits(diff_budget_s=30)).track(
        RepoRef(REPO.repo_id, SourceKind.GIT, str(tmp_path / "up"))
    )
    recorded = store.changes(REPO.repo_id)[-1]
    text = next(c for c in recorded.changes if c.kind == "card.text")
    assert "diff.budget" not in {c.kind for c in recorded.changes}  # every differ ran
    assert text.detail is not None and "too large to diff line by line" in text.detail
    assert "the same lines, in another order" in text.detail


def test_differs_left_when_the_budget_is_spent_are_named_not_run(tmp_path: Path) -> None:
    def slow(old: RevisionView, new: RevisionView) -> list[Change]:
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:  # a differ that takes its time
            pass
        return []

    differs = {"slow": slow, "files": DIFFERS["files"], "config": DIFFERS["config"]}
    changes = diff_revisions(RevisionView.empty(), view({"config.json": {}}), differs, 0.1)
    (spent,) = [c for c in changes if c.kind == "diff.budget"]
    assert spent.after == ["files", "config"] and "0.1 s diff budget" in spent.summary
