"""`hubwatch serve` for real: webhooks survive a killed daemon in the middle of their retries."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import httpx2
import pytest
from standardwebhooks import Webhook

from hubwatch import __version__
from hubwatch.models import MessageState
from hubwatch.notify.signing import new_secret
from hubwatch.store.sql import SqlStore
from tests.support.gitrepo import CommitSpec, add_commits, make_repo
from tests.support.hubsim import HubSimulator
from tests.support.receiver import WebhookReceiver

pytestmark = pytest.mark.slow
REPO_ID = "org/model"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def generation(eos: object) -> CommitSpec:
    return CommitSpec(
        {
            "config.json": b'{"model_type": "qwen3", "eos_token_id": 1}',
            "generation_config.json": json.dumps({"eos_token_id": eos}).encode(),
        }
    )


def wait_for(check: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


class Daemon:
    """`hubwatch serve` in its own process group, its JSON log lines collected."""

    def __init__(self, env: dict[str, str]) -> None:
        self.lines: list[dict[str, object]] = []
        self.proc = subprocess.Popen(
            ["hubwatch", "serve"],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            if raw.startswith("{"):
                self.lines.append(json.loads(raw))

    def count(self, event: str) -> int:
        return sum(1 for line in self.lines if line.get("event") == event)

    def stop(self, sig: signal.Signals) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
        self.proc.wait(timeout=30)
        self.reader.join(timeout=5)
        assert self.proc.stderr is not None
        self.proc.stderr.close()


def test_killed_daemon_loses_no_webhook_and_each_event_arrives_once(tmp_path: Path) -> None:
    upstream = tmp_path / "up"
    make_repo(upstream, [generation(1), generation([1, 2])])
    data = tmp_path / "data"
    data.mkdir()
    port = free_port()
    with HubSimulator() as hub, WebhookReceiver(fail_first=4) as receiver:
        hub.add_repo(REPO_ID, upstream)
        secret = new_secret()
        store = SqlStore(f"sqlite:///{data / 'hubwatch.db'}")
        store.start()
        store.add_subscription(
            receiver.url, secret, repo_id=REPO_ID, org=None, kinds=[], min_severity=None
        )
        store.close()
        env = {
            **os.environ,
            "HF_ENDPOINT": hub.url,
            "HUBWATCH_DATA_DIR": str(data),
            "HUBWATCH_POLL_INTERVAL_S": "0.5",
            "HUBWATCH_LOG_JSON": "true",
            "HUBWATCH_API_PORT": str(port),
            "HUBWATCH_ADVISORY_SERVICE": "off",
            "HUBWATCH_WEBHOOK_ALLOW_HTTP": "true",
            "HUBWATCH_WEBHOOK_ALLOWED_NETWORKS": '["127.0.0.0/8"]',
            "HUBWATCH_WEBHOOK_INTERVAL_S": "0.2",
            "HUBWATCH_WEBHOOK_RETRY_BASE_S": "0.3",
            # The killed daemon may die holding the discovery lease; it expires after this.
            "HUBWATCH_LEASE_S": "3",
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        }
        env.pop("HF_TOKEN", None)
        env.pop("HUBWATCH_DATABASE_URL", None)
        subprocess.run(["hubwatch", "track", REPO_ID], env=env, check=True, capture_output=True)

        first = Daemon(env)
        try:
            # Killed (no clean shutdown) once some deliveries have failed: mid-retries.
            wait_for(lambda: len(receiver.requests) >= 2, "the first failed deliveries")
        finally:
            first.stop(signal.SIGKILL)
        assert not receiver.accepted()

        second = Daemon(env)
        try:
            wait_for(lambda: second.count("api_started") == 1, "the API")
            health = httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
            assert health.json() == {"status": "ok"}
            add_commits(upstream, [generation([1, 2, 3])])  # detected by the poll, then sent
            hub.touch(REPO_ID, datetime.now(UTC))  # the Hub's lastModified is the push time
            wait_for(lambda: second.count("revision_detected") >= 1, "the new revision")
            wait_for(
                lambda: len({r.headers["webhook-id"] for r in receiver.accepted()}) >= 3,
                "every webhook",
            )
            # Logged after the store records the delivery: the log below is complete.
            wait_for(lambda: second.count("webhook_delivered") >= 3, "the deliveries recorded")
        finally:
            second.stop(signal.SIGTERM)
        assert second.count("daemon_stopping") == 1

    store = SqlStore(f"sqlite:///{data / 'hubwatch.db'}")
    try:
        with_changes = [rc.revision.sha for rc in store.changes(REPO_ID)]
        [subscription] = store.subscriptions()
        attempts = store.deliveries(subscription.id)
    finally:
        store.close()
    hook = Webhook(secret)
    # Every accepted request counted, not collapsed by webhook-id: a second delivery of an
    # event the receiver already accepted is a duplicate.
    ids = [r.headers["webhook-id"] for r in receiver.accepted()]
    assert len(ids) == len(set(ids)), f"delivered more than once: {sorted(ids)}"
    by_id = {r.headers["webhook-id"]: hook.verify(r.body, r.headers) for r in receiver.accepted()}
    # Each event once: one id per revision with changes, none missing.
    assert sorted(p["data"]["sha"] for p in by_id.values()) == sorted(with_changes)
    assert len(with_changes) == 3  # two tracked before the kill, one polled after it
    assert len(receiver.requests) >= 4 + len(by_id)
    # The delivery log agrees, attempt by attempt: one 2xx attempt per message, recorded
    # delivered, so every message is done; the receiver's refusals stay recorded as failed.
    accepted = [a.message_id for a in attempts if a.status_code and 200 <= a.status_code < 300]
    assert sorted(accepted) == sorted(ids)
    delivered = [a.message_id for a in attempts if a.state is MessageState.DELIVERED]
    assert sorted(delivered) == sorted(ids)
    assert {a.state for a in attempts} == {MessageState.DELIVERED, MessageState.FAILED}
    # hubwatch says who it is on every request: to the Hub and its CDN, and to receivers
    agents = {r.agent for r in hub.requests} | {r.headers["user-agent"] for r in receiver.requests}
    assert agents and all((agent or "").startswith(f"hubwatch/{__version__}") for agent in agents)
