"""A faulty, rate-limited Hub: every revision still recorded, no quota exceeded, backoff logged."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from hubwatch.models import RepoRef, SourceKind
from hubwatch.sources.hub import HubSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.poll import Tracker
from hubwatch.worker.discovery import Discovery
from hubwatch.worker.work import Worker
from tests.support.gitrepo import CommitSpec, add_commits, make_repo, safetensors_bytes
from tests.support.hubsim import FaultPlan, HubSimulator

pytestmark = pytest.mark.slow


def _history(store: SqlStore, repo_id: str) -> list[tuple[object, ...]]:
    return [
        (
            rev.sha,
            rev.changed,
            tuple(
                (f.path, f.content_sha256, f.header_sha256, f.header_status)
                for f in store.files(repo_id, rev.sha)
            ),
        )
        for rev in store.history(repo_id)
    ]


def test_twenty_percent_faults_lose_nothing_and_respect_the_quota(
    tmp_path: Path,
) -> None:
    commits = [
        CommitSpec(
            {
                "config.json": json.dumps({"model_type": "llama", "step": i}).encode(),
                "tokenizer_config.json": json.dumps({"chat_template": f"v{i % 3}"}).encode(),
                f"model-0000{i % 2 + 1}-of-00002.safetensors": safetensors_bytes(
                    {f"layer.{i}.weight": ("BF16", [8, 8])}
                ),
            },
            message=f"step {i}",
        )
        for i in range(12)
    ]
    make_repo(tmp_path / "up", commits, lfs_dir=tmp_path / "lfs")
    # Two stores: in one, unchanged blobs would be reused and the faulty run read nothing.
    clean_store, store = (
        SqlStore(f"sqlite:///{tmp_path / 'clean.db'}"),
        SqlStore(f"sqlite:///{tmp_path / 'faulty.db'}"),
    )
    clean_store.start()
    store.start()
    with HubSimulator(page_size_commits=3) as hub:
        hub.add_repo("org/model", tmp_path / "up", lfs_dir=tmp_path / "lfs")
        retry = RetryPolicy(attempts=10, base_s=0.05, max_wait_s=2.0)
        source = HubSource(hub.url, timeout_s=1.0)
        clean = Tracker(clean_store, {SourceKind.HUB: source}, retry=retry)
        assert clean.track(RepoRef("org/model")).error is None
        tracker = Tracker(store, {SourceKind.HUB: source}, retry=retry)

        hub.rate_limits = {"api": (20, 3.0), "resolvers": (40, 3.0)}
        hub.faults = FaultPlan(rate=0.2, seed=3, stall_s=1.5, retry_after_s=1)
        with capture_logs() as logs:
            result = tracker.track(RepoRef("org/model"))
        faults = dict(hub.stats.faults)
        exceeded = hub.stats.quota_exceeded
    assert result.error is None, result.error
    assert _history(store, "org/model") == _history(clean_store, "org/model")
    assert len(store.history("org/model")) == 12
    assert set(faults) >= {"429", "500", "timeout", "truncate", "reset"}, faults
    assert not exceeded, "a rate-limit quota was exceeded"
    events = {entry["event"] for entry in logs}
    assert "source_retry" in events  # our backoff; huggingface_hub's own retries log too
    store.close()
    clean_store.close()


def test_a_tight_quota_is_paced_not_exceeded(tmp_path: Path, sqlite_url: str) -> None:
    commits = [CommitSpec({"config.json": f'{{"step": {i}}}'.encode()}) for i in range(6)]
    make_repo(tmp_path / "up", commits)
    store = SqlStore(sqlite_url)
    store.start()
    with HubSimulator(page_size_commits=2) as hub:
        hub.add_repo("org/model", tmp_path / "up")
        hub.rate_limits = {"api": (6, 1.0), "resolvers": (6, 1.0)}
        tracker = Tracker(store, {SourceKind.HUB: HubSource(hub.url, timeout_s=5.0)})
        with capture_logs() as logs:
            result = tracker.track(RepoRef("org/model"))
        exceeded = hub.stats.quota_exceeded
    store.close()
    assert result.error is None and len(result.new) == 6
    assert not exceeded
    assert any(entry["event"] == "rate_limit_wait" for entry in logs)


def test_discovery_and_workers_under_twenty_percent_faults_record_everything(
    tmp_path: Path, sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    ids = [f"org/m{i}" for i in range(6)]
    store = SqlStore(sqlite_url)
    store.start()
    with HubSimulator() as hub:
        for repo_id in ids:
            make_repo(tmp_path / repo_id, [CommitSpec({"config.json": b'{"step": 0}'})])
            hub.add_repo(repo_id, tmp_path / repo_id)
        retry = RetryPolicy(attempts=10, base_s=0.05, max_wait_s=2.0)
        tracker = Tracker(store, {SourceKind.HUB: HubSource(hub.url, timeout_s=1.0)}, retry=retry)
        for repo_id in ids:
            assert tracker.track(RepoRef(repo_id)).error is None
        discovery = Discovery(store, tracker.sources, interval_s=0.001, skew_s=0)
        worker = Worker(store, tracker, discovery, interval_s=0.001)
        worker.tick()  # the first cycle: a HEAD per repo, and the cursor
        for repo_id in ids[:3]:
            add_commits(tmp_path / repo_id, [CommitSpec({"config.json": b'{"step": 1}'})])
            hub.touch(repo_id, datetime.now(UTC))
        hub.rate_limits = {"api": (20, 3.0), "resolvers": (40, 3.0)}
        hub.faults = FaultPlan(rate=0.2, seed=5, stall_s=1.5, retry_after_s=1)
        with capture_logs() as logs:
            for _ in range(10):  # a failed listing or poll is made up in the next cycle
                worker.tick()
                if all(len(store.history(r)) == 2 for r in ids[:3]):
                    break
        exceeded = hub.stats.quota_exceeded
        faults = sum(hub.stats.faults.values())
    assert [len(store.history(r)) for r in ids] == [2, 2, 2, 1, 1, 1]
    assert faults > 0 and not exceeded
    # the backoff shows: ours (source_retry) or huggingface_hub's own ("Retrying in 1s")
    ours = {entry["event"] for entry in logs} & {"source_retry", "head_check_failed"}
    assert ours or any("Retrying in" in message for message in caplog.messages)
    store.close()
