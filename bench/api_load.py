"""How fast are the badge and history endpoints with 100k revisions stored?

Question: does serving a badge or a page of history stay cheap when a repo has a long history?
It stores 100,000 revisions of one repo (inserted directly through SQL, one change on every 10th,
a breaking one on every 100th), serves the app with uvicorn in a child process, and drives it from
this process with concurrent keep-alive clients. Baseline, measured in the same run against the
same server: a trivial constant endpoint (`/api/v1/ping`). Reported per endpoint: requests/s,
p50 and p99 latency, and requests/s as a ratio of the baseline's.

The endpoints take turns in interleaved rounds, so that load from other processes falls on the
baseline and the endpoints alike. On PostgreSQL the revisions are written with COPY.

Run: python bench/api_load.py [--revisions 100000] [--requests 2000] [--clients 8] [--rounds 5]
     [--db URL]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx2
from sqlalchemy import Connection, func, insert, select, update

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hubwatch.models import RepoRef, Severity, SourceKind
from hubwatch.store.sql import SqlStore
from hubwatch.store.sql.tables import ChangeRow, RepoRow, RevisionRow
from hubwatch.store.sql.tally import BLOCK

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
    """`revisions` revisions of one repo, written in bulk (the tracker's path is not measured):
    COPY on PostgreSQL, executemany of Core inserts on SQLite."""
    store = SqlStore(url)
    store.start()
    store.add_repo(RepoRef(REPO, SourceKind.HUB))
    now = datetime.now(UTC)
    with store._engine.begin() as conn:  # bench only: bulk SQL, not the Store interface
        repo_pk = conn.execute(select(RepoRow.id).where(RepoRow.repo_id == REPO)).scalar_one()
        first = (conn.execute(select(func.max(RevisionRow.id))).scalar() or 0) + 1
        # ids given here (the table is fresh): revision n is first + n, no read-back needed
        revision_rows = (
            (
                first + n,
                repo_pk,
                f"{n:040x}",
                [f"{n - 1:040x}"] if n else [],
                now - timedelta(minutes=revisions - n),
                ["bench"],
                f"revision {n}",
                "",
                ["config.json"],
                True,
                None,
                now - timedelta(minutes=revisions - n),  # recorded as they came, a minute apart
            )
            for n in range(revisions)
        )
        change_rows = (
            (
                first + n,
                repo_pk,
                now - timedelta(minutes=revisions - n),
                f"{n - 1:040x}",
                0,
                "config.changed",
                severity.value,
                severity.rank,
                f"change {n}",
                "config.json",
            )
            for n in range(0, revisions, 10)
            for severity in [Severity.BREAKING if n % 100 == 0 else Severity.INFO]
        )
        if url.startswith("postgresql"):
            _copy(conn, "revision", REVISION_FIELDS, revision_rows, json_at=(3, 5, 8, 10))
            _copy(conn, "change", CHANGE_FIELDS, change_rows)
            conn.exec_driver_sql(  # ids were given: the sequence moves past them
                "SELECT setval(pg_get_serial_sequence('revision', 'id'),"
                " (SELECT max(id) FROM revision))"
            )
        else:
            for table, fields, rows in (
                (RevisionRow, REVISION_FIELDS, revision_rows),
                (ChangeRow, CHANGE_FIELDS, change_rows),
            ):
                while batch := list(itertools.islice(rows, 10_000)):
                    conn.execute(
                        insert(table), [dict(zip(fields, row, strict=True)) for row in batch]
                    )
        conn.execute(  # what add_revision keeps on each write
            update(RepoRow).where(RepoRow.id == repo_pk).values(revision_count=revisions)
        )
        conn.exec_driver_sql(
            "INSERT INTO change_tally (repo_pk, block, total, breaking)"
            f" SELECT repo_pk, revision_pk / {BLOCK}, count(*),"
            " count(CASE WHEN severity = 'breaking' THEN 1 END)"
            f" FROM change WHERE repo_pk = {repo_pk} GROUP BY repo_pk, revision_pk / {BLOCK}"
        )
    if url.startswith("postgresql"):
        # what autovacuum does to a table this size in its first minute: planner statistics
        # and the visibility map that index-only scans rely on
        with store._engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM ANALYZE")
    store.close()


REVISION_FIELDS = (
    "id",
    "repo_pk",
    "sha",
    "parents",
    "committed_at",
    "authors",
    "title",
    "message",
    "changed",
    "reachable",
    "card",
    "recorded_at",
)
CHANGE_FIELDS = (
    "revision_pk",
    "repo_pk",
    "observed_at",
    "base_sha",
    "position",
    "kind",
    "severity",
    "rank",
    "summary",
    "path",
)


def _copy(
    conn: Connection,
    table: str,
    fields: tuple[str, ...],
    rows: Iterable[tuple[object, ...]],
    json_at: tuple[int, ...] = (),
) -> None:
    """COPY `rows` into `table` through the psycopg connection under SQLAlchemy's."""
    cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    with cursor.copy(f"COPY {table} ({', '.join(fields)}) FROM STDIN") as copy:
        for row in rows:
            if json_at:
                row = tuple(
                    json.dumps(v) if i in json_at and v is not None else v
                    for i, v in enumerate(row)
                )
            copy.write_row(row)


def load(base: str, path: str, requests: int, clients: int) -> tuple[float, list[float]]:
    """Seconds taken by `requests` GETs from `clients` concurrent clients, and each latency."""
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
    return time.perf_counter() - started, latencies


def measure(
    base: str, cases: list[tuple[str, str]], requests: int, clients: int, rounds: int
) -> list[tuple[str, float, float, float]]:
    """requests/s, p50 ms and p99 ms per case. The cases take turns, `rounds` slices each,
    so that load from other processes, which drifts over a run, falls on all of them alike."""
    elapsed = dict.fromkeys((path for _, path in cases), 0.0)
    latencies: dict[str, list[float]] = {path: [] for _, path in cases}
    for _ in range(rounds):
        for _, path in cases:
            seconds, taken = load(base, path, requests // rounds, clients)
            elapsed[path] += seconds
            latencies[path] += taken
    results = []
    for name, path in cases:
        times = sorted(latencies[path])
        p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
        rps = len(times) / elapsed[path]
        results.append((name, rps, statistics.median(times) * 1000, p99 * 1000))
    return results


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--revisions", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5, help="interleaved slices per endpoint")
    parser.add_argument("--db", help="database URL (default: a fresh SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.db or f"sqlite:///{Path(tmp) / 'bench.db'}"
        print(f"load average before: {_load()}")
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
                ("reference: async /healthz", "/healthz"),
            ]
            for _, path in cases:  # warm up each endpoint
                load(base, path, args.clients * 5, args.clients)
            results = measure(base, cases, args.requests, args.clients, args.rounds)
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(f"load average after: {_load()}")
    baseline = results[0][1]
    print(
        f"{args.revisions:,} revisions, {args.requests} requests per endpoint, "
        f"{args.clients} clients, in {args.rounds} interleaved rounds"
    )
    print(f"{'endpoint':<36}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'req/s / base':>14}")
    for name, rps, p50, p99 in results:
        print(f"{name:<36}{rps:>9.0f}{p50:>9.1f}{p99:>9.1f}{rps / baseline:>14.2f}")


if __name__ == "__main__":
    main()
