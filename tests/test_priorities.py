"""Changes before verifications, inside the quota: discovery at small scale, quotas scaled down.

The Hub simulator enforces quotas an eighth of the free ones' rate (25 API requests a minute);
30 repos are tracked, 20 of them due for their daily verification, and 3 get a new commit. One
cycle must store the 3 changes before any verification poll starts, wake only as many
verifications as the quota leaves over (the rest stay due), and never be refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hubwatch.models import RepoRef, SourceKind, WakePriority
from hubwatch.sources.hub import HubSource
from hubwatch.store.sql import SqlStore, make_engine
from hubwatch.store.sql.migrate import upgrade
from hubwatch.tracker.poll import Tracker
from hubwatch.worker.discovery import Discovery
from hubwatch.worker.work import Worker
from tests.support.gitrepo import CommitSpec, add_commits, make_repo
from tests.support.hubsim import HubSimulator
from tests.support.migrating import old_repo

TOKEN = "hf_test_token_0123456789"
IDS = [f"org/model-{i:02d}" for i in range(30)]
CHANGED = IDS[25:28]
DUE = IDS[:20]
INTERVAL_S = 60.0


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[HubSimulator]:
    with HubSimulator() as hub:
        for n, repo_id in enumerate(IDS):
            make_repo(tmp_path / repo_id, [CommitSpec({"config.json": b"{}"})])
            hub.add_repo(repo_id, tmp_path / repo_id)
            hub.touch(repo_id, datetime.now(UTC) - timedelta(days=3, hours=n))  # long idle
        hub.tokens.add(TOKEN)
        yield hub


def _worker(store: SqlStore, hub: HubSimulator) -> Worker:
    source = HubSource(hub.url, TOKEN, timeout_s=5.0)
    tracker = Tracker(store, {SourceKind.HUB: source})
    for repo_id in IDS:
        assert tracker.track(RepoRef(repo_id)).error is None
    discovery = Discovery(store, tracker.sources, interval_s=INTERVAL_S, skew_s=0)
    discovery.run()  # the first cycle: the listing seeds every repo
    return Worker(store, tracker, discovery, interval_s=INTERVAL_S, concurrency=1)


def _repo_of(path: str) -> str:
    """`/api/models/org/model-07/commits/main` -> `org/model-07`."""
    parts = path.split("?")[0].split("/")
    return "/".join(parts[3:5])


def test_changes_are_stored_before_any_verification_poll(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    worker = _worker(store, hub)
    past = datetime.now(UTC) - timedelta(seconds=1)
    store.set_due(dict.fromkeys(DUE, past))
    for repo_id in CHANGED:
        add_commits(tmp_path / repo_id, [CommitSpec({"config.json": b'{"a": 1}'})])
        hub.touch(repo_id, datetime.now(UTC))
    hub.rate_limits = {"api": (25, 60.0), "resolvers": (200, 60.0)}
    hub.reset_stats()

    cycle = worker.tick()

    assert cycle.discovery is not None
    assert cycle.discovery.changes == len(CHANGED)
    verified = [p.repo_id for p in cycle.polls if p.repo_id in DUE]
    assert 0 < len(verified) < len(DUE), "the quota leaves room for some verifications only"
    assert 0 < cycle.discovery.deferred <= len(DUE) - len(verified)
    order = [(r.route, _repo_of(r.path)) for r in hub.requests if r.path.startswith("/api/")]
    first_verification = next(
        n for n, (route, repo) in enumerate(order) if route == "model-info" and repo in DUE
    )
    last_change = max(n for n, (_, repo) in enumerate(order) if repo in CHANGED)
    assert last_change < first_verification
    for repo_id in CHANGED:
        assert len(store.history(repo_id)) == 2
    assert not any(r.status == 429 for r in hub.requests)
    assert not hub.stats.quota_exceeded
    # The deferred ones are still due: the next cycle wakes them.
    now = datetime.now(UTC)
    still_due = [e for e in store.schedule_entries() if e.due_at and e.due_at <= now]
    assert {e.ref.repo_id for e in still_due} <= set(DUE) - set(verified)
    assert len(still_due) == cycle.discovery.deferred


def test_a_change_is_claimed_before_an_older_verification(store: SqlStore) -> None:
    for repo_id in ("org/verify", "org/change"):
        store.add_repo(RepoRef(repo_id))
    t0 = datetime(2026, 12, 1, tzinfo=UTC)
    store.wake(["org/verify"], t0, priority=WakePriority.VERIFY)
    store.wake(["org/change"], t0 + timedelta(minutes=5))
    claims = store.claim_repos("w1", t0 + timedelta(minutes=6), 60, limit=2)
    assert [c.repo_id for c in claims] == ["org/change", "org/verify"]


def test_a_waiting_verification_that_changes_becomes_a_change(store: SqlStore) -> None:
    for repo_id in ("org/a", "org/b"):
        store.add_repo(RepoRef(repo_id))
    t0 = datetime(2026, 12, 1, tzinfo=UTC)
    store.wake(["org/a"], t0, priority=WakePriority.VERIFY)
    store.wake(["org/b"], t0 + timedelta(seconds=1), priority=WakePriority.WATCHED)
    store.wake(["org/a"], t0 + timedelta(seconds=2))  # announced: it changed
    store.wake(["org/b"], t0 + timedelta(seconds=3), priority=WakePriority.VERIFY)  # stays
    assert store.waiting_count(WakePriority.VERIFY) == 0
    assert store.waiting_count(WakePriority.WATCHED) == 1
    claims = store.claim_repos("w1", t0 + timedelta(minutes=1), 60, limit=2)
    assert [c.repo_id for c in claims] == ["org/a", "org/b"]


def test_first_polls_of_repos_registered_in_bulk_are_spread_by_the_quota(
    store: SqlStore, hub: HubSimulator
) -> None:
    assert store.add_repos([RepoRef(repo_id) for repo_id in IDS]) == len(IDS)
    hub.rate_limits = {"api": (40, 60.0), "resolvers": (200, 60.0)}
    source = HubSource(hub.url, TOKEN, timeout_s=5.0)
    discovery = Discovery(store, {SourceKind.HUB: source}, interval_s=INTERVAL_S, skew_s=0)
    result = discovery.run()
    assert 0 < len(result.woken) < len(IDS)
    assert result.deferred == len(IDS) - len(result.woken)
    assert result.changes == 0
    assert store.waiting_count(WakePriority.VERIFY) == len(result.woken)
    assert hub.stats.requests == 1  # the listing: nothing per repo


PINNED, SUBSCRIBED, PINNED_LONG_AGO, PLAIN = IDS[-4:]
"""The least recently modified: an idle walk, reading the newest items, never names them."""
DAY_S = 86_400.0


@pytest.mark.parametrize(
    ("pinned_s", "watched"),
    [(30 * DAY_S, {PINNED, SUBSCRIBED}), (0.0, {SUBSCRIBED})],
    ids=["30-days", "pins-off"],
)
def test_due_verifications_of_repos_pinned_lately_or_subscribed_go_first(
    store: SqlStore, hub: HubSimulator, pinned_s: float, watched: set[str]
) -> None:
    tracked = [PINNED, SUBSCRIBED, PINNED_LONG_AGO, PLAIN]
    tracker = Tracker(store, {SourceKind.HUB: HubSource(hub.url, TOKEN, timeout_s=5.0)})
    for repo_id in tracked:
        assert tracker.track(RepoRef(repo_id)).error is None
    discovery = Discovery(
        store, tracker.sources, interval_s=INTERVAL_S, skew_s=0, pinned_s=pinned_s
    )
    assert discovery.run().woken == []  # the listing vouches for each: none woken yet
    now = datetime.now(UTC)
    store.mark_pinned([PINNED], now - timedelta(days=29))
    store.mark_pinned([PINNED_LONG_AGO], now - timedelta(days=31))
    store.add_subscription(
        "https://hooks.example.com/in", "whsec_" + "a" * 32,
        repo_id=SUBSCRIBED, org=None, kinds=(), min_severity=None,
    )  # fmt: skip
    store.set_due(dict.fromkeys(tracked, now - timedelta(seconds=1)))

    result = discovery.run()

    assert sorted(result.woken) == sorted(tracked) and result.changes == 0
    assert store.waiting_count(WakePriority.VERIFY) == len(tracked) - len(watched)
    assert store.waiting_count(WakePriority.WATCHED) == len(tracked)  # and less urgent
    claims = store.claim_repos("w1", now + timedelta(minutes=1), 60, limit=len(tracked))
    assert {c.repo_id for c in claims[: len(watched)]} == watched


def test_migration_0018_keeps_the_repos_unpinned_until_a_check_pins_them(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        upgrade(engine, "0017")
        with engine.begin() as conn:
            old_repo(conn)
        upgrade(engine)
    finally:
        engine.dispose()
    store = SqlStore(db_url)
    store.start()
    try:
        assert store.schedule_for(["org/old"])[0].pinned_at is None
        at = datetime(2026, 12, 1, tzinfo=UTC)
        assert store.mark_pinned(["org/old"], at) == 1
        assert store.schedule_for(["org/old"])[0].pinned_at == at
    finally:
        store.close()
