"""Change discovery on the Hub simulator: an idle cycle costs one listing request, not one each."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from hubwatch.api.hooks import hub_hooks_router, store_poller
from hubwatch.errors import SourceUnavailable
from hubwatch.models import RepoRef, SourceKind
from hubwatch.sources.base import Modified
from hubwatch.sources.git import GitSource
from hubwatch.sources.hub import HubSource
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.poll import Tracker
from hubwatch.worker.discovery import Discovery
from hubwatch.worker.work import Worker
from tests.support.gitrepo import CommitSpec, add_commits, make_repo
from tests.support.hubsim import HubSimulator

TOKEN = "hf_test_token_0123456789"
IDS = [f"org/model-{i}" for i in range(5)]


def _config(step: int) -> CommitSpec:
    return CommitSpec({"config.json": f'{{"step": {step}}}'.encode()})


def _change(hub: HubSimulator, tmp_path: Path, repo_id: str) -> None:
    """A new commit, modified now as far as the listing says (commit dates are made up)."""
    add_commits(tmp_path / repo_id, [_config(1)])
    hub.touch(repo_id, datetime.now(UTC))


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[HubSimulator]:
    with HubSimulator() as hub:
        for repo_id in IDS:
            make_repo(tmp_path / repo_id, [CommitSpec({"config.json": b"{}"})])
            hub.add_repo(repo_id, tmp_path / repo_id)
        hub.tokens.add(TOKEN)
        yield hub


def _setup(
    store: SqlStore, hub: HubSimulator, interval_s: float = 3600.0, **kw: int
) -> tuple[Tracker, Discovery, Worker]:
    source = HubSource(hub.url, TOKEN, timeout_s=5.0)
    tracker = Tracker(store, {SourceKind.HUB: source})
    for repo_id in IDS:
        assert tracker.track(RepoRef(repo_id)).error is None
    # skew 0: the simulator's clock is ours
    discovery = Discovery(store, tracker.sources, interval_s=interval_s, skew_s=0, **kw)
    worker = Worker(store, tracker, discovery, interval_s=interval_s)
    return tracker, discovery, worker


def test_the_first_cycle_seeds_every_repo_from_the_listing(
    store: SqlStore, hub: HubSimulator
) -> None:
    """No cursor yet: the listing's head shas vouch for every repo, no request of its own."""
    _setup(store, hub)
    hub.reset_stats()
    result = Discovery(store, {SourceKind.HUB: HubSource(hub.url, TOKEN)}, interval_s=60).run()
    assert result.woken == []
    assert result.covered == {f"hub-models:{hub.url}": True}
    assert hub.stats.count("resolve", "HEAD") == 0
    assert hub.stats.requests == hub.stats.count("models-list") == 1
    assert all(e.due_at and e.due_at > datetime.now(UTC) for e in store.schedule_entries())


def test_the_first_cycle_wakes_a_repo_whose_head_moved_as_a_change(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    _setup(store, hub)
    _change(hub, tmp_path, IDS[2])
    result = Discovery(store, {SourceKind.HUB: HubSource(hub.url, TOKEN)}, interval_s=60).run()
    assert result.woken == [IDS[2]]
    assert result.changes == 1
    assert hub.stats.count("resolve", "HEAD") == 0


def test_an_idle_cycle_costs_one_listing_request(store: SqlStore, hub: HubSimulator) -> None:
    _, discovery, worker = _setup(store, hub)
    discovery.run()
    hub.reset_stats()
    cycle = worker.tick()
    assert cycle.discovery is not None and cycle.discovery.woken == []
    assert cycle.discovery.vouched == len(IDS)
    assert hub.stats.requests == 1 and hub.stats.count("models-list") == 1


def test_the_listing_names_the_changed_repos_and_only_they_are_polled(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    _, discovery, worker = _setup(store, hub)
    discovery.run()
    for repo_id in IDS[1:3]:
        _change(hub, tmp_path, repo_id)
    hub.reset_stats()
    cycle = worker.tick()
    assert cycle.discovery is not None
    assert sorted(cycle.discovery.woken) == IDS[1:3]
    assert sorted(r.repo_id for r in cycle.polls) == IDS[1:3]
    assert all(len(r.new) == 1 for r in cycle.polls)
    polled = {r.path.split("/")[4] for r in hub.requests if r.route == "commits"}
    assert polled == {"model-1", "model-2"}
    assert hub.stats.count("model-info") == 0  # the listing gave their heads
    # The next cycle is idle again: the walk stops at the new cursor.
    hub.reset_stats()
    assert discovery.run().woken == [] and hub.stats.requests == 1


def test_a_walk_that_hits_its_limit_checks_every_repo(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    _, discovery, _ = _setup(store, hub, max_listed=2)
    discovery.run()
    for repo_id in IDS:
        _change(hub, tmp_path, repo_id)
    hub.reset_stats()
    result = discovery.run()
    assert sorted(result.woken) == IDS
    assert result.covered == {f"hub-models:{hub.url}": False}


def test_a_private_repo_is_checked_on_its_own_when_due(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    hub.set_state(IDS[0], private=True)
    _, discovery, _ = _setup(store, hub, interval_s=0.001)
    discovery.run()
    hub.reset_stats()
    assert discovery.run().woken == []
    assert hub.stats.count("resolve", "HEAD") == 1  # the private one; the others are listed
    _change(hub, tmp_path, IDS[0])
    assert discovery.run().woken == [IDS[0]]


def test_a_failing_listing_falls_back_to_per_repo_checks(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    class BrokenListing(HubSource):
        # huggingface_hub retries a failing listing for half a minute; skip to its outcome
        def recently_modified(self, limit: int) -> Iterator[Modified]:
            raise SourceUnavailable("models/listing: the Hub answered 500")

    _, discovery, _ = _setup(store, hub)
    discovery.run()
    _change(hub, tmp_path, IDS[4])
    broken = {SourceKind.HUB: BrokenListing(hub.url, TOKEN)}
    result = Discovery(store, broken, interval_s=3600, skew_s=0).run()
    assert result.woken == [IDS[4]]
    assert result.checked == len(IDS)


def test_a_git_repo_is_checked_with_ls_remote(store: SqlStore, tmp_path: Path) -> None:
    make_repo(tmp_path / "up", [CommitSpec({"config.json": b"{}"})])
    source = GitSource(tmp_path / "mirrors")
    tracker = Tracker(store, {SourceKind.GIT: source})
    tracker.track(RepoRef("org/git", SourceKind.GIT, str(tmp_path / "up")))
    discovery = Discovery(store, tracker.sources, interval_s=0.001)
    assert discovery.run().woken == []
    add_commits(tmp_path / "up", [_config(1)])
    assert discovery.run().woken == ["org/git"]
    worker = Worker(store, tracker, discovery, interval_s=0.001)
    assert [len(r.new) for r in worker.drain()] == [1]


def test_a_cycle_told_to_stop_checks_no_more_repos(store: SqlStore, tmp_path: Path) -> None:
    make_repo(tmp_path / "up", [CommitSpec({"config.json": b"{}"})])
    tracker = Tracker(store, {SourceKind.GIT: GitSource(tmp_path / "mirrors")})
    for k in range(3):
        tracker.track(RepoRef(f"org/git-{k}", SourceKind.GIT, str(tmp_path / "up")))
    discovery = Discovery(store, tracker.sources, interval_s=0.001)
    add_commits(tmp_path / "up", [_config(1)])
    asked = iter([False, True])
    stopped = discovery.run(stopping=lambda: next(asked, True))
    assert (stopped.stopped, stopped.checked, len(stopped.woken)) == (True, 1, 1)
    # the repos it did not reach are checked by the next cycle
    assert sorted(discovery.run().woken) == ["org/git-1", "org/git-2"]


def test_a_hub_push_is_read_without_a_status_request(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    """The webhook names the branch's new sha: the poll lists commits and reads the new tree,
    and asks the Hub nothing else (no model_info, no listing)."""
    _, _, worker = _setup(store, hub)
    worker.tick()  # the first cycle: discovery checks every repo, nothing new
    repo_id = IDS[2]
    [sha] = add_commits(tmp_path / repo_id, [_config(7)])
    payload = {
        "event": {"action": "update", "scope": "repo.content"},
        "repo": {"type": "model", "name": repo_id, "private": False, "headSha": sha},
        "updatedRefs": [{"ref": "refs/heads/main", "oldSha": "0" * 40, "newSha": sha}],
    }
    app = FastAPI()
    app.include_router(hub_hooks_router("s3cret", store_poller(store)))
    answer = TestClient(app).post(
        "/hooks/hub", json=payload, headers={"X-Webhook-Secret": "s3cret"}
    )
    assert answer.json() == {"status": "polling", "repo": repo_id}

    hub.reset_stats()
    [result] = worker.tick().polls  # discovery is not due: only the woken repo is polled
    assert result.new == [sha] and store.get_repo(repo_id).head == sha
    assert hub.stats.count("model-info") == hub.stats.count("models-list") == 0
    # the files from the compare against the stored parent, not a tree listing (issue 35)
    assert hub.stats.count("commits") == hub.stats.count("compare") == 1
    assert hub.stats.count("tree") == 0
