"""A Hub that accepts connections and never answers (or stalls, or trickles, the body): every
request is bounded by HUBWATCH_HTTP_TIMEOUT_S whatever huggingface_hub passes per call, `track`
exits 5 (unreachable) after its bounded retries, and `serve` answers and polls a git repo while
its poll of the Hub is stuck (and abandoned by the watchdog)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from hubwatch.errors import EXIT_UNREACHABLE, SourceUnavailable
from hubwatch.models import CommitSha, RepoRef
from hubwatch.sources.hub import HubSource
from hubwatch.store.sql import SqlStore
from tests.support.blackhole import BlackHole, Mode, call_within
from tests.support.gitrepo import CommitSpec, add_commits, make_repo

TIMEOUT_S = 1.0
BOUND_S = 3 * TIMEOUT_S + 2  # generous: a call ends about one timeout after it starts
REPO = RepoRef("org/model")
SHA = CommitSha("a" * 40)

CALLS: dict[str, Callable[[HubSource], object]] = {
    "status": lambda hub: hub.status(REPO),  # HfApi.model_info, which passes timeout=None
    "resolve": lambda hub: hub.resolve(REPO, "v1"),
    "list_commits": lambda hub: hub.list_commits(REPO),
    "list_files": lambda hub: hub.list_files(REPO, SHA),
    "read_file": lambda hub: hub.read_file(REPO, SHA, "config.json", 1 << 20),
    "read_range": lambda hub: hub.read_range(REPO, SHA, "model.safetensors", 0, 8),
    "head": lambda hub: hub.head(REPO),
    "recently_modified": lambda hub: list(hub.recently_modified(10)),
    "derivatives": lambda hub: hub.derivatives("org/base"),
}


@pytest.fixture
def hole(request: pytest.FixtureRequest) -> Iterator[BlackHole]:
    mode: Mode = getattr(request, "param", "silent")
    with BlackHole(mode) as server:
        yield server


def _bounded_failure(hole: BlackHole, call: Callable[[HubSource], object]) -> float:
    source = HubSource(hole.url, timeout_s=TIMEOUT_S)
    try:
        elapsed, error, _ = call_within(30, lambda: call(source))
    finally:
        source.close()
    assert isinstance(error, SourceUnavailable), repr(error)
    assert hole.accepted >= 1  # it did reach the server
    return elapsed


@pytest.mark.parametrize("name", CALLS)
def test_every_hub_call_gives_up_on_a_silent_hub_after_the_timeout(
    hole: BlackHole, name: str
) -> None:
    assert _bounded_failure(hole, CALLS[name]) < BOUND_S


@pytest.mark.parametrize("hole", ["stall"], indirect=True)
@pytest.mark.parametrize("name", ["status", "list_commits", "list_files", "read_file"])
def test_a_body_that_stalls_after_the_headers_is_given_up(hole: BlackHole, name: str) -> None:
    assert _bounded_failure(hole, CALLS[name]) < BOUND_S


@pytest.mark.parametrize("hole", ["trickle"], indirect=True)
def test_a_body_trickled_a_byte_at_a_time_is_given_up(hole: BlackHole) -> None:
    # each byte comes well within the read timeout: only the pace of the whole body tells
    hole.trickle_s = TIMEOUT_S / 4
    assert _bounded_failure(hole, CALLS["read_file"]) < BOUND_S + TIMEOUT_S


def test_track_exits_5_on_a_black_holed_hub_after_bounded_retries(
    hole: BlackHole, tmp_path: Path
) -> None:
    retries = 2
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HUBWATCH_", "HF_"))}
    env |= {
        "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
        "HUBWATCH_HF_ENDPOINT": hole.url,
        "HUBWATCH_HTTP_TIMEOUT_S": str(TIMEOUT_S),
        "HUBWATCH_RETRIES": str(retries),
        "HUBWATCH_RETRY_MAX_WAIT_S": "0.5",
        "HUBWATCH_ADVISORY_SERVICE": "off",
    }
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "hubwatch", "track", "org/model"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    elapsed = time.monotonic() - start
    assert done.returncode == EXIT_UNREACHABLE, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("error: ")
    assert "cannot reach the Hub" in done.stderr
    # one request per try, each given up after the timeout: no retries inside huggingface_hub
    assert hole.accepted == retries + 1
    # the tries' timeouts, the waits between them (at most 0.5 s each) and the start-up
    assert elapsed < (retries + 1) * TIMEOUT_S + retries * 0.5 + 30


def test_serve_answers_and_polls_a_git_repo_while_the_hub_is_black_holed(
    hole: BlackHole, tmp_path: Path
) -> None:
    upstream = tmp_path / "up"
    make_repo(upstream, [CommitSpec({"config.json": b'{"n": 1}'})])
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HUBWATCH_", "HF_"))}
    env |= {
        "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
        "HUBWATCH_HF_ENDPOINT": hole.url,
        "HUBWATCH_HTTP_TIMEOUT_S": "2",
        "HUBWATCH_RETRY_MAX_WAIT_S": "1",  # with 5 retries, a poll of the Hub takes ~15 s
        "HUBWATCH_POLL_TIMEOUT_S": "3",  # the watchdog lets it go before
        "HUBWATCH_POLL_INTERVAL_S": "1",
        "HUBWATCH_WORK_TICK_S": "0.2",
        "HUBWATCH_API_PORT": str(port),
        "HUBWATCH_ADVISORY_SERVICE": "off",
        "HUBWATCH_LOG_JSON": "true",
    }
    hubwatch = [sys.executable, "-m", "hubwatch"]
    track = [*hubwatch, "track", "org/git", "--source", "git", "--url", str(upstream)]
    subprocess.run(track, env=env, check=True, capture_output=True, timeout=120)
    store = SqlStore(f"sqlite:///{tmp_path / 'data' / 'hubwatch.db'}")
    store.add_repo(RepoRef("org/stuck"))  # a Hub repo, never polled yet: woken at once
    store.close()
    serve = subprocess.Popen(
        [*hubwatch, "serve"], env=env, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    lines: list[str] = []
    assert serve.stderr is not None
    reader = threading.Thread(target=lambda: lines.extend(serve.stderr or ()), daemon=True)
    reader.start()
    api = httpx2.Client(base_url=f"http://127.0.0.1:{port}", timeout=10)
    try:
        wait_for(lambda: _answers(api), "the API", lines)
        add_commits(upstream, [CommitSpec({"config.json": b'{"n": 2}'})])
        wait_for(lambda: hole.accepted > 0, "a request to the black-holed Hub", lines)
        # polled while the Hub holds its requests, the API answering all along
        wait_for(lambda: _repo(api, "org/git")["revisions"] == 2, "the git revision", lines)
        wait_for(
            lambda: "abandoned" in (_repo(api, "org/stuck")["last_error"] or ""),
            "the stuck poll abandoned",
            lines,
        )
        assert api.get("/healthz").status_code == 200
    finally:
        api.close()
        os.killpg(serve.pid, signal.SIGTERM)
        serve.wait(timeout=60)
        reader.join(timeout=5)
        serve.stderr.close()
    assert serve.returncode == 0, "".join(lines)[-3000:]


def _answers(api: httpx2.Client) -> bool:
    try:
        return api.get("/healthz").status_code == 200
    except httpx2.TransportError:
        return False


def _repo(api: httpx2.Client, repo_id: str) -> dict[str, Any]:
    answer = api.get(f"/api/v1/repos/{repo_id}")
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def wait_for(check: Callable[[], bool], what: str, lines: list[str], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, (
            f"timed out waiting for {what}: {''.join(lines)[-3000:]}"
        )
        time.sleep(0.1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
