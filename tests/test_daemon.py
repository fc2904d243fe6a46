"""The README's run command on the Hub simulator: track, then `hubwatch serve` until SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx2
import pytest

from hubwatch.store.sql import SqlStore
from tests.support.gitrepo import CommitSpec, add_commits, make_repo
from tests.support.hubsim import HubSimulator
from tests.test_docs import README, block_after

pytestmark = pytest.mark.slow


def _wait_for(lines: list[dict[str, object]], event: str, count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while sum(1 for line in lines if line.get("event") == event) < count:
        assert time.monotonic() < deadline, f"no {count} x {event} in {lines}"
        time.sleep(0.05)


def test_readme_run_command_tracks_then_polls_until_sigterm(tmp_path: Path) -> None:
    command = block_after("run-command").strip()
    assert " && pip install . && " in command
    after_install = command.split(" && pip install . && ", 1)[1]  # already installed here
    repo_id = after_install.split("hubwatch track ", 1)[1].split()[0]
    assert repo_id in README

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    upstream = tmp_path / "up"
    make_repo(upstream, [CommitSpec({"config.json": b'{"model_type": "qwen3"}'})])
    with HubSimulator() as hub:
        hub.add_repo(repo_id, upstream)
        env = {
            **os.environ,
            "HF_ENDPOINT": hub.url,
            "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
            "HUBWATCH_POLL_INTERVAL_S": "0.5",
            "HUBWATCH_LOG_JSON": "true",
            "HUBWATCH_API_PORT": str(port),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        }
        env.pop("HF_TOKEN", None)
        env.pop("HUBWATCH_DATABASE_URL", None)
        proc = subprocess.Popen(
            ["bash", "-c", after_install],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        lines: list[dict[str, object]] = []

        def read() -> None:
            assert proc.stderr is not None
            for raw in proc.stderr:
                if raw.startswith("{"):
                    lines.append(json.loads(raw))  # noqa: PERF401 - seen as they come

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            _wait_for(lines, "poll_cycle_finished", 1, timeout=60)
            add_commits(upstream, [CommitSpec({"config.json": b'{"model_type": "qwen3", "x": 1}'})])
            hub.touch(repo_id, datetime.now(UTC))  # the Hub's lastModified is the push time
            _wait_for(lines, "revision_detected", 2, timeout=30)
            # The same process serves the API over what it polled.
            _wait_for(lines, "api_started", 1, timeout=30)
            repos = httpx2.get(f"http://127.0.0.1:{port}/api/v1/repos", timeout=10).json()
            assert [(r["repo_id"], r["revisions"]) for r in repos] == [(repo_id, 2)]
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        reader.join(timeout=5)
        assert proc.stderr is not None
        proc.stderr.close()
    assert any(line.get("event") == "daemon_stopping" for line in lines)
    store = SqlStore(f"sqlite:///{tmp_path / 'data' / 'hubwatch.db'}")
    try:
        assert len(store.history(repo_id)) == 2
    finally:
        store.close()
