"""A Hub that accepts connections and never answers (or stalls, or trickles, the body): every
request is bounded by HUBWATCH_HTTP_TIMEOUT_S whatever huggingface_hub passes per call, and
`track` exits 5 (unreachable) after its bounded retries."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hubwatch.errors import EXIT_UNREACHABLE, SourceUnavailable
from hubwatch.models import CommitSha, RepoRef
from hubwatch.sources.hub import HubSource
from tests.support.blackhole import BlackHole, Mode, call_within

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
