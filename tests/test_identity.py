"""Who is behind a name, on the Hub simulator: renames, re-creation, squashes, privacy, hooks."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from hubwatch.api.hooks import hub_hooks_router, store_poller, store_recorder
from hubwatch.models import EventKind, RepoRef, RepoState, Severity, SourceKind
from hubwatch.pins.check import PinStatus, check
from hubwatch.pins.model import Pin, RefKind
from hubwatch.sources.hub import HubSource
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.poll import Tracker
from hubwatch.worker.discovery import Discovery
from hubwatch.worker.work import Worker
from tests.support.gitrepo import CommitSpec, add_commits, make_repo
from tests.support.hubsim import HubSimulator
from tests.support.hubsim_identity import super_squash

TOKEN = "hf_test_token_0123456789"
SECRET = "s3cret"


def _config(step: int) -> CommitSpec:
    return CommitSpec({"config.json": f'{{"step": {step}}}'.encode()})


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[HubSimulator]:
    with HubSimulator() as hub:
        make_repo(tmp_path / "up", [_config(0)])
        hub.add_repo("org/old", tmp_path / "up")
        hub.tokens.add(TOKEN)
        yield hub


def _tracker(store: SqlStore, hub: HubSimulator, token: str | None = TOKEN) -> Tracker:
    return Tracker(store, {SourceKind.HUB: HubSource(hub.url, token, timeout_s=5.0)})


def _pin(repo: str, sha: str) -> Pin:
    return Pin(repo, sha, RefKind.SHA, "app.py", 1, "python:from_pretrained")


def test_a_rename_is_followed_within_one_cycle_and_no_change_is_missed(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    """The listing names the repo by its new id only: it is found by its object id, woken, and
    its poll follows the rename and reads the new commit in the same cycle."""
    tracker = _tracker(store, hub)
    tracker.track(RepoRef("org/old"))
    store.add_subscription(
        "https://ci.example/hook",
        "secret",
        repo_id="org/old",
        org=None,
        kinds=(),
        min_severity=None,
    )
    discovery = Discovery(store, tracker.sources, interval_s=3600.0, skew_s=0)
    worker = Worker(store, tracker, discovery, interval_s=3600.0)
    discovery.run()  # the first cycle: every repo checked, the cursor set
    hub.rename("org/old", "org/new")
    [sha] = add_commits(tmp_path / "up", [_config(1)])
    hub.touch("org/new", datetime.now(UTC))

    cycle = worker.tick()
    assert cycle.discovery is not None and cycle.discovery.woken == ["org/old"]
    [poll] = cycle.polls
    assert (poll.repo_id, poll.renamed_from, poll.new) == ("org/new", "org/old", [sha])
    renamed = store.get_repo("org/new")
    assert renamed.head == sha and renamed.former_ids == ("org/old",)
    assert [e.kind for e in store.events("org/new")] == [EventKind.REPO_RENAMED]
    assert [s.repo_id for s in store.subscriptions()] == ["org/new"]  # they follow it
    # the next cycle knows it under the listing's name: idle again
    assert discovery.run().woken == []


def test_a_pin_naming_the_old_name_is_flagged_as_moved(store: SqlStore, hub: HubSimulator) -> None:
    tracker = _tracker(store, hub)
    [sha] = tracker.track(RepoRef("org/old")).new
    hub.rename("org/old", "org/new")
    tracker.poll("org/old")
    [report] = check(store, [_pin("org/old", sha)]).pins
    assert report.status is PinStatus.CURRENT and report.moved_to == "org/new"
    assert report.pin.repo == "org/old"  # reported where the codebase names it
    assert report.severity is Severity.BEHAVIOR
    assert report.notes == ["org/old was renamed to org/new: pin that name"]


def test_delete_and_recreate_is_an_identity_change_and_fails_the_pin(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    tracker = _tracker(store, hub)
    [old_sha] = tracker.track(RepoRef("org/old")).new
    hub.set_state("org/old", deleted=True)
    assert tracker.poll("org/old").error is None
    assert store.get_repo("org/old").state is RepoState.UNAVAILABLE
    make_repo(tmp_path / "other", [CommitSpec({"config.json": b'{"evil": true}'})])
    hub.recreate("org/old", tmp_path / "other", datetime(2026, 6, 1, tzinfo=UTC))

    result = tracker.poll("org/old")
    assert result.identity_changed and len(result.new) == 1
    kinds = [e.kind for e in store.events("org/old")]
    assert kinds == [EventKind.REPO_UNAVAILABLE, EventKind.REPO_IDENTITY_CHANGED]
    assert EventKind.REPO_RESTORED not in kinds and EventKind.HISTORY_REWRITTEN not in kinds
    assert store.get_repo("org/old").state is RepoState.ACTIVE
    # the new repo's first revision carries it: feeds, badges and "changes since" show it
    [new] = store.changes("org/old", since=old_sha)
    assert ("repo.identity_changed", Severity.SECURITY) in [
        (c.kind, c.severity) for c in new.changes
    ]

    report = check(store, [_pin("org/old", old_sha)])
    [pin] = report.pins
    assert pin.status is PinStatus.UNREACHABLE and pin.suggested is None
    assert [(c.kind, c.severity) for c in pin.identity] == [
        ("repo.identity_changed", Severity.SECURITY)
    ]
    assert report.fails(Severity.SECURITY)


def test_a_squashed_away_pin_is_unreachable_with_the_same_files_suggested(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    tracker = _tracker(store, hub)
    tracker.track(RepoRef("org/old"))
    first, second = add_commits(tmp_path / "up", [_config(1), _config(2)])
    tracker.poll("org/old")
    squashed = super_squash(tmp_path / "up")
    result = tracker.poll("org/old")
    assert result.new == [squashed] and not result.identity_changed

    report = check(store, [_pin("org/old", second), _pin("org/old", first)])
    at_head, older = report.pins
    assert at_head.status is PinStatus.UNREACHABLE
    assert at_head.suggested is not None and at_head.suggested.sha == squashed
    assert at_head.notes == [
        f"{second[:12]} is no longer in the history; {squashed[:12]} has the same files"
    ]
    assert older.status is PinStatus.UNREACHABLE and older.suggested is None
    assert report.fails(Severity.SECURITY)  # it cannot be downloaded, whatever the threshold


def test_a_repo_turned_private_is_unavailable_not_deleted(
    store: SqlStore, hub: HubSimulator
) -> None:
    tracker = _tracker(store, hub, token=None)  # no token: a private repo is invisible
    tracker.track(RepoRef("org/old"))
    hub.set_state("org/old", private=True)
    tracker.poll("org/old")
    tracked = store.get_repo("org/old")
    assert tracked.state is RepoState.UNAVAILABLE and tracked.revisions == 1
    [event] = store.events("org/old")
    assert event.kind is EventKind.REPO_UNAVAILABLE and "private" in event.detail
    hub.set_state("org/old", private=False)
    tracker.poll("org/old")  # the same repo again: restored, no identity change
    kinds = [e.kind for e in store.events("org/old")]
    assert kinds == [EventKind.REPO_UNAVAILABLE, EventKind.REPO_RESTORED]


def _hooks(store: SqlStore, *, record: bool = True) -> TestClient:
    app = FastAPI()
    recorder = store_recorder(store) if record else None
    app.include_router(hub_hooks_router(SECRET, store_poller(store), recorder))
    return TestClient(app)


def _discussion(name: str) -> dict[str, object]:
    # the Hub's payload for a new comment (hub-docs, docs/hub/webhooks.md)
    return {
        "event": {"action": "create", "scope": "discussion.comment"},
        "repo": {"type": "model", "name": name, "id": "621ffdc036468d709f17434d"},
        "discussion": {"num": 19, "isPullRequest": False},
        "comment": {"content": "thanks!"},
    }


@pytest.mark.parametrize("record", [True, False])
def test_a_discussion_webhook_spends_no_hub_request(
    store: SqlStore, hub: HubSimulator, record: bool
) -> None:
    tracker = _tracker(store, hub)
    tracker.track(RepoRef("org/old"))
    discovery = Discovery(store, tracker.sources, interval_s=3600.0)
    worker = Worker(store, tracker, discovery, interval_s=3600.0)
    worker.tick()
    hub.reset_stats()
    answer = _hooks(store, record=record).post(
        "/hooks/hub", json=_discussion("org/old"), headers={"X-Webhook-Secret": SECRET}
    )
    assert answer.json()["status"] == ("recorded" if record else "ignored")
    assert worker.tick().polls == []  # nothing woken
    assert hub.stats.requests == 0
    kinds = [e.kind for e in store.events("org/old")]
    assert kinds == ([EventKind.HUB_EVENT] if record else [])


def test_a_push_naming_the_new_name_wakes_the_repo_by_its_object_id(
    store: SqlStore, hub: HubSimulator
) -> None:
    tracker = _tracker(store, hub)
    tracker.track(RepoRef("org/old"))
    hub.rename("org/old", "org/new")
    object_id = hub.identities.object_id("org/new")
    payload = {
        "event": {"action": "update", "scope": "repo.content"},
        "repo": {"type": "model", "name": "org/new", "id": object_id, "headSha": "0" * 40},
    }
    answer = _hooks(store).post("/hooks/hub", json=payload, headers={"X-Webhook-Secret": SECRET})
    assert answer.json() == {"status": "polling", "repo": "org/new"}
    [entry] = [e for e in store.schedule_entries() if e.woken]
    assert entry.ref.repo_id == "org/old"
