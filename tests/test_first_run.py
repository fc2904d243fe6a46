"""A newcomer's first run (issue 32): the demo without the network, quiet logs, an unreachable
Hub that says what to try next. Each runs the installed `hubwatch` command as a subprocess."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
import pytest

from hubwatch.cli.demo import BUNDLE, DEMO_REPO
from hubwatch.errors import EXIT_UNREACHABLE
from tests.conftest import DATA, GRANITE_BUNDLE
from tests.support.blackhole import BlackHole

GRANITE_REVISIONS = 9


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def offline_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a machine whose Hub and OSV.dev refuse every connection."""
    refused = f"http://127.0.0.1:{closed_port()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HUBWATCH_", "HF_"))}
    return {
        **env,
        "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
        "HF_ENDPOINT": refused,
        "HUBWATCH_OSV_API_URL": refused,
        "HUBWATCH_OSV_DATABASE_URL": refused,
        "HF_HOME": str(tmp_path / "hf-home"),
    }


def test_the_demo_bundle_is_the_granite_fixture() -> None:
    assert BUNDLE.read_bytes() == GRANITE_BUNDLE.read_bytes()


@contextmanager
def demo_process(env: dict[str, str], log: Path, *args: str) -> Iterator[str]:
    """`hubwatch demo` running (its stderr written to `log`), and the URL it printed; stopped
    with SIGINT after."""
    with log.open("w") as stderr:
        proc = subprocess.Popen(
            ["hubwatch", "demo", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            start_new_session=True,
        )
    assert proc.stdout is not None
    printed: list[str] = []
    reader = threading.Thread(target=lambda: printed.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout=60)  # "under a minute"
    try:
        assert printed and printed[0].startswith("http://"), log.read_text()
        yield printed[0].strip()
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.stdout.close()


@pytest.mark.slow
def test_demo_serves_the_granite_history_with_the_network_refused(tmp_path: Path) -> None:
    env = offline_env(tmp_path)
    kept = tmp_path / "demo"
    with demo_process(env, tmp_path / "demo.log", "--port", "0", "--data-dir", str(kept)) as url:
        assert url.endswith(f"/repos/{DEMO_REPO}")
        page = httpx2.get(url, timeout=10)
        assert page.status_code == 200
        assert "Updated chat template" in page.text
    assert (kept / "hubwatch.db").is_file()  # --data-dir keeps it


def _osv_database(data: Path) -> None:
    """What `hubwatch osv sync` leaves: `<data>/osv/PyPI/all.zip`, from the real records."""
    target = data / "osv" / "PyPI" / "all.zip"
    target.parent.mkdir(parents=True)
    with zipfile.ZipFile(target, "w") as archive:
        for record in sorted((DATA / "osv" / "records").glob("*.json")):
            archive.writestr(record.name, record.read_bytes())


@pytest.mark.slow
@pytest.mark.parametrize("osv", ["synced", "missing"])
def test_tracking_9_revisions_writes_a_line_each_and_a_summary(
    tmp_path: Path, granite_git: Path, osv: str
) -> None:
    env = offline_env(tmp_path)
    if osv == "synced":
        _osv_database(tmp_path / "data")
    command = ["hubwatch", "track", DEMO_REPO, "--source", "git", "--url", str(granite_git)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    revisions = [line for line in lines if "revision_detected" in line]
    assert len(revisions) == GRANITE_REVISIONS
    # one per revision, the progress bar's last state and the summary; a missing OSV database
    # is said once, not once per revision
    extra = 1 if osv == "missing" else 0
    assert len(lines) <= GRANITE_REVISIONS + 2 + extra, done.stderr
    assert sum("advisory_check_failed" in line for line in lines) == extra
    assert not [line for line in lines if "httpx" in line or "HTTP Request" in line]


@pytest.mark.slow
def test_serve_logs_no_line_per_scheduler_tick(tmp_path: Path, granite_git: Path) -> None:
    env = {
        **offline_env(tmp_path),
        "HUBWATCH_WEBHOOK_INTERVAL_S": "0.2",
        "HUBWATCH_WORK_TICK_S": "0.2",
        "HUBWATCH_LOG_FORMAT": "json",
    }
    log = tmp_path / "demo.log"
    with demo_process(env, log, "--port", "0"):
        time.sleep(3)  # some 15 ticks of each job
    events = [json.loads(line)["event"] for line in log.read_text().splitlines() if line[:1] == "{"]
    assert events.count("revision_detected") == GRANITE_REVISIONS
    assert "job_finished" not in events
    assert events.count("poll_cycle_finished") <= 2, events


@pytest.mark.parametrize("hub", ["refused", "silent"])
def test_an_unreachable_hub_names_the_endpoint_and_the_next_step_and_exits_5(
    tmp_path: Path, hub: str
) -> None:
    retries, timeout_s = 2, 1.0
    env = {
        **offline_env(tmp_path),
        "HUBWATCH_RETRIES": str(retries),
        "HUBWATCH_RETRY_MAX_WAIT_S": "0.5",
        "HUBWATCH_HTTP_TIMEOUT_S": str(timeout_s),
    }
    with BlackHole() as hole:
        if hub == "silent":  # accepts, never answers: what a proxy or firewall dropping does
            env["HF_ENDPOINT"] = hole.url
        started = time.monotonic()
        done = subprocess.run(
            ["hubwatch", "track", "org/model"], env=env, capture_output=True, text=True, timeout=120
        )
        took = time.monotonic() - started
    assert done.returncode == EXIT_UNREACHABLE, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) <= retries + 1, done.stderr  # a line per retry at most, then the error
    error = lines[-1]
    assert error.startswith("error: org/model: cannot reach the Hub at " + env["HF_ENDPOINT"])
    for hint in ("HTTPS_PROXY", "HF_ENDPOINT", "HF_HUB_OFFLINE=1", "hubwatch demo"):
        assert hint in error
    # generous: every try's timeout and the longest waits, plus start-up and slack
    assert took < (retries + 1) * timeout_s + retries * 0.5 + 30
