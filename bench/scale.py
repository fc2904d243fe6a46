"""Whole-Hub scale: N tracked repos, 4 `hubwatch worker` processes, the Hub's free quotas enforced.

Question (issues 35, 36): with 1k, 10k, 100k repos tracked, is every change recorded within 10
minutes, without a request refused by the quota, and how do requests, memory and database size
grow with N? Per run (one N, one case):

- the simulator serves N repos: all but K from COLD_DIRS shared git dirs, each of the K that
  change from a git dir of its own (no read is shared); quotas enforced as the Hub announces
  them to a free user (1,000 "api" and 5,000 "resolvers" requests per 300 s, per token);
- registration in a fresh PostgreSQL database: one template repo per git dir tracked through
  the real code, its rows copied in SQL for the rest (bench/scale_store.py says how);
- 4 workers (the real CLI, the daemon's default settings but for the endpoint, database and
  token) run the first cycle: its requests by route and bucket are printed (issue 36: <= 2 per
  1,000 repos beyond the listing);
- then a 10-minute window: K repos get a commit each at random times (a commit in its git dir,
  and the Hub's lastModified moved to the push time), while V repos' periodic verification falls
  due: spread over the window (case `steady`, V = 694 per 100k repos: a day's verifications of
  each repo) or all at its start (case `wave`, V = 3,472 per 100k: the first days' bunching,
  tracked at once with a 10 % jitter). A change's lateness: when its revision was stored minus
  its push time. Stragglers are waited for up to a second window.
- `hubwatch serve` is then started on the same database, and its pages and API read a few times.

Printed per run: lateness (p50, p99, max, late > 10 min, never recorded), verifications done and
how late, requests per bucket and route, 429s (and those that came after a Retry-After was
announced), peak RSS (VmHWM) of each worker and of `serve`, database bytes per repo and per
revision; at the end a growth table, each figure against the smallest N's.

`--time-scale S` divides every period by S: the quota windows, the poll (discovery) interval, the
verification interval, the work tick, the lease and the 10-minute window and goal; lateness is
printed in seconds and times S (its S=1 equivalent). S=1 gives the real figures; with S > 1,
what takes CPU is not scaled, so the machine counts for S times more. Discovery's 2-minute
listing overlap and 5 s clock skew are not settings, so are not scaled.

Run: python bench/scale.py --repos 1000,10000 --case steady,wave --time-scale 10
(PostgreSQL on 127.0.0.1:5432, trust auth, database `test`: a database per run is made there.)
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support and bench
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

from bench import scale_store as db
from bench.scale_report import WINDOW_S, Run, growth, report

from hubwatch.logging import configure_logging
from hubwatch.models import RepoRef, SourceKind
from hubwatch.settings import Settings
from hubwatch.sources.hub import HubSource
from hubwatch.store.sql import SqlStore
from hubwatch.store.sql.tally import BLOCK
from hubwatch.tracker.poll import Tracker
from tests.support.gitrepo import CommitSpec, add_commits, make_repo
from tests.support.hubsim import HUB_QUOTAS, HubSimulator

CHANGES = 167
VERIFY_PER_100K = {"steady": 694, "wave": 3472}
COLD_DIRS = 10
WORKERS = 4
TOKEN = "hf_scale_bench"
PERIODS = {  # the daemon's defaults (settings.py), divided by --time-scale
    f"HUBWATCH_{name.upper()}": float(Settings.model_fields[name].default)
    for name in ("poll_interval_s", "verify_interval_s", "work_tick_s", "lease_s")
}


class CountingHub(HubSimulator):
    """The simulator, also noting when each quota refusal (429) came, per bucket and window."""

    def __init__(self) -> None:
        super().__init__()
        self.refused: dict[tuple[str, int], list[float]] = {}

    def _take_quota(self, bucket: str, ident: str) -> tuple[dict[str, str], int, bool]:
        headers, reset_s, refused = super()._take_quota(bucket, ident)
        if refused:
            _, window = (self.rate_limits or HUB_QUOTAS)[bucket]
            now = time.monotonic() - self._t0
            self.refused.setdefault((bucket, int(now // window)), []).append(now)
        return headers, reset_s, refused

    def refusals(self) -> tuple[Counter[str], int]:
        """429s by bucket; and those sent over a second after their window's first 429 (a
        client that had been told Retry-After and went on)."""
        by_bucket: Counter[str] = Counter()
        ignored = 0
        for (bucket, _), times in self.refused.items():
            by_bucket[bucket] += len(times)
            ignored += sum(1 for t in times if t > times[0] + 1.0)
        return by_bucket, ignored


def _register(
    hub: CountingHub, url: str, cold: list[Path], hot: dict[str, Path], total: int
) -> list[str]:
    """Serve and track every repo; the cold ids."""
    store = SqlStore(db.sa_url(url))
    store.start()
    source = HubSource(hub.url, TOKEN, timeout_s=300.0)
    tracker = Tracker(store, {SourceKind.HUB: source})
    now = datetime.now(UTC)
    cold_ids: list[list[str]] = [[] for _ in cold]
    for i in range(total - len(hot)):
        cold_ids[i % len(cold)].append(f"cold{i % len(cold)}/m{i}")
    n = 0
    for d, ids in enumerate(cold_ids):
        for repo_id in ids:
            hub.add_repo(repo_id, cold[d])
            n += 1
            hub.touch(repo_id, now - timedelta(minutes=n))  # modified over the past weeks
    for repo_id, git_dir in hot.items():
        hub.add_repo(repo_id, git_dir)
        n += 1
        hub.touch(repo_id, now - timedelta(minutes=n))
    for repo_id in [ids[0] for ids in cold_ids if ids] + list(hot):
        tracker.track(RepoRef(repo_id))
    store.set_listed([ids[0] for ids in cold_ids if ids] + list(hot), True)
    store.close()
    source.close()
    for ids in cold_ids:
        rest = ids[1:]
        if rest:
            oids = [hub.identities.object_id(r) for r in rest]
            db.clone_repo(url, ids[0], rest, oids, BLOCK)
    return [r for ids in cold_ids for r in ids]


def _env(hub: CountingHub, url: str, scale: float, data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HUBWATCH_", "HF_"))}
    env |= {name: f"{value / scale:g}" for name, value in PERIODS.items()}
    env |= {
        "HUBWATCH_DATABASE_URL": db.sa_url(url),
        "HUBWATCH_HF_ENDPOINT": hub.url,
        "HUBWATCH_HF_TOKEN": TOKEN,
        "HUBWATCH_ADVISORY_SERVICE": "off",  # no OSV database here: not what is measured
        "HUBWATCH_LOG_FORMAT": "json",
        "HUBWATCH_DATA_DIR": str(data),
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    }
    return env


def vm_hwm(pid: int) -> int:
    """Peak resident set of a process, bytes (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def _start_workers(
    env: dict[str, str], root: Path
) -> tuple[list[subprocess.Popen[bytes]], list[Path]]:
    procs, logs = [], []
    for i in range(WORKERS):
        log = root / f"worker-{i}.log"
        with log.open("wb") as out:
            cmd = [sys.executable, "-m", "hubwatch", "worker", "--id", f"w{i}"]
            procs.append(
                subprocess.Popen(
                    cmd,
                    env={**env, "HUBWATCH_DATA_DIR": str(root / f"w{i}")},
                    stderr=out,
                    stdout=out,
                )
            )
        logs.append(log)
    return procs, logs


def _first_cycle(hub: CountingHub, url: str, logs: list[Path], run: Run, limit_s: float) -> None:
    """Wait for the first discovery cycle and the polls it woke; its requests."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        if any('"discovery_finished"' in log.read_text() for log in logs) and db.busy(url) == 0:
            break
        time.sleep(0.5)
    else:
        print(f"  first cycle not finished in {limit_s:.0f} s", file=sys.stderr)
    run.first_s = time.monotonic() - t0
    run.first_requests = Counter(hub.stats.by_route)


def _window(
    hub: CountingHub,
    url: str,
    run: Run,
    cold_ids: list[str],
    hot: dict[str, Path],
    scale: float,
    verify: int,
    rng: random.Random,
) -> None:
    """The 10-minute window (÷ S): changes at random times, verifications falling due."""
    window = WINDOW_S / scale
    start = datetime.now(UTC) + timedelta(seconds=2)
    due_ids = rng.sample(cold_ids, min(verify, len(cold_ids)))
    if run.case == "wave":
        due = dict.fromkeys(due_ids, start)
    else:
        due = {r: start + timedelta(seconds=rng.uniform(0, window)) for r in due_ids}
    db.set_due(url, due)
    changes = sorted((rng.uniform(0, window), repo_id) for repo_id in hot)
    hub.reset_stats()
    hub.refused.clear()
    pushed: dict[str, datetime] = {}
    for offset, repo_id in changes:
        wait = (start + timedelta(seconds=offset) - datetime.now(UTC)).total_seconds()
        time.sleep(max(0.0, wait))
        config = f'{{"repo": "{repo_id}", "t": {time.time()}}}'.encode()
        (sha,) = add_commits(hot[repo_id], [CommitSpec({"config.json": config})])
        at = datetime.now(UTC)
        hub.touch(repo_id, at)  # the Hub's lastModified: the push time
        pushed[sha] = at
    deadline = start + timedelta(seconds=2 * window)
    while datetime.now(UTC) < deadline:  # stragglers: every change and verification, or 2 W
        if len(db.recorded(url, list(pushed))) == len(pushed):
            last = db.polled(url, due_ids)
            if all(last[r] and last[r] >= due[r] for r in due_ids):
                break
        time.sleep(1.0)
    stored = db.recorded(url, list(pushed))
    run.lateness = sorted(
        (stored[s] - at).total_seconds() for s, at in pushed.items() if s in stored
    )
    run.missing = len(pushed) - len(stored)
    run.window_requests = Counter(hub.stats.by_route)
    run.refused, run.ignored = hub.refusals()
    last = db.polled(url, due_ids)
    done = [(last[r] - due[r]).total_seconds() for r in due_ids if last[r] and last[r] >= due[r]]
    run.verify_due, run.verify_done, run.verify_late = len(due_ids), len(done), sorted(done)


def _serve(env: dict[str, str], root: Path, sample: str) -> int:
    """Peak RSS of `hubwatch serve` on the run's database after a few reads."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = root / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "hubwatch", "serve", "--port", str(port)],
            env={**env, "HUBWATCH_DATA_DIR": str(root / "serve")},
            stdout=out,
            stderr=out,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=5).read()
                break
            except OSError:
                time.sleep(0.5)
        paths = [
            "/",
            "/api/v1/repos",
            f"/api/v1/repos/{sample}",
            f"/repos/{sample}",
            "/feeds/all.atom",
        ]
        for _ in range(3):
            for path in paths:
                try:
                    urllib.request.urlopen(base + path, timeout=120).read()
                except OSError as exc:
                    print(f"  serve {path}: {exc}", file=sys.stderr)
        return vm_hwm(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=120)


def run_one(total: int, case: str, scale: float, changes: int, seed: int) -> Run:
    run = Run(total, case)
    rng = random.Random(seed)
    verify = max(1, round(VERIFY_PER_100K[case] * total / 100_000))
    with tempfile.TemporaryDirectory() as tmp, CountingHub() as hub:
        root = Path(tmp)
        hub.tokens.add(TOKEN)
        cold = [root / f"cold-{i}" for i in range(COLD_DIRS)]
        for i, path in enumerate(cold):
            make_repo(
                path,
                [
                    CommitSpec(
                        {
                            "config.json": f'{{"model_type": "llama", "d": {i}}}'.encode(),
                            "README.md": b"---\nlicense: mit\n---\n# m\n",
                        }
                    )
                ],
            )
        hot = {f"hot/m{k}": root / f"hot-{k}" for k in range(min(changes, total // 2))}
        for repo_id, path in hot.items():
            make_repo(path, [CommitSpec({"config.json": repo_id.encode()})])
        with db.scratch_database(f"scale_{os.getpid()}_{total}_{case}") as url:
            run.empty_db_bytes = _empty_size(url)
            t0 = time.perf_counter()
            cold_ids = _register(hub, url, cold, hot, total)
            print(
                f"  {total:,} repos registered in {time.perf_counter() - t0:.0f} s", file=sys.stderr
            )
            hub.rate_limits = {b: (q, w / scale) for b, (q, w) in HUB_QUOTAS.items()}
            hub.reset_stats()
            env = _env(hub, url, scale, root)
            procs, logs = _start_workers(env, root)
            try:
                _first_cycle(hub, url, logs, run, limit_s=max(1800.0, 3 * WINDOW_S / scale))
                print(f"  first cycle: {run.first_s:.0f} s", file=sys.stderr)
                _window(hub, url, run, cold_ids, hot, scale, verify, rng)
                run.worker_rss = [vm_hwm(p.pid) for p in procs]
            finally:
                for proc in procs:
                    proc.terminate()
                for proc in procs:
                    proc.wait(timeout=120)
            run.serve_rss = _serve(env, root, next(iter(hot)))
            run.db_bytes, _, run.revisions = db.sizes(url)
    return run


def _empty_size(url: str) -> int:
    store = SqlStore(db.sa_url(url))
    store.start()
    store.close()
    return db.sizes(url)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", default="1000,10000,100000")
    parser.add_argument("--case", default="steady,wave")
    parser.add_argument("--time-scale", type=float, default=1.0)
    parser.add_argument("--changes", type=int, default=CHANGES)
    parser.add_argument("--seed", type=int, default=35)
    args = parser.parse_args()
    configure_logging("WARNING")
    scale = args.time_scale
    print(
        f"time scale S={scale:g}: periods divided by S (window {WINDOW_S / scale:g} s,"
        f" quota windows {HUB_QUOTAS['api'][1] / scale:g} s); {WORKERS} workers;"
        f" {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.1f}"
    )
    runs = []
    for total in [int(x) for x in args.repos.split(",")]:
        for case in args.case.split(","):
            t0 = time.perf_counter()
            run = run_one(total, case, scale, args.changes, args.seed)
            report(run, scale, min(args.changes, total // 2))
            print(f"(run took {time.perf_counter() - t0:.0f} s)", flush=True)
            runs.append(run)
    growth(runs, scale)


if __name__ == "__main__":
    main()
