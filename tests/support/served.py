"""A store holding what the API serves: revisions with changes, an estimate, an advisory."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hubwatch.estimator import estimate_json
from hubwatch.models import Change, CommitSha, EventKind, RepoEvent, RepoRef, Severity, SourceKind
from hubwatch.store.base import Store
from tests.test_store import sha, snapshot
from tests.test_store_advisories import DEP, match

REPO = RepoRef("org/model", SourceKind.HUB)
OTHER = RepoRef("other/thing", SourceKind.HUB)
CONFIG = (
    Path(__file__).resolve().parents[1] / "estimator/golden/configs/Qwen__Qwen2.5-0.5B.json"
).read_bytes()
SCRIPT = "<script>document.title='pwned'</script>"

STOP = Change(
    "generation.stop_tokens",
    Severity.BREAKING,
    "Stop tokens changed: eos_token_id 1 → [1, 2].",
    "generation_config.json",
    {"eos_token_id": 1},
    {"eos_token_id": [1, 2]},
)
TEMPLATE = Change(
    "chat_template.rendered",
    Severity.BEHAVIOR,
    f"The chat template renders differently: {SCRIPT}",
    "tokenizer_config.json",
    {"user only": "a"},
    {"user only": f"a{SCRIPT}"},
    f"--- before\n+++ after\n-{{{{ bos }}}}\n+{{{{ bos }}}}{SCRIPT}",
)
CARD = Change("card.license", Severity.INFO, "License changed.", "README.md", "mit", "apache-2.0")


def fill(store: Store, *, recent: bool = True) -> list[CommitSha]:
    """org/model with three revisions (the last two with changes), other/thing with one."""
    store.add_repo(REPO)
    store.add_repo(OTHER)
    now = datetime.now(UTC)
    shas = []
    for n, (files, changes) in enumerate(
        [
            ({"config.json": CONFIG, "README.md": b"# m"}, ()),
            ({"config.json": CONFIG, "README.md": b"# m2"}, (STOP, CARD)),
            ({"config.json": CONFIG, "tokenizer_config.json": b"{}"}, (TEMPLATE,)),
        ],
        start=1,
    ):
        snap = snapshot(n, files, parent=n - 1 if n > 1 else None)
        commit = snap.commit
        if recent:
            commit = dataclasses.replace(commit, date=now - timedelta(days=4 - n))
        if n == 3:
            commit = dataclasses.replace(commit, title=f"Update template {SCRIPT}")
        snap = dataclasses.replace(
            snap,
            commit=commit,
            changes=changes,
            base=sha(n - 1) if n > 1 else None,
            estimate=estimate_json(CONFIG),
        )
        store.add_revision(REPO.repo_id, snap)
        shas.append(sha(n))
    store.record_advisories(
        REPO.repo_id, sha(3), [DEP], [match("PYSEC-2024-227")], service="offline"
    )
    store.add_revision(OTHER.repo_id, snapshot(9, {"config.json": b"{}"}))
    store.add_event(
        REPO.repo_id, RepoEvent(EventKind.REPO_GATED, "org/model became gated", None, now)
    )
    return shas
