"""Four `hubwatch worker` processes on PostgreSQL, 200 repos, commits arriving, workers SIGKILLed.

Every upstream revision must end up recorded exactly once: one row per (repo, sha), and one
`revision_detected` line per (repo, sha) across every worker's log, killed ones included.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest
import sqlalchemy

from hubwatch.models import RepoRef, SourceKind
from hubwatch.store.sql import SqlStore
from tests.support.gitrepo import CommitSpec, add_commits, git, make_repo

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

UPSTREAMS = 20
REPOS_PER_UPSTREAM = 10
WORKERS = 4
STOP_S = 60.0
"""How long a worker may take to exit after SIGTERM."""
LOG_TAIL = 40
"""Lines of a misbehaving worker's log shown in the failure."""


class Fleet:
    """Worker processes, each with its own data dir (git mirrors) and log file."""

    def __init__(self, tmp: Path, env: dict[str, str]) -> None:
        self.tmp, self.env = tmp, env
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []
        self._files: list[IO[bytes]] = []

    def start(self) -> subprocess.Popen[bytes]:
        n = len(self.logs)
        log = self.tmp / f"worker-{n}.log"
        out = log.open("wb")
        env = {**self.env, "HUBWATCH_DATA_DIR": str(self.tmp / f"data-{n}")}
        proc = subprocess.Popen(
            [sys.executable, "-m", "hubwatch", "worker", "--id", f"w{n}"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=out,
        )
        self.procs.append(proc)
        self.logs.append(log)
        self._files.append(out)
        return proc

    def started(self, proc: subprocess.Popen[bytes]) -> bool:
        """Whether `proc` has its signal handlers (it logs daemon_started after them)."""
        return "daemon_started" in self.logs[self.procs.index(proc)].read_text(errors="replace")

    def alive(self) -> list[subprocess.Popen[bytes]]:
        return [p for p in self.procs if p.poll() is None]

    def lines(self) -> Iterator[dict[str, object]]:
        for log in self.logs:
            for raw in log.read_text(errors="replace").splitlines():
                if raw.startswith("{"):
                    yield json.loads(raw)

    def stop(
        self,
        procs: list[subprocess.Popen[bytes]],
        timeout_s: float = STOP_S,
        signals: tuple[signal.Signals, ...] = (signal.SIGTERM,),
    ) -> None:
        """Send `signals` to `procs`; each must exit 0 within `timeout_s` of them, else its
        log's tail is shown (a traceback, or the last thing a stuck worker did)."""
        for proc in procs:
            for signum in signals:
                proc.send_signal(signum)
        deadline = time.monotonic() + timeout_s
        failures = []
        for proc in procs:
            try:
                code: int | None = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                code = None
            if code != 0:
                failures.append(self._failure(proc, code, timeout_s, signals))
        assert not failures, "\n\n".join(failures)

    def _failure(
        self,
        proc: subprocess.Popen[bytes],
        code: int | None,
        timeout_s: float,
        signals: tuple[signal.Signals, ...],
    ) -> str:
        n = self.procs.index(proc)
        what = f"still running {timeout_s:g} s after" if code is None else f"exited {code} on"
        what += " " + ", ".join(s.name for s in signals)
        tail = self.logs[n].read_text(errors="replace").splitlines()[-LOG_TAIL:]
        return "\n".join([f"w{n} (pid {proc.pid}) {what}; {self.logs[n]} ends:", *tail])

    def close(self) -> None:
        for proc in self.alive():
            proc.kill()
            proc.wait(timeout=30)
        for out in self._files:
            out.close()


def _upstream_shas(path: Path) -> set[str]:
    return set(git(path, "rev-list", "main").split())


def _stored(pg_url: str) -> dict[str, list[str]]:
    engine = sqlalchemy.create_engine(pg_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sqlalchemy.text(
                    "SELECT repo.repo_id, revision.sha FROM revision "
                    "JOIN repo ON repo.id = revision.repo_pk"
                )
            ).all()
    finally:
        engine.dispose()
    stored: dict[str, list[str]] = {}
    for repo_id, sha in rows:
        stored.setdefault(repo_id, []).append(sha)
    return stored


def _env(pg_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "HUBWATCH_DATABASE_URL": pg_url,
        "HUBWATCH_POLL_INTERVAL_S": "1",
        "HUBWATCH_WORK_TICK_S": "0.2",
        "HUBWATCH_LEASE_S": "3",
        "HUBWATCH_ADVISORY_SERVICE": "off",
        "HUBWATCH_LOG_JSON": "true",
    }


def test_four_workers_killed_at_random_record_every_revision_once(
    tmp_path: Path, pg_url: str
) -> None:
    rng = random.Random(7)
    upstreams = [tmp_path / f"up-{u}" for u in range(UPSTREAMS)]
    for u, path in enumerate(upstreams):
        make_repo(path, [CommitSpec({"config.json": f'{{"u": {u}}}'.encode()})])
    repos = {
        f"org/m{u}-{k}": upstreams[u] for u in range(UPSTREAMS) for k in range(REPOS_PER_UPSTREAM)
    }
    store = SqlStore(pg_url)
    store.start()
    for repo_id, path in repos.items():
        store.add_repo(RepoRef(repo_id, SourceKind.GIT, str(path)))
    store.close()

    fleet = Fleet(tmp_path, _env(pg_url))
    try:
        for _ in range(WORKERS):
            fleet.start()
        kills = 0
        for step in range(16):  # ~16 s of churn: a commit a second, a kill every other second
            time.sleep(1.0)
            path = rng.choice(upstreams)
            spec = CommitSpec({"config.json": f'{{"step": {step}, "r": {rng.random()}}}'.encode()})
            add_commits(path, [spec])
            if step % 2 == 1:
                victim = rng.choice(fleet.alive())
                victim.send_signal(signal.SIGKILL)  # mid-poll, mid-transaction, mid-clone
                victim.wait(timeout=30)
                kills += 1
                fleet.start()
        expected = {repo_id: _upstream_shas(path) for repo_id, path in repos.items()}
        deadline = time.monotonic() + 180
        while True:
            stored = _stored(pg_url)
            if all(set(stored.get(r, [])) == shas for r, shas in expected.items()):
                break
            assert time.monotonic() < deadline, {
                r: (len(stored.get(r, [])), len(shas))
                for r, shas in expected.items()
                if set(stored.get(r, [])) != shas
            }
            time.sleep(1.0)
        # graceful stop of the survivors
        survivors = fleet.alive()
        # one started after the last kill may still be importing: SIGTERM before its handlers
        # are in place ends it as the default action does (-15), which is not what is tested
        deadline = time.monotonic() + 60
        while not all(fleet.started(proc) for proc in survivors):
            assert time.monotonic() < deadline, "a worker never started"
            time.sleep(0.2)
        fleet.stop(survivors)
    finally:
        fleet.close()

    assert kills == 8
    stored = _stored(pg_url)
    for repo_id, shas in expected.items():
        assert sorted(stored[repo_id]) == sorted(shas), repo_id  # no sha twice, none missing
    detected = Counter(
        (line.get("repo"), line.get("sha"))
        for line in fleet.lines()
        if line.get("event") == "revision_detected"
    )
    assert detected and max(detected.values()) == 1, detected.most_common(3)
    assert sum(len(s) for s in expected.values()) > len(repos)  # new commits did arrive


def test_a_worker_told_twice_to_stop_while_busy_exits_cleanly(tmp_path: Path, pg_url: str) -> None:
    """SIGTERM, then SIGINT at once (Ctrl-C after a stop), while its jobs run: it exits 0.

    The handler used to shut the scheduler down itself and wait there for the running jobs; the
    second signal, handled inside that wait, found the scheduler stopped already (exit 1). The
    same handler, run while the main thread was inside the thread pool's submit, waited forever
    on the pool's lock that thread held (the worker that never exited): only the race differs.
    """
    upstream = tmp_path / "up"
    make_repo(upstream, [CommitSpec({"config.json": b'{"u": 0}'})])
    store = SqlStore(pg_url)
    store.start()
    for k in range(40):
        store.add_repo(RepoRef(f"org/m{k}", SourceKind.GIT, str(upstream)))
    store.close()
    fleet = Fleet(tmp_path, _env(pg_url))
    try:
        proc = fleet.start()
        deadline = time.monotonic() + STOP_S
        while not any(line.get("event") == "revision_detected" for line in fleet.lines()):
            assert proc.poll() is None and time.monotonic() < deadline, "no poll ran"
            time.sleep(0.1)
        fleet.stop([proc], signals=(signal.SIGTERM, signal.SIGINT))
    finally:
        fleet.close()
    assert "daemon_stopped" in [line.get("event") for line in fleet.lines()]
