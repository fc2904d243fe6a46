"""Where the real Hub is harsher than a kind simulator: each behaviour taught to the simulator,
and what hubwatch does about it (a refused token, deep listing pages answering 504, long
histories, offline mode, the User-Agent, a CDN refusing one file, mis-cased repo ids)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx2
import pytest
from prometheus_client import REGISTRY
from pydantic import SecretStr
from structlog.testing import capture_logs

from hubwatch import __version__
from hubwatch.api import create_app
from hubwatch.errors import EXIT_UNREACHABLE, SourceOffline, TokenRefused
from hubwatch.models import EventKind, ReadStatus, RepoRef, RepoState, SourceKind
from hubwatch.settings import Settings
from hubwatch.sources.hub import HubSource
from hubwatch.sources.hubhttp import AGENT_REGISTRY
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.poll import Tracker
from hubwatch.worker.discovery import Discovery
from tests.conftest import DATA
from tests.support.asgi import InProcess
from tests.support.gitrepo import CommitSpec, add_commits, make_repo, safetensors_bytes
from tests.support.hubsim import HubSimulator

TOKEN = "hf_test_token_0123456789"


@pytest.fixture
def hub() -> Iterator[HubSimulator]:
    with HubSimulator(page_size_commits=10) as sim:
        sim.tokens.add(TOKEN)
        yield sim
    assert sim.errors == []


def _tracker(store: SqlStore, source: HubSource) -> Tracker:
    return Tracker(
        store, {SourceKind.HUB: source}, retry=RetryPolicy(attempts=2, sleep=lambda _s: None)
    )


def _repo(hub: HubSimulator, root: Path, repo_id: str, commits: int = 1, **kw: bool) -> Path:
    git_dir = root / repo_id
    make_repo(
        git_dir, [CommitSpec({"config.json": f'{{"n": {i}}}'.encode()}) for i in range(commits)]
    )
    hub.add_repo(repo_id, git_dir, **kw)
    return git_dir


def _metric(name: str) -> float:
    return REGISTRY.get_sample_value(name) or 0.0


# -- a refused token ------------------------------------------------------------------------


def test_a_refused_token_is_auth_failed_not_deleted(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    ids = ["org/private-a", "org/private-b"]
    for repo_id in ids:
        _repo(hub, tmp_path, repo_id, private=True)
    tracker = _tracker(store, HubSource(hub.url, TOKEN, timeout_s=5, token_check_s=3600))
    for repo_id in ids:
        assert tracker.track(RepoRef(repo_id)).error is None
    before = {repo_id: store.get_repo(repo_id) for repo_id in ids}
    refused_before = _metric("hubwatch_auth_failed_polls_total")
    hub.tokens.discard(TOKEN)  # revoked: the Hub now answers it as it answers anyone (401)
    hub.reset_stats()
    with capture_logs() as logs:
        results = [tracker.poll(repo_id) for repo_id in ids]
    assert all(isinstance(r.failure, TokenRefused) for r in results)
    for repo_id in ids:
        repo = store.get_repo(repo_id)
        assert repo.state is RepoState.AUTH_FAILED
        assert (repo.head, repo.revisions) == (before[repo_id].head, before[repo_id].revisions)
        assert not [e for e in store.events(repo_id) if e.kind is EventKind.REPO_DELETED]
    # the token is checked once, and said once: not once per repo
    assert hub.stats.count("whoami") == 1
    assert [e["event"] for e in logs if e["log_level"] == "warning"] == ["hub_token_refused"]
    assert _metric("hubwatch_auth_failed_polls_total") == refused_before + 2
    api = InProcess(create_app(store, Settings(api_token=SecretStr("x"))))
    states = {r["repo_id"]: r["state"] for r in api.get("/api/v1/repos").json()}
    assert states == dict.fromkeys(ids, "auth_failed")

    hub.tokens.add(TOKEN)  # a new token, or the old one restored
    assert tracker.poll(ids[0]).error is None
    assert store.get_repo(ids[0]).state is RepoState.ACTIVE
    assert not [e for e in store.events(ids[0]) if e.kind is EventKind.REPO_RESTORED]


def test_without_a_token_a_401_is_unavailable_not_deleted(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    _repo(hub, tmp_path, "org/secret", private=True)
    tracker = _tracker(store, HubSource(hub.url, TOKEN, timeout_s=5))
    tracker.track(RepoRef("org/secret"))
    anonymous = _tracker(store, HubSource(hub.url, None, timeout_s=5))
    anonymous.poll("org/secret")
    # nothing tells a private repo from a deleted one: unavailable, either of them
    assert store.get_repo("org/secret").state is RepoState.UNAVAILABLE
    assert hub.stats.count("whoami") == 0


# -- deep listing pages answering 504 --------------------------------------------------------


def test_a_walk_failing_on_a_deep_page_still_moves_the_cursor(
    store: SqlStore, tmp_path: Path
) -> None:
    with HubSimulator(page_size_models=2) as hub:
        ids = [f"org/model-{i}" for i in range(6)]
        start = datetime.now(UTC) - timedelta(hours=1)
        tracker = _tracker(store, HubSource(hub.url, timeout_s=5))
        for n, repo_id in enumerate(ids):
            _repo(hub, tmp_path, repo_id)
            hub.touch(repo_id, start - timedelta(minutes=n))
            tracker.track(RepoRef(repo_id))
        discovery = Discovery(store, tracker.sources, interval_s=3600, skew_s=0, margin_s=0)
        discovery.run()  # the first cycle: the cursor is the newest item
        first = store.cursor(HubSource(hub.url).feed_name)
        now = datetime.now(UTC)
        for n, repo_id in enumerate(ids):
            hub.touch(repo_id, now - timedelta(seconds=n))  # all six changed since
        hub.listing_depth = 2  # the second page (items 2..3) on: 504
        with capture_logs() as logs:
            result = discovery.run()
        assert result.covered == {HubSource(hub.url).feed_name: False}
        assert "listing_failed" in [e["event"] for e in logs]
        cursor = store.cursor(HubSource(hub.url).feed_name)
        assert first is not None and cursor is not None and cursor > first
        assert abs((cursor - now).total_seconds()) < 1  # the newest item of the complete page
        hub.reset_stats()
        idle = discovery.run()  # from the moved cursor: the first page reaches it
        assert hub.stats.count("models-list") == 1
        assert hub.stats.count("resolve", "HEAD") == 0 and idle.checked == 0
        assert hub.errors == []


# -- a long history: the commits walk stops at the stored head -------------------------------


def test_a_new_revision_lists_commits_down_to_the_stored_head_only(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    git_dir = _repo(hub, tmp_path, "org/long", commits=95)
    tracker = _tracker(store, HubSource(hub.url, timeout_s=5))
    assert len(tracker.track(RepoRef("org/long")).new) == 95
    add_commits(git_dir, [CommitSpec({"config.json": b'{"n": "new"}'})])
    hub.reset_stats()
    result = tracker.poll("org/long")
    assert len(result.new) == 1 and result.unreachable == []
    assert hub.stats.count("commits") == 1  # one page of 10, not all 10 pages


# -- offline mode --------------------------------------------------------------------------


def test_offline_mode_is_one_line_and_exit_5(hub: HubSimulator, tmp_path: Path) -> None:
    _repo(hub, tmp_path, "org/model")
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",  # huggingface_hub's request hook refuses before sending
        "HF_ENDPOINT": hub.url,
        "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
        "HUBWATCH_ADVISORY_SERVICE": "off",
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
    }
    done = subprocess.run(
        [sys.executable, "-m", "hubwatch", "track", "org/model"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == EXIT_UNREACHABLE == SourceOffline.exit_code
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "offline" in lines[0], lines
    assert hub.stats.requests == 0


# -- the User-Agent ------------------------------------------------------------------------


def test_the_user_agent_names_hubwatch_and_its_version(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    _repo(hub, tmp_path, "org/model")
    _tracker(store, HubSource(hub.url, TOKEN, timeout_s=5)).track(RepoRef("org/model"))
    agents = {r.agent for r in hub.requests}
    assert agents and all((a or "").startswith(f"hubwatch/{__version__}; hf_hub/") for a in agents)


def test_every_request_carries_the_user_agent_lfs_cdn_ranges_listings_and_errors_included(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    shard = safetensors_bytes({"model.embed.weight": ("BF16", [64, 8])})
    files = {"model.safetensors": shard, "config.json": b"{}", "README.md": b"# m\n"}
    make_repo(tmp_path / "up", [CommitSpec(files)], lfs_dir=tmp_path / "lfs")
    hub.add_repo("org/lfs", tmp_path / "up", lfs_dir=tmp_path / "lfs")
    source = HubSource(hub.url, "hf_not_a_valid_token", timeout_s=5)
    _tracker(store, source).track(RepoRef("org/lfs"))  # model info, commits, tree, resolves
    hub.rename("org/lfs", "org/lfs-renamed")
    source.status(RepoRef("org/lfs"))  # a 307 to the new name, followed
    source.head(RepoRef("org/lfs-renamed"))  # the resolver, without following
    list(source.recently_modified(5))  # the listing
    source.derivatives("org/base")
    hub.set_state("org/lfs-renamed", private=True)
    with pytest.raises(TokenRefused):
        source.status(RepoRef("org/lfs-renamed"))  # a 401, then whoami-v2
    routes = {r.route for r in hub.requests}
    assert {"cdn", "resolve", "tree", "commits", "models-list", "whoami"} <= routes, routes
    assert any(r.range for r in hub.requests if r.route == "cdn")  # header range reads
    unsigned = [
        r for r in hub.requests if not (r.agent or "").startswith(f"hubwatch/{__version__}")
    ]
    assert unsigned == []


def test_no_request_leaves_without_the_user_agent_not_even_huggingface_hubs_own(
    hub: HubSimulator, tmp_path: Path
) -> None:
    # huggingface_hub fetches an "agent harness" registry from HF_ENDPOINT to decorate its
    # User-Agent (the real trace's first exchange, with httpx's own User-Agent): refused
    trace = json.loads((DATA / "hub-traces" / "ref-download-plain.json").read_text())
    first = trace["exchanges"][0]
    assert first["path"] == AGENT_REGISTRY
    assert not first["request_headers"]["User-Agent"][0].startswith("hubwatch")
    _repo(hub, tmp_path, "org/model")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HUBWATCH_", "HF_"))}
    env |= {
        "HF_ENDPOINT": hub.url,  # where huggingface_hub itself would send it
        "HF_HOME": str(tmp_path / "hf-home"),  # no registry cached from an earlier run
        "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
        "HUBWATCH_ADVISORY_SERVICE": "off",
    }
    done = subprocess.run(
        [sys.executable, "-m", "hubwatch", "track", "org/model"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert hub.requests and not [r for r in hub.requests if r.path.startswith(AGENT_REGISTRY)]
    assert all((r.agent or "").startswith(f"hubwatch/{__version__}") for r in hub.requests)
    assert not (tmp_path / "hf-home").exists()  # and nothing written under HF_HOME


# -- a CDN refusing one file -----------------------------------------------------------------


def test_a_cdn_refusal_fails_that_file_only(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    shard1 = safetensors_bytes({"model.embed.weight": ("BF16", [64, 8])})
    shard2 = safetensors_bytes({"lm_head.weight": ("BF16", [64, 8])})
    files = {"a.safetensors": shard1, "b.safetensors": shard2, "config.json": b"{}"}
    make_repo(tmp_path / "up", [CommitSpec(files)], lfs_dir=tmp_path / "lfs")
    hub.add_repo("org/cdn", tmp_path / "up", lfs_dir=tmp_path / "lfs")
    tree = HubSource(hub.url).list_files(RepoRef("org/cdn"), hub_head(hub, "org/cdn"))
    refused = next(f for f in tree if f.path == "a.safetensors")
    assert refused.lfs_sha256 is not None
    hub.cdn_refused.add(refused.lfs_sha256)
    result = _tracker(store, HubSource(hub.url, timeout_s=5)).track(RepoRef("org/cdn"))
    assert result.error is None and len(result.new) == 1
    stored = {f.path: f for f in store.files("org/cdn", result.new[0])}
    assert stored["a.safetensors"].header_status is ReadStatus.UNAVAILABLE
    assert "403" in (stored["a.safetensors"].header_error or "")
    assert stored["b.safetensors"].header_status is ReadStatus.STORED
    assert any(r.route == "cdn" and r.status == 403 for r in hub.requests)


def hub_head(hub: HubSimulator, repo_id: str) -> str:
    return HubSource(hub.url).status(RepoRef(repo_id)).head


# -- mis-cased repo ids --------------------------------------------------------------------


def test_the_simulator_redirects_a_mis_cased_id_to_the_canonical_one(
    hub: HubSimulator, tmp_path: Path
) -> None:
    _repo(hub, tmp_path, "Org/Model-X")
    answer = httpx2.get(f"{hub.url}/api/models/org/model-x?expand=sha", follow_redirects=False)
    assert answer.status_code == 307
    assert answer.headers["Location"] == "/api/models/Org/Model-X?expand=sha"


def test_a_mis_cased_id_is_tracked_under_the_canonical_id(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    _repo(hub, tmp_path, "Org/Model-X")
    result = _tracker(store, HubSource(hub.url, timeout_s=5)).track(RepoRef("org/model-x"))
    assert result.repo_id == "Org/Model-X" and len(result.new) == 1
    [tracked] = store.list_repos()
    assert tracked.ref.repo_id == "Org/Model-X" and tracked.renamed_to is None
    assert not [e for e in store.events("Org/Model-X") if e.kind is EventKind.REPO_RENAMED]
