"""The reviewer's Markdown report of 10 pins at 3 shas against a snapshot file: a summary row
per repo, revision and outcome, then each upstream revision once, its commit title included."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from datetime import date
from pathlib import Path

from hubwatch.models import Change, CommitSha, RepoRef, Severity, SourceKind
from hubwatch.pins.check import check
from hubwatch.pins.gate import apply
from hubwatch.pins.ignores import Ignore
from hubwatch.pins.links import hub_links
from hubwatch.pins.markdown import report_markdown
from hubwatch.pins.model import Pin, make_pin
from hubwatch.store.sql import SqlStore
from tests.test_store import snapshot
from tests.test_store_advisories import match

SNAPSHOT = Path(__file__).parent / "snapshots" / "report-10-pins-3-shas.md"
REPO = RepoRef("org/chat", SourceKind.HUB)
TITLES = {
    2: "Two stop tokens",
    3: "Render the system prompt first",
    4: "Add custom modeling code",
    5: "Tidy the model card",
}
CHANGES = {
    2: (Change("generation.stop_tokens", Severity.BREAKING, "eos_token_id 2 → [2, 3].",
               "generation_config.json", 2, [2, 3]),),
    3: (Change("chat_template.rendered", Severity.BEHAVIOR, "The system prompt renders first.",
               "tokenizer_config.json"),),
    4: (Change("code.added", Severity.SECURITY, "modeling_chat.py added: loads custom code.",
               "modeling_chat.py"),
        Change("config.auto_map", Severity.SECURITY, "auto_map set.", "config.json")),
    5: (Change("card.text", Severity.INFO, "Model card text edited: +2 -1 lines.", "README.md"),),
}  # fmt: skip


def sha(n: int) -> CommitSha:
    return CommitSha(hashlib.sha1(f"revision {n}".encode()).hexdigest())


def _store(store: SqlStore) -> None:
    store.add_repo(REPO)
    for n in range(1, 6):
        snap = snapshot(n, {"config.json": b"{}"}, parent=n - 1 if n > 1 else None)
        commit = dataclasses.replace(
            snap.commit,
            sha=sha(n),
            parents=(sha(n - 1),) if n > 1 else (),
            title=TITLES.get(n, "first upload"),
        )
        snap = dataclasses.replace(snap, commit=commit, changes=CHANGES.get(n, ()))
        store.add_revision(REPO.repo_id, snap)
        found = [match("PYSEC-2024-227")] if n == 1 else []  # the first upload brings one
        store.record_advisories(REPO.repo_id, sha(n), [], found, service="offline")


def _pins() -> list[Pin]:
    """10 pins of one repo at 3 shas: the first upload, the breaking change, the template."""
    at: list[tuple[str, int, CommitSha]] = [
        ("app.py", 4, sha(1)), ("app.py", 9, sha(1)), ("deploy/Dockerfile", 3, sha(1)),
        ("deploy/compose.yml", 7, sha(1)), ("k8s/deploy.yaml", 21, sha(2)),
        ("k8s/deploy.yaml", 40, sha(2)), (".github/workflows/eval.yml", 12, sha(2)),
        ("Makefile", 2, sha(3)), (".env", 1, sha(3)), ("charts/values.yaml", 8, sha(3)),
    ]  # fmt: skip
    return [make_pin(REPO.repo_id, s, path, line, "test") for path, line, s in at]


def test_ten_pins_at_three_shas_read_as_the_snapshot(store: SqlStore) -> None:
    _store(store)
    text = report_markdown(
        check(store, _pins()), Severity.SECURITY, hub_links("https://huggingface.co")
    )
    if os.environ.get("HUBWATCH_UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(text)
    assert text == SNAPSHOT.read_text()
    for title in TITLES.values():  # each upstream commit named once, however many pins
        assert text.count(title) == 1, title
    # the four revisions after the pins, and the pinned one that brings an advisory
    assert text.count("<details>") == len(TITLES) + 1
    assert len([line for line in text.splitlines() if line.startswith("| `org/chat`")]) == 3


def test_ignored_change_kinds_stop_counting_and_say_why(store: SqlStore) -> None:
    _store(store)
    ignores = [
        Ignore("we reviewed modeling_chat.py", repo=REPO.repo_id, kind="code.*"),
        Ignore("points at our own code", repo=REPO.repo_id, sha=sha(4)[:7], kind="config.auto_map"),
        Ignore("fixed long ago", advisory="GHSA-0000-0000-0000"),
    ]
    report = apply(check(store, _pins()[7:]), ignores, date.today())
    assert [p.severity for p in report.pins] == [Severity.INFO] * 3
    assert report.exit_code(Severity.SECURITY) == 0
    assert [e.advisory for e in report.unused] == ["GHSA-0000-0000-0000"]
    text = report_markdown(report, Severity.SECURITY, hub_links("https://huggingface.co"))
    assert "(ignored: we reviewed modeling\\_chat.py)" in text
    assert "unused (it accepts nothing now; remove it)" in text
