"""What one poll cycle costs with change discovery, against polling every repo, for 10,000 repos.

Question: does an idle repo still cost a request per cycle? 10,000 Hub repos are tracked on the
simulator (the idle ones served from a dozen small git dirs; every changed repo from a git dir of
its own, with a commit of its own, so no file read serves two repos), 50 of them get a new
commit; then one cycle runs each way, in the same run, on the same store, after a first cycle
and an idle one:

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

Two harsher cases from the real Hub (issue 18):

- deep listing pages answer 504: 2,000 other Hub repos change, so the walk to the cursor needs a
  second page of the listing, which fails. That cycle falls back to a resolver HEAD per repo; the
  cursor still moves to the newest item of the complete page, so the next cycle (50 more changed)
  costs O(changed repos). For comparison, an idle cycle with the cursor put back where a failed
  walk used to leave it (it never moved): the fallback again, every cycle.
- a repo with 1,000 commits gets one more: its poll lists commits down to the stored head (one
  page), against the 20 pages (50 commits each) of its whole history, listed in the same run.

Run: python bench/discovery.py [REPOS]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
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
from hubwatch.tracker.poll import Tracker
from hubwatch.tracker.snapshot import Limits, take_snapshot
from hubwatch.worker.discovery import Discovery
from hubwatch.worker.work import Worker
from tests.support.gitrepo import CommitSpec, add_commits, git, make_repo
from tests.support.hubsim import HubSimulator

CHANGED = 50
COLD_DIRS = 10
BUSY = 2_000
"""Other Hub repos (not tracked) modified during the 504 case: the walk needs a second page."""
LONG = 1_000
"""Commits of the long-history repo."""


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


def _change(
    hub: HubSimulator, dirs: dict[str, Path], ids: list[str], when: datetime | None = None
) -> None:
    """A commit of its own in each repo's own git dir (its config names it), pushed `when`."""
    for repo_id in ids:
        config = f'{{"repo": "{repo_id}", "t": {time.time()}}}'.encode()
        add_commits(dirs[repo_id], [CommitSpec({"config.json": config})])
        hub.touch(repo_id, when or datetime.now(UTC))  # the Hub's lastModified: the push time


def _push_events(store: SqlStore, ids: list[str], dirs: dict[str, Path]) -> None:
    """What the Hub's webhook sends for each push, POSTed to the `/hooks/hub` route."""
    app = FastAPI()
    app.include_router(hub_hooks_router("bench-secret", store_poller(store)))
    client = TestClient(app, headers={"X-Webhook-Secret": "bench-secret"})
    for repo_id in ids:
        sha = git(dirs[repo_id], "rev-parse", "HEAD")
        payload = {
            "event": {"action": "update", "scope": "repo.content"},
            "repo": {"type": "model", "name": repo_id, "private": False, "headSha": sha},
            "updatedRefs": [{"ref": "refs/heads/main", "oldSha": "0" * 40, "newSha": sha}],
        }
        answer = client.post("/hooks/hub", json=payload)
        assert answer.json()["status"] == "polling", answer.text


Row = tuple[str, int, int, int, float]


def _cycle(
    name: str, hub: HubSimulator, run: Callable[[], list[str]], expected: list[str]
) -> tuple[Row, dict[tuple[str, str], int]]:
    """Run one measured cycle; its row and its requests by route. `run` returns what it found."""
    hub.reset_stats()
    t0 = time.perf_counter()
    found = sorted(run())
    row = (name, hub.stats.requests, len(found), len(expected), time.perf_counter() - t0)
    assert found == sorted(expected), (name, found)
    return row, dict(hub.stats.by_route)


def _deep_pages(
    hub: HubSimulator,
    store: SqlStore,
    discovery: Discovery,
    worker: Worker,
    sets: dict[str, list[str]],
    dirs: dict[str, Path],
    busy_dir: Path,
) -> list[Row]:
    """The 504 case: the walk fails on its second page; the cursor moves all the same."""
    feed = HubSource(hub.url).feed_name
    before = store.cursor(feed)
    # Listing times ten minutes apart, as cycles are (the walk overlaps the last one by 2 min)
    start = datetime.now(UTC)
    for i in range(BUSY):  # the rest of the Hub, busy since the last cycle
        hub.add_repo(f"busy/model-{i}", busy_dir)
        hub.touch(f"busy/model-{i}", start + timedelta(minutes=10, milliseconds=-i))
    hub.listing_depth = hub.page_size_models  # the second page and later: 504 Gateway Time-out

    def cycle() -> list[str]:
        discovery.run()
        return [r.repo_id for r in worker.drain() if r.new]

    _change(hub, dirs, sets["hot-d"], start + timedelta(minutes=20))
    failed, _ = _cycle("504 on page 2: the failing cycle", hub, cycle, sets["hot-d"])
    moved = store.cursor(feed)
    assert before is not None and moved is not None and moved > before, (before, moved)
    _change(hub, dirs, sets["hot-e"], start + timedelta(minutes=30))
    after, routes = _cycle("504 on page 2: the next cycle", hub, cycle, sets["hot-e"])
    store.set_cursor(feed, before)  # where a failed walk used to leave it
    stuck, _ = _cycle("504, cursor left behind: idle", hub, cycle, [])
    hub.listing_depth = None
    print(
        f"504 case: cursor {before:%H:%M:%S.%f} -> {moved:%H:%M:%S.%f} after the failing walk;"
        f" next cycle by route: {_by_route(routes)}"
    )
    return [failed, after, stuck]


def _long_history(hub: HubSimulator, store: SqlStore, tracker: Tracker, root: Path) -> list[Row]:
    """A repo of LONG commits gets one more: commit-listing requests of its poll."""
    git_dir = root / "long-history"
    make_repo(git_dir, [CommitSpec({"config.json": f'{{"n": {i}}}'.encode()}) for i in range(LONG)])
    source = tracker.sources[SourceKind.HUB]
    _register(store, source, hub, {"long/history": git_dir})
    hub.reset_stats()
    t0 = time.perf_counter()
    assert len(source.list_commits(RepoRef("long/history"))) == LONG
    whole = ("its whole history listed", hub.stats.count("commits"), 0, 0, time.perf_counter() - t0)
    add_commits(git_dir, [CommitSpec({"config.json": b'{"n": "new"}'})])
    hub.reset_stats()
    t0 = time.perf_counter()
    result = tracker.poll("long/history")
    assert len(result.new) == 1, result
    commits = hub.stats.count("commits")
    new = ("a new revision's poll", commits, len(result.new), 1, time.perf_counter() - t0)
    print(f"{LONG:,}-commit repo, commit-listing requests (page of 50):")
    for case, requests, *_ in (whole, new):
        print(f"  {case:30} {requests:>4}")
    print(f"  all requests of that poll: {hub.stats.requests} ({_by_route(hub.stats.by_route)})")
    return [whole, new]


def _by_route(by_route: Mapping[tuple[str, str], int]) -> str:
    return ", ".join(f"{m} {r}: {n}" for (m, r), n in sorted(by_route.items()))


def main(total: int) -> None:
    configure_logging("WARNING")
    with tempfile.TemporaryDirectory() as tmp, HubSimulator() as hub:
        root = Path(tmp)
        cold = {f"cold-{i}": root / f"cold-{i}" for i in range(COLD_DIRS)}
        for git_dir in cold.values():
            make_repo(git_dir, [CommitSpec({"config.json": b'{"model_type": "llama"}'})])
        sets = {s: [f"{s}/model-{i}" for i in range(CHANGED)] for s in ("hot-a", "hot-b", "hot-c")}
        sets |= {s: [f"{s}/model-{i}" for i in range(CHANGED)] for s in ("hot-d", "hot-e")}
        dirs: dict[str, Path] = {}
        for repo_id in (r for ids in sets.values() for r in ids):
            dirs[repo_id] = root / "hot" / repo_id
            make_repo(dirs[repo_id], [CommitSpec({"config.json": repo_id.encode()})])
        ids = dict(dirs)
        for i in range(total - len(ids)):
            ids[f"cold-{i % COLD_DIRS}/model-{i}"] = cold[f"cold-{i % COLD_DIRS}"]
        hub.rate_limits = {"api": (10**8, 300.0), "resolvers": (10**8, 300.0)}

        store = SqlStore(f"sqlite:///{root / 'bench.db'}")
        store.start()
        # the simulator builds each listing page from every repo: slow on a loaded machine
        source = HubSource(hub.url, timeout_s=300.0)
        t0 = time.perf_counter()
        _register(store, source, hub, ids)
        print(
            f"  registered {len(ids):,} repos in {time.perf_counter() - t0:.0f} s", file=sys.stderr
        )
        tracker = Tracker(store, {SourceKind.HUB: source})
        # skew 0: the simulator's clock is ours (the default allows for 5 s of skew)
        discovery = Discovery(store, tracker.sources, interval_s=3600, skew_s=0)
        worker = Worker(store, tracker, discovery, interval_s=3600)

        woken = lambda: discovery.run().woken  # noqa: E731
        first_cycles = ["discovery, first cycle (no cursor)"]
        first_cycles.append("discovery, idle cycle (steady state)")
        rows = [_cycle(name, hub, woken, [])[0] for name in first_cycles]

        _change(hub, dirs, sets["hot-a"])
        polled = lambda: [r.repo_id for r in worker.tick().polls if r.new]  # noqa: E731
        row, routes = _cycle("discovery cycle (listing + polls)", hub, polled, sets["hot-a"])
        rows.append(row)
        cheap, cheap_find = row[1], _finding(hub)

        _change(hub, dirs, sets["hot-c"])

        def hooked_cycle() -> list[str]:
            _push_events(store, sets["hot-c"], dirs)
            pushed = worker.tick()  # discovery ran above and is not due: the woken repos only
            assert pushed.discovery is None
            return [r.repo_id for r in pushed.polls if r.new]

        row, hook_routes = _cycle("Hub webhooks (push events + polls)", hub, hooked_cycle,
                                  sets["hot-c"])  # fmt: skip
        rows.append(row)
        hooked = row[1]

        rows += _deep_pages(hub, store, discovery, worker, sets, dirs, cold["cold-0"])
        rows += _long_history(hub, store, tracker, root)

        _change(hub, dirs, sets["hot-b"])
        all_polled = lambda: [r.repo_id for r in tracker.poll_all() if r.new]  # noqa: E731
        row, _ = _cycle("per-repo polling (poll_all)", hub, all_polled, sets["hot-b"])
        rows.append(row)
        baseline, base_find = row[1], _finding(hub)
        floor = baseline - base_find
        store.close()

    print(f"{total:,} tracked Hub repos, {CHANGED} changed per cycle; simulator on 127.0.0.1")
    print(f"{'case':38} {'requests':>9} {'found':>7} {'seconds':>8} {'req/base':>9}")
    for case, requests, got, expected, seconds in rows:
        print(
            f"{case:38} {requests:>9,} {f'{got}/{expected}':>7} {seconds:>8.1f}"
            f" {requests / baseline:>9.4f}"
        )
    for name, by_route in (("discovery cycle", routes), ("Hub webhooks", hook_routes)):
        print(f"{name} by route: {_by_route(by_route)}")
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
