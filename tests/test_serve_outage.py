"""A PostgreSQL restart under load: `serve` answers 503 with Retry-After, logs the outage once, and
no secret reaches its log."""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx2
import pytest

from hubwatch.store.outage import RETRY_AFTER_S
from tests.support.gitrepo import CommitSpec, make_repo
from tests.support.hubsim import HubSimulator
from tests.support.pgcluster import PostgresCluster, server_binaries
from tests.support.require import REQUIRE_POSTGRES, require
from tests.test_serve import free_port

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
REPO_ID = "org/model"
# Secrets as an operator sets them, each unique to this run: none may appear in the log.
API_TOKEN = f"api-{secrets.token_hex(12)}"
WEBHOOK_SECRET = f"hook-{secrets.token_hex(12)}"
DB_PASSWORD = f"pw-{secrets.token_hex(12)}"
HF_TOKEN = f"hf_{secrets.token_hex(17)}"
GIT_TOKEN = f"git-{secrets.token_hex(12)}"
READS = (
    "/api/v1/repos",
    f"/api/v1/repos/{REPO_ID}/revisions",
    f"/api/v1/repos/{REPO_ID}/changes",
    f"/api/v1/badges/{REPO_ID}/breaking",
    "/feeds/all.atom",
    f"/repos/{REPO_ID}",
)


@pytest.fixture
def cluster() -> Iterator[PostgresCluster]:
    """A cluster of this test's own: restarting the session's would break the other tests."""
    bin_dir = server_binaries()
    if bin_dir is None:
        require(REQUIRE_POSTGRES, "restarting PostgreSQL needs initdb and pg_ctl")
    assert bin_dir is not None
    cluster = PostgresCluster.start(bin_dir)
    try:
        yield cluster
    finally:
        cluster.stop()


class Load:
    """Clients sending reads and writes to `serve` until stopped, every answer counted."""

    def __init__(self, base: str, clients: int = 3) -> None:
        self.base = base
        self.answers: list[tuple[str, int, str | None, bytes]] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._client) for _ in range(clients)]
        for thread in self._threads:
            thread.start()

    def _client(self) -> None:
        # the token on every request, the webhook secret on the Hub's hook: both in headers
        headers = {"Authorization": f"Bearer {API_TOKEN}", "X-Webhook-Secret": WEBHOOK_SECRET}
        hook = {"event": {"action": "update", "scope": "repo.content"}}
        hook["repo"] = {"type": "model", "name": REPO_ID, "headSha": "a" * 40}
        with httpx2.Client(base_url=self.base, headers=headers, timeout=20) as http:
            while not self._stop.is_set():
                for path in (*READS, "POST /hooks/hub", "POST /api/v1/repos"):
                    if path.startswith("POST /hooks"):
                        response = http.post(path[5:], json=hook)
                    elif path.startswith("POST "):
                        response = http.post(path[5:], json={"repo_id": REPO_ID})
                    else:
                        response = http.get(path)
                    retry = response.headers.get("retry-after")
                    self.answers.append((path, response.status_code, retry, response.content))

    def wait(self, what: str, check: Callable[[], bool], timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.05)

    def count(self, status: int) -> int:
        return sum(1 for _, code, _, _ in self.answers if code == status)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)


def refused(answer: tuple[str, int, str | None, bytes]) -> bool:
    """A 503, or the badge that stands for one (a badge never errors)."""
    path, status, _, body = answer
    return status == 503 or ("/badges/" in path and json.loads(body)["message"] == "unavailable")


def test_a_postgres_restart_answers_503_logs_once_and_leaks_no_secret(
    cluster: PostgresCluster, tmp_path: Path
) -> None:
    upstream = tmp_path / "up"
    make_repo(upstream, [CommitSpec({"config.json": b'{"model_type": "qwen3"}'})])
    port = free_port()
    url = cluster.url.replace("postgres@", f"postgres:{DB_PASSWORD}@")  # trust auth ignores it
    log_path = tmp_path / "serve.log"
    with HubSimulator() as hub:
        hub.add_repo(REPO_ID, upstream)
        env = {
            **os.environ,
            "HF_ENDPOINT": hub.url,
            "HF_TOKEN": HF_TOKEN,
            "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
            "HUBWATCH_DATABASE_URL": url,
            "HUBWATCH_API_TOKEN": API_TOKEN,
            "HUBWATCH_HUB_WEBHOOK_SECRET": WEBHOOK_SECRET,
            "HUBWATCH_GIT_CREDENTIALS": json.dumps({"git.example.org": f"hw:{GIT_TOKEN}"}),
            "HUBWATCH_API_PORT": str(port),
            "HUBWATCH_ADVISORY_SERVICE": "off",
            "HUBWATCH_POLL_INTERVAL_S": "0.5",  # the worker polls through the outage too
            "HUBWATCH_WORK_TICK_S": "0.2",
            "HUBWATCH_WEBHOOK_INTERVAL_S": "0.2",
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        }
        subprocess.run(["hubwatch", "track", REPO_ID], env=env, check=True, capture_output=True)
        with log_path.open("w") as log:  # the console renderer: the default, and the one that
            serve = subprocess.Popen(  # printed rich tracebacks with every frame's locals
                ["hubwatch", "serve"], env=env, stderr=log, start_new_session=True
            )
        try:
            load = _restart_under_load(cluster, f"http://127.0.0.1:{port}", serve, log_path)
        finally:
            os.killpg(serve.pid, signal.SIGTERM)
            serve.wait(timeout=60)
    text = log_path.read_text()
    statuses = Counter(status for _, status, _, _ in load.answers)
    assert statuses[503] > 0 and set(statuses) <= {200, 202, 503}, statuses  # never a 500
    assert {retry for _, status, retry, _ in load.answers if status == 503} == {str(RETRY_AFTER_S)}
    leaked = [s for s in (API_TOKEN, WEBHOOK_SECRET, DB_PASSWORD, HF_TOKEN, GIT_TOKEN) if s in text]
    assert not leaked
    assert "Traceback" not in text and "╭" not in text  # no traceback, no rich box of locals
    # one line when the outage started, one when it ended, with every refused request counted
    assert len(re.findall(r"\] database_unavailable ", text)) == 1, text[-3000:]
    [ended] = re.findall(r"\] database_available .*", text)
    assert f"refused={sum(1 for a in load.answers if refused(a))}" in ended.split()


def _restart_under_load(
    cluster: PostgresCluster, base: str, serve: subprocess.Popen[bytes], log: Path
) -> Load:
    """Serve's answers while PostgreSQL is stopped and started again under it, until serve
    logs that the outage is over."""
    deadline = time.monotonic() + 60
    while True:
        assert serve.poll() is None and time.monotonic() < deadline, "serve did not start"
        try:
            if httpx2.get(f"{base}/healthz", timeout=5).status_code == 200:
                break
        except httpx2.TransportError:
            time.sleep(0.1)
    load = Load(base)
    try:
        load.wait("answers before the restart", lambda: load.count(200) >= 20)
        cluster.stop_server()
        load.wait("refusals while it is down", lambda: load.count(503) >= 10)
        cluster.start_server()
        served = load.count(200)
        load.wait("answers after it is back", lambda: load.count(200) >= served + 40)
        load.wait("the end of the outage logged", lambda: "database_available" in log.read_text())
    finally:
        load.stop()
    return load
