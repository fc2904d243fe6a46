"""What one poll cycle costs with change discovery, against polling every repo, for 10,000 repos.

Question: does an idle repo still cost a request per cycle? 10,000 Hub repos are tracked on the
simulator (served from a dozen small git dirs), 50 of them get a new commit; then one cycle runs
each way, in the same run, on the same store, after a first cycle and an idle one:

- baseline: `Tracker.poll_all()`, a model_info request per repo (what `hubwatch poll --once`
  does), on one set of 50 changed repos;
- discovery: one `Worker.tick()` (the `/api/models?sort=lastModified` walk down to the stored
  cursor, then polls of the repos it names), on another set of 50;
- Hub webhooks: the Hub POSTs a push event per changed repo to `/hooks/hub` (in process, the
  way the Hub's webhook would reach `hubwatch serve`), then one `Worker.tick()`, on a third set.

All must find all 50. Also printed: the first discovery cycle (no cursor yet: a resolver HEAD
per repo), an idle one, and the floor: the reads of the new revisions (commit listings, trees,
changed files), which every approach pays. The simulator's quotas are raised so that pacing
does not stretch the run; requests are what is counted.

Run: python bench/discovery.py [REPOS]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

from fastapi import FastAPI
from fastapi.testclient import TestClient

from hubwatch.api.hooks import hub_hooks_router, store_poller
from hubwatch.logging import configure_logging
from hubwatch.models import RepoRef, SourceKind
from hubwatch.sources.hub import HubSource
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.discovery import Discovery
from hubwatch.tracker.poll import Tracker
from hubwatch.tracker.snapshot import Limits, take_snapshot
from hubwatch.tracker.work import Worker
from tests.support.gitrepo import CommitSpec, add_commits, make_repo
from tests.support.hubsim import HubSimulator

CHANGED = 50
COLD_DIRS = 10


def _register(store: SqlStore, source: HubSource, hub: HubSimulator, ids: dict[str, Path]) -> None:
    """Track every id as `hubwatch track` would leave it, through the store (fast)."""
    snapshots = {}
    now = datetime.now(UTC)
    for n, (repo_id, git_dir) in enumerate(ids.items(), 1):
        hub.add_repo(repo_id, git_dir)
        hub.touch(repo_id, now - timedelta(minutes=n))  # last modified over the past days
        ref = RepoRef(repo_id)
        store.add_repo(ref)
        if git_dir not in snapshots:
            commit = source.list_commits(ref)[0]
            snapshots[git_dir] = take_snapshot(source, ref, commit, store, Limits())
        snapshot = snapshots[git_dir]
        store.add_revision(repo_id, snapshot)
        store.update_repo(repo_id, head=snapshot.commit.sha, polled_at=now)
        if n % 2000 == 0:
            print(f"  registered {n:,} repos", file=sys.stderr)
    store.set_listed(ids, True)  # what the full poll of `hubwatch track` records


def _finding(hub: HubSimulator) -> int:
    """Requests spent finding out what changed: all but reading the new revisions' history,
    trees and files, which both ways pay alike."""
    reading = ("commits", "tree", "paths-info", "cdn")
    reads = sum(hub.stats.count(route) for route in reading)
    reads += hub.stats.count("resolve", "GET")
    return hub.stats.requests - reads


def _change(hub: HubSimulator, git_dir: Path, ids: list[str]) -> str:
    config = f'{{"t": {time.time()}}}'.encode()
    [sha] = add_commits(git_dir, [CommitSpec({"config.json": config})])
    now = datetime.now(UTC)
    for repo_id in ids:
        hub.touch(repo_id, now)  # the Hub's lastModified is the push time
    return sha


def _push_events(store: SqlStore, ids: list[str], sha: str) -> None:
    """What the Hub's webhook sends for each push, POSTed to the `/hooks/hub` route."""
    app = FastAPI()
    app.include_router(hub_hooks_router("bench-secret", store_poller(store)))
    client = TestClient(app, headers={"X-Webhook-Secret": "bench-secret"})
    for repo_id in ids:
        payload = {
            "event": {"action": "update", "scope": "repo.content"},
            "repo": {"type": "model", "name": repo_id, "private": False, "headSha": sha},
            "updatedRefs": [{"ref": "refs/heads/main", "oldSha": "0" * 40, "newSha": sha}],
        }
        answer = client.post("/hooks/hub", json=payload)
        assert answer.json()["status"] == "polling", answer.text


def main(total: int) -> None:
    configure_logging("WARNING")
    with tempfile.TemporaryDirectory() as tmp, HubSimulator() as hub:
        root = Path(tmp)
        hot = ["hot-a", "hot-b", "hot-c"]
        dirs = {name: root / name for name in [*hot, *(f"cold-{i}" for i in range(COLD_DIRS))]}
        for git_dir in dirs.values():
            make_repo(git_dir, [CommitSpec({"config.json": b'{"model_type": "llama"}'})])
        hot_a = [f"hot-a/model-{i}" for i in range(CHANGED)]
        hot_b = [f"hot-b/model-{i}" for i in range(CHANGED)]
        hot_c = [f"hot-c/model-{i}" for i in range(CHANGED)]
        ids = dict.fromkeys(hot_a, dirs["hot-a"])
        ids |= dict.fromkeys(hot_b, dirs["hot-b"])
        ids |= dict.fromkeys(hot_c, dirs["hot-c"])
        for i in range(total - 3 * CHANGED):
            ids[f"cold-{i % COLD_DIRS}/model-{i}"] = dirs[f"cold-{i % COLD_DIRS}"]
        hub.rate_limits = {"api": (10**8, 300.0), "resolvers": (10**8, 300.0)}

        store = SqlStore(f"sqlite:///{root / 'bench.db'}")
        store.start()
        source = HubSource(hub.url, timeout_s=30.0)
        t0 = time.perf_counter()
        _register(store, source, hub, ids)
        print(
            f"  registered {len(ids):,} repos in {time.perf_counter() - t0:.0f} s", file=sys.stderr
        )
        tracker = Tracker(store, {SourceKind.HUB: source})
        # skew 0: the simulator's clock is ours (the default allows for 5 s of skew)
        discovery = Discovery(store, tracker.sources, interval_s=3600, skew_s=0)
        worker = Worker(store, tracker, discovery, interval_s=3600)

        rows = []

        hub.reset_stats()
        t0 = time.perf_counter()
        first = discovery.run()
        rows.append(("discovery, first cycle (no cursor)", hub.stats.requests, len(first.woken), 0,
                     time.perf_counter() - t0))  # fmt: skip

        hub.reset_stats()
        t0 = time.perf_counter()
        idle = discovery.run()
        rows.append(("discovery, idle cycle (steady state)", hub.stats.requests, len(idle.woken), 0,
                     time.perf_counter() - t0))  # fmt: skip
        _change(hub, dirs["hot-a"], hot_a)
        hub.reset_stats()
        t0 = time.perf_counter()
        cycle = worker.tick()
        found = sorted(r.repo_id for r in cycle.polls if r.new)
        cheap = hub.stats.requests
        cheap_find = _finding(hub)
        rows.append(("discovery cycle (listing + polls)", cheap, len(found), CHANGED,
                     time.perf_counter() - t0))  # fmt: skip
        assert found == sorted(hot_a), found
        routes = dict(hub.stats.by_route)

        sha = _change(hub, dirs["hot-c"], hot_c)
        hub.reset_stats()
        t0 = time.perf_counter()
        _push_events(store, hot_c, sha)
        pushed = worker.tick()  # discovery ran above and is not due: the woken repos only
        assert pushed.discovery is None
        found = sorted(r.repo_id for r in pushed.polls if r.new)
        hooked = hub.stats.requests
        rows.append(("Hub webhooks (push events + polls)", hooked, len(found), CHANGED,
                     time.perf_counter() - t0))  # fmt: skip
        assert found == sorted(hot_c), found
        hook_routes = dict(hub.stats.by_route)

        _change(hub, dirs["hot-b"], hot_b)
        hub.reset_stats()
        t0 = time.perf_counter()
        polled = tracker.poll_all()
        found = sorted(r.repo_id for r in polled if r.new)
        baseline = hub.stats.requests
        base_find = _finding(hub)
        floor = baseline - base_find
        rows.append(("per-repo polling (poll_all)", baseline, len(found), CHANGED,
                     time.perf_counter() - t0))  # fmt: skip
        assert found == sorted(hot_b), found

        store.close()

    print(f"{total:,} tracked Hub repos, {CHANGED} changed per cycle; simulator on 127.0.0.1")
    print(f"{'case':38} {'requests':>9} {'found':>7} {'seconds':>8} {'req/base':>9}")
    for case, requests, got, expected, seconds in rows:
        print(
            f"{case:38} {requests:>9,} {f'{got}/{expected}':>7} {seconds:>8.1f}"
            f" {requests / baseline:>9.4f}"
        )
    for name, by_route in (("discovery cycle", routes), ("Hub webhooks", hook_routes)):
        per_route = ", ".join(f"{m} {r}: {n}" for (m, r), n in sorted(by_route.items()))
        print(f"{name} by route: {per_route}")
    print(
        f"floor (reading the 50 new revisions, paid by every approach): {floor}/{baseline}"
        f" = {floor / baseline:.4%}"
    )
    for name, requests in (("discovery", cheap), ("Hub webhooks", hooked)):
        ratio = requests / baseline
        verdict = "met" if ratio <= 0.01 else "missed"
        print(
            f"whole cycle, {name}/per-repo: {requests}/{baseline} = {ratio:.4%}"
            f" (goal <= 1%: {verdict})"
        )
    print(
        f"finding the changes (requests other than reading the new revisions): "
        f"{cheap_find}/{base_find} = {cheap_find / base_find:.4%}"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
