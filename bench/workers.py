"""Revisions recorded per second by 1, 2 and 4 `hubwatch worker` processes sharing PostgreSQL.

Question: do workers share the work, and how far does adding them help? The same backlog each
run: REPOS git repos (local paths, COMMITS commits each) registered but never polled, in a fresh
PostgreSQL schema. W worker processes start and, once every one is up, all repos are woken at
once (as Hub webhooks would); the clock runs from then until every revision is stored. The
baseline is one worker, measured in the same run.

Run: HUBWATCH_TEST_DATABASE_URL=postgresql+psycopg://postgres@127.0.0.1:5432/test \\
     python bench/workers.py [REPOS] [COMMITS]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import sqlalchemy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support

from hubwatch.models import RepoRef, SourceKind
from hubwatch.store.sql import SqlStore
from tests.support.gitrepo import CommitSpec, make_repo


def _count(url: str) -> int:
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(sqlalchemy.text("SELECT count(*) FROM revision")).scalar_one())
    finally:
        engine.dispose()


def run(base: str, root: Path, upstreams: list[Path], repos: int, workers: int) -> float:
    """Seconds W workers take to record the whole backlog; in a schema of its own."""
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    plain = base.replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    url = f"{base}{'&' if '?' in base else '?'}options=-csearch_path%3D{schema}"
    try:
        store = SqlStore(url)
        store.start()
        # discovery stays out of it (not due for an hour): the wake below is the only work
        store.claim_job("discovery", "bench", datetime.now(UTC), 0)
        store.finish_job("discovery", "bench", datetime.now(UTC) + timedelta(hours=1))
        for n in range(repos):
            store.add_repo(
                RepoRef(f"bench/m{n}", SourceKind.GIT, str(upstreams[n % len(upstreams)]))
            )
        store.close()
        expected = repos * int(
            subprocess.run(
                ["git", "-C", str(upstreams[0]), "rev-list", "--count", "main"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        env = {
            **os.environ,
            "HUBWATCH_DATABASE_URL": url,
            "HUBWATCH_POLL_INTERVAL_S": "3600",
            "HUBWATCH_WORK_TICK_S": "0.2",
            "HUBWATCH_ADVISORY_SERVICE": "off",
            "HUBWATCH_LOG_JSON": "true",
        }
        logs = [root / f"{schema}-{i}.log" for i in range(workers)]
        procs = []
        for i, log in enumerate(logs):
            with log.open("wb") as out:
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "hubwatch", "worker", "--id", f"w{i}"],
                        env={**env, "HUBWATCH_DATA_DIR": str(root / f"{schema}-{i}")},
                        stderr=out,
                    )
                )
        # Wake everything once all workers are up, so start-up time is not measured.
        while not all('"daemon_started"' in log.read_text() for log in logs):
            time.sleep(0.1)
        store = SqlStore(url)
        store.start()
        store.wake([f"bench/m{n}" for n in range(repos)], datetime.now(UTC))
        store.close()
        start = time.perf_counter()
        try:
            while _count(url) < expected:
                time.sleep(0.2)
            return time.perf_counter() - start
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(timeout=60)
    finally:
        with psycopg.connect(plain, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def main(repos: int, commits: int) -> None:
    base = os.environ.get("HUBWATCH_TEST_DATABASE_URL")
    if not base:
        sys.exit("set HUBWATCH_TEST_DATABASE_URL=postgresql+psycopg://user@host/db")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        upstreams = []
        for u in range(10):
            path = root / f"up-{u}"
            specs = [
                CommitSpec(
                    {
                        "config.json": f'{{"model_type": "llama", "u": {u}, "step": {i}}}'.encode(),
                        "generation_config.json": f'{{"eos_token_id": {i}}}'.encode(),
                        "README.md": f"---\nlicense: apache-2.0\n---\n# step {i}\n".encode(),
                    }
                )
                for i in range(commits)
            ]
            make_repo(path, specs)
            upstreams.append(path)
        total = repos * commits
        rows = []
        for workers in (1, 2, 4):
            seconds = run(base, root, upstreams, repos, workers)
            rows.append((workers, seconds, total / seconds))
            print(f"  {workers} worker(s): {seconds:.1f} s", file=sys.stderr)
    print(
        f"{repos} git repos x {commits} commits = {total} revisions to record; "
        f"{os.cpu_count()} CPUs; PostgreSQL on 127.0.0.1"
    )
    print(f"{'workers':>7} {'seconds':>8} {'revisions/s':>12} {'vs 1 worker':>12}")
    for workers, seconds, rate in rows:
        print(f"{workers:>7} {seconds:>8.1f} {rate:>12.1f} {rate / rows[0][2]:>12.2f}")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    main(*(args + [100, 10][len(args) :]))
