"""A worker polls several repos at once: a repo whose Hub never answers does not delay a git repo
polled beside it, and a poll that stores nothing for too long is abandoned, recorded and its
lease given back, on SQLite and PostgreSQL alike."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from hubwatch.models import EventKind, RepoRef, SourceKind
from hubwatch.sources.git import GitSource
from hubwatch.sources.hub import HubSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.poll import PollResult, Tracker
from hubwatch.worker.discovery import Discovery
from hubwatch.worker.work import Worker
from tests.support.blackhole import BlackHole
from tests.support.gitrepo import CommitSpec, make_repo

STUCK, GIT = "org/stuck", "org/git"


@pytest.fixture
def hole() -> Iterator[BlackHole]:
    with BlackHole() as server:
        yield server


def _worker(
    store: SqlStore, hole: BlackHole, tmp_path: Path, **options: Any
) -> tuple[Worker, HubSource]:
    """A worker over a black-holed Hub (a long timeout: its poll stays stuck) and a git repo;
    the stuck repo is woken first, so a worker polling one repo at a time would wait on it."""
    make_repo(tmp_path / "up", [CommitSpec({"config.json": b'{"n": 1}'})])
    store.add_repo(RepoRef(STUCK))
    store.add_repo(RepoRef(GIT, SourceKind.GIT, str(tmp_path / "up")))
    store.wake([STUCK], datetime.now(UTC))
    store.wake([GIT], datetime.now(UTC))
    hub = HubSource(hole.url, timeout_s=60)
    sources = {SourceKind.HUB: hub, SourceKind.GIT: GitSource(tmp_path / "mirrors")}
    tracker = Tracker(store, sources, retry=RetryPolicy(attempts=0))
    discovery = Discovery(store, sources, interval_s=60)
    worker = Worker(store, tracker, discovery, interval_s=60, owner="w1", **options)
    return worker, hub


def _wait(check: Callable[[], bool], what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _draining(worker: Worker) -> tuple[threading.Thread, list[PollResult]]:
    results: list[PollResult] = []
    thread = threading.Thread(target=lambda: results.extend(worker.drain()), daemon=True)
    thread.start()
    return thread, results


def test_a_repo_whose_hub_never_answers_does_not_delay_a_git_repo(
    store: SqlStore, hole: BlackHole, tmp_path: Path
) -> None:
    worker, hub = _worker(store, hole, tmp_path, concurrency=2)
    thread, results = _draining(worker)
    _wait(lambda: hole.holding == 1, "the stuck poll's request")
    # the git repo is polled and stored while the Hub poll still waits on its answer
    _wait(lambda: len(store.history(GIT)) == 1, "the git repo's revision")
    assert hole.holding == 1 and thread.is_alive()
    hole.stop()  # the Hub goes away: the stuck poll fails at once, and the drain ends
    thread.join(timeout=60)
    assert not thread.is_alive()
    by_repo = {r.repo_id: r for r in results}
    assert len(by_repo[GIT].new) == 1 and by_repo[STUCK].error
    hub.close()


def test_a_poll_that_stores_nothing_for_too_long_is_abandoned_recorded_and_released(
    store: SqlStore, hole: BlackHole, tmp_path: Path
) -> None:
    worker, hub = _worker(store, hole, tmp_path, concurrency=1, stall_s=1.0)
    with capture_logs() as logs:
        results = worker.drain()  # one slot: the git repo is polled once the stuck one is let go
    by_repo = {r.repo_id: r for r in results}
    assert len(by_repo[GIT].new) == 1
    error = by_repo[STUCK].error or ""
    assert error.startswith("poll abandoned: no revision stored in 1 s"), error
    assert hole.holding == 1  # its request is still waiting: only the poll was let go
    repo = store.get_repo(STUCK)
    assert repo.last_error == error and repo.failures == 1
    assert [e.detail for e in store.events(STUCK) if e.kind is EventKind.POLL_FAILED] == [error]
    assert [entry["event"] for entry in logs].count("poll_abandoned") == 1
    # its lease is given back: another worker may take the repo when it is woken again
    store.wake([STUCK], datetime.now(UTC))
    [claim] = store.claim_repos("w2", datetime.now(UTC), lease_s=60)
    assert claim.repo_id == STUCK
    store.release_repo(STUCK, "w2", done=False, due_at=datetime.now(UTC))
    # while its abandoned poll lingers, this worker does not start a second one of it
    with capture_logs() as logs:
        assert worker.drain() == []
    assert any(entry["event"] == "poll_skipped" for entry in logs)
    hole.stop()  # its request fails: the abandoned poll ends on its own
    _wait(lambda: not worker._pool.lingering(STUCK), "the abandoned poll's end")
    hub.close()
