"""How fast are the badge and history endpoints with 100k revisions stored?

Question: does serving a badge or a page of history stay cheap when a repo has a long history?
It stores 100,000 revisions of one repo (inserted directly through SQL, one change on every 10th,
a breaking one on every 100th), serves the app with uvicorn in a child process, and drives it from
this process with concurrent keep-alive clients. Baseline, measured in the same run against the
same server: a trivial constant endpoint (`/api/v1/ping`). Reported per endpoint: requests/s,
p50 and p99 latency, and requests/s as a ratio of the baseline's.

Run: python bench/api_load.py [--revisions 100000] [--requests 2000] [--clients 8] [--db URL]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx2
from sqlalchemy import insert, select

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hubwatch.models import RepoRef, Severity, SourceKind
from hubwatch.store.sql import SqlStore
from hubwatch.store.sql.tables import ChangeRow, RepoRow, RevisionRow

REPO = "bench/long-history"
SERVER = """
import sys, uvicorn
from hubwatch.api import create_app
from hubwatch.settings import Settings
from hubwatch.store.sql import SqlStore
store = SqlStore(sys.argv[1]); store.start()
uvicorn.run(create_app(store, Settings()), host="127.0.0.1", port=int(sys.argv[2]),
            log_level="warning", access_log=False)
"""


def fill(url: str, revisions: int) -> None:
    """`revisions` revisions of one repo, written in bulk (the tracker's path is not measured)."""
    store = SqlStore(url)
    store.start()
    store.add_repo(RepoRef(REPO, SourceKind.HUB))
    now = datetime.now(UTC)
    with store._session() as session:  # bench only: bulk SQL, not the Store interface
        repo_pk = session.execute(select(RepoRow.id).where(RepoRow.repo_id == REPO)).scalar()
        batch = 10_000
        for start in range(0, revisions, batch):
            rows = [
                {
                    "repo_pk": repo_pk,
                    "sha": f"{n:040x}",
                    "parents": [f"{n - 1:040x}"] if n else [],
                    "committed_at": now - timedelta(minutes=revisions - n),
                    "authors": ["bench"],
                    "title": f"revision {n}",
                    "message": "",
                    "changed": ["config.json"],
                    "reachable": True,
                    "card": None,
                    "recorded_at": now,
                }
                for n in range(start, min(start + batch, revisions))
            ]
            session.execute(insert(RevisionRow), rows)
        found = session.execute(
            select(RevisionRow.sha, RevisionRow.id).where(RevisionRow.repo_pk == repo_pk)
        )
        ids = {row[0]: row[1] for row in found.all()}
        changes = []
        for n in range(0, revisions, 10):
            severity = Severity.BREAKING if n % 100 == 0 else Severity.INFO
            changes.append(
                {
                    "revision_pk": ids[f"{n:040x}"],
                    "repo_pk": repo_pk,
                    "committed_at": now - timedelta(minutes=revisions - n),
                    "base_sha": f"{n - 1:040x}",
                    "position": 0,
                    "kind": "config.changed",
                    "severity": severity.value,
                    "rank": severity.rank,
                    "summary": f"change {n}",
                    "path": "config.json",
                    "before": None,
                    "after": None,
                    "detail": None,
                }
            )
        for start in range(0, len(changes), batch):
            session.execute(insert(ChangeRow), changes[start : start + batch])
        session.commit()
    if url.startswith("postgresql"):
        # what autovacuum does to a table this size in its first minute: planner statistics
        # and the visibility map that index-only scans rely on
        with store._engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM ANALYZE")
    store.close()


def load(base: str, path: str, requests: int, clients: int) -> tuple[float, float, float]:
    """requests/s, p50 ms, p99 ms of `requests` GETs from `clients` concurrent clients."""
    latencies: list[float] = []
    lock = threading.Lock()
    per_client = requests // clients

    def client() -> None:
        mine = []
        with httpx2.Client(base_url=base, timeout=30) as http:
            for _ in range(per_client):
                started = time.perf_counter()
                response = http.get(path)
                mine.append(time.perf_counter() - started)
                assert response.status_code == 200, (path, response.status_code)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return len(latencies) / elapsed, statistics.median(latencies) * 1000, p99 * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--revisions", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--db", help="database URL (default: a fresh SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.db or f"sqlite:///{Path(tmp) / 'bench.db'}"
        started = time.perf_counter()
        fill(url, args.revisions)
        print(
            f"stored {args.revisions:,} revisions in {time.perf_counter() - started:.1f}s "
            f"({url.split(':')[0]})"
        )
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = subprocess.Popen([sys.executable, "-c", SERVER, url, str(port)])
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    httpx2.get(f"{base}/api/v1/ping", timeout=1)
                    break
                except httpx2.HTTPError:
                    assert time.monotonic() < deadline, "server did not start"
                    time.sleep(0.1)
            middle = args.revisions // 2
            cases = [
                ("baseline: constant /api/v1/ping", "/api/v1/ping"),
                ("badge: status", f"/api/v1/badges/{REPO}/status"),
                ("badge: latest revision", f"/api/v1/badges/{REPO}/latest"),
                ("badge: breaking (30 days)", f"/api/v1/badges/{REPO}/breaking"),
                (
                    "badge: changes since pinned",
                    f"/api/v1/badges/{REPO}/changes?pinned={middle:040x}",
                ),
                ("history: newest page (50)", f"/api/v1/repos/{REPO}/revisions"),
                ("history: page in the middle", f"/api/v1/repos/{REPO}/revisions?before={middle}"),
            ]
            for _, path in cases:  # warm up each endpoint
                load(base, path, args.clients * 5, args.clients)
            results = [
                (name, *load(base, path, args.requests, args.clients)) for name, path in cases
            ]
        finally:
            server.terminate()
            server.wait(timeout=30)
    baseline = results[0][1]
    print(
        f"{args.revisions:,} revisions, {args.requests} requests per endpoint, "
        f"{args.clients} clients"
    )
    print(f"{'endpoint':<36}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'req/s / base':>14}")
    for name, rps, p50, p99 in results:
        print(f"{name:<36}{rps:>9.0f}{p50:>9.1f}{p99:>9.1f}{rps / baseline:>14.2f}")


if __name__ == "__main__":
    main()
