"""The Worker: graceful stop releases the rest of a repo, metrics count polls, one SQLite worker."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2
from prometheus_client import REGISTRY

from hubwatch.models import CommitInfo, RepoRef, SourceKind
from hubwatch.sources.git import GitSource
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.poll import Tracker
from hubwatch.worker.discovery import Discovery
from hubwatch.worker.work import Worker
from tests.support.gitrepo import CommitSpec, make_repo


def _worker(store: SqlStore, tmp_path: Path, commits: int) -> Worker:
    specs = [CommitSpec({"config.json": f'{{"step": {i}}}'.encode()}) for i in range(commits)]
    make_repo(tmp_path / "up", specs)
    store.add_repo(RepoRef("org/git", SourceKind.GIT, str(tmp_path / "up")))
    tracker = Tracker(store, {SourceKind.GIT: GitSource(tmp_path / "mirrors")})
    discovery = Discovery(store, tracker.sources, interval_s=60)
    return Worker(store, tracker, discovery, interval_s=60, owner="w1")


def test_stopping_mid_backfill_keeps_what_is_stored_and_releases_the_rest(
    store: SqlStore, tmp_path: Path
) -> None:
    worker = _worker(store, tmp_path, commits=4)
    stored: list[str] = []

    class StopAfterTwo(Tracker):
        def poll(self, repo_id, progress=None, hint=None):  # type: ignore[no-untyped-def]
            def on_revision(done: int, total: int, commit: CommitInfo) -> None:
                stored.append(commit.sha)
                if done == 2:
                    worker.stopping.set()  # SIGTERM arrives while the third is being read
                assert progress is not None
                progress(done, total, commit)

            return super().poll(repo_id, on_revision, hint)

    worker._tracker = StopAfterTwo(store, worker._tracker.sources)
    assert worker.tick().polls == []  # released, not finished
    assert len(store.history("org/git")) == 2
    # another worker (or this one, restarted) takes the repo up where it stopped
    worker.stopping.clear()
    again = Worker(store, Tracker(store, worker._tracker.sources), worker._discovery, interval_s=60)
    [result] = again.drain()
    assert len(result.new) == 2 and len(store.history("org/git")) == 4


def test_polls_and_revisions_are_counted_in_the_metrics(store: SqlStore, tmp_path: Path) -> None:
    before = REGISTRY.get_sample_value("hubwatch_revisions_total") or 0.0
    polls_before = REGISTRY.get_sample_value("hubwatch_polls_total", {"outcome": "new"}) or 0.0
    worker = _worker(store, tmp_path, commits=3)
    [result] = worker.tick().polls
    assert len(result.new) == 3
    assert REGISTRY.get_sample_value("hubwatch_revisions_total") == before + 3
    assert REGISTRY.get_sample_value("hubwatch_polls_total", {"outcome": "new"}) == polls_before + 1


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_second_worker_on_sqlite_exits_with_a_clear_error(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
        "HUBWATCH_ADVISORY_SERVICE": "off",
        "HUBWATCH_LOG_JSON": "true",
    }
    env.pop("HUBWATCH_DATABASE_URL", None)
    command = [sys.executable, "-m", "hubwatch", "worker"]
    port = _free_port()
    first = subprocess.Popen(
        [*command, "--metrics-port", str(port)], env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        assert first.stderr is not None
        deadline = time.monotonic() + 60
        while "daemon_started" not in first.stderr.readline():
            assert time.monotonic() < deadline and first.poll() is None
        metrics = httpx2.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
        assert "hubwatch_polls_total" in metrics and "hubwatch_detection_lag_seconds" in metrics
        second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
        assert second.returncode == 1
        assert "SQLite serves one worker process" in second.stderr
    finally:
        first.terminate()
        first.wait(timeout=60)
        assert first.stderr is not None
        first.stderr.close()
    assert first.returncode == 0  # SIGTERM is a graceful stop


def test_a_worker_killed_mid_backfill_resumes_at_once_when_restarted(tmp_path: Path) -> None:
    # the lease of the killed worker lasts 300 s (the default): only its restart, under the
    # same worker id, may take the repo back before then
    specs = [CommitSpec({"config.json": f'{{"step": {i}}}'.encode()}) for i in range(40)]
    make_repo(tmp_path / "up", specs)
    data = tmp_path / "data"
    data.mkdir()
    url = f"sqlite:///{data / 'hubwatch.db'}"
    store = SqlStore(url)
    store.start()
    store.add_repo(RepoRef("org/git", SourceKind.GIT, str(tmp_path / "up")))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HUBWATCH_", "HF_"))}
    env |= {"HUBWATCH_DATA_DIR": str(data), "HUBWATCH_ADVISORY_SERVICE": "off"}
    command = [sys.executable, "-m", "hubwatch", "worker"]
    try:
        first = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while len(store.history("org/git")) < 3:  # mid-backfill, holding the repo's lease
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.05)
        first.kill()
        first.wait(timeout=30)
        assert len(store.history("org/git")) < 40
        second = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 120  # well within the dead worker's lease
            while len(store.history("org/git")) < 40:
                assert time.monotonic() < deadline and second.poll() is None
                time.sleep(0.1)
        finally:
            second.terminate()
            _, log = second.communicate(timeout=60)
        assert "leases_reclaimed" in log
    finally:
        store.close()
