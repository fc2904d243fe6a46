"""POST /hooks/hub: the secret, the raw payload, and the repo polled at once."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from hubwatch.api.hooks import HubPush, hub_hooks_router, push_hint, store_poller
from hubwatch.errors import NotTracked
from hubwatch.models import RepoRef, RepoState, SourceKind, TrackedRepo
from hubwatch.store.sql import SqlStore

SECRET = "s3cret-webhook"
SHA = "0123456789abcdef0123456789abcdef01234567"


def _payload(name: str = "org/model", repo_type: str = "model") -> dict[str, object]:
    # The shape the Hub sends for a push (huggingface.co/docs/hub/webhooks)
    return {
        "event": {"action": "update", "scope": "repo.content"},
        "repo": {
            "type": repo_type,
            "name": name,
            "id": "6543",
            "private": False,
            "url": {"web": f"https://huggingface.co/{name}"},
            "headSha": SHA,
        },
        "updatedRefs": [{"ref": "refs/heads/main", "oldSha": "0" * 40, "newSha": SHA}],
        "webhook": {"id": "w1", "version": 3},
    }


def _client(calls: list[tuple[str, str | None]], secret: str | None = SECRET) -> TestClient:
    def poll_now(repo_id: str, push: HubPush) -> bool:
        calls.append((repo_id, push.head))
        return repo_id == "org/model"

    app = FastAPI()
    app.include_router(hub_hooks_router(secret, poll_now))
    return TestClient(app)


def _served(store: SqlStore) -> TestClient:
    """The router over the real `store_poller`, as `serve` wires it."""
    app = FastAPI()
    app.include_router(hub_hooks_router(SECRET, store_poller(store)))
    return TestClient(app)


def test_a_push_polls_the_repo_with_its_head(store: SqlStore) -> None:
    store.add_repo(RepoRef("org/model"))
    response = _served(store).post(
        "/hooks/hub", json=_payload(), headers={"X-Webhook-Secret": SECRET}
    )
    assert response.status_code == 202 and response.json()["status"] == "polling"
    [claim] = store.claim_repos("w1", datetime.now(UTC), lease_s=60)
    assert claim.repo_id == "org/model" and claim.hint is not None and claim.hint.head == SHA


@pytest.mark.parametrize("headers", [{}, {"X-Webhook-Secret": "wrong"}, {"X-Webhook-Secret": ""}])
def test_a_missing_or_wrong_secret_is_refused(headers: dict[str, str]) -> None:
    calls: list[tuple[str, str | None]] = []
    response = _client(calls).post("/hooks/hub", json=_payload(), headers=headers)
    assert response.status_code == 401 and calls == []


def test_without_a_configured_secret_every_call_is_refused() -> None:
    calls: list[tuple[str, str | None]] = []
    client = _client(calls, secret=None)
    response = client.post("/hooks/hub", json=_payload(), headers={"X-Webhook-Secret": ""})
    assert response.status_code == 401 and calls == []


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"not json", 400),
        (b"[1, 2]", 400),
        (json.dumps({"repo": {"name": 5}}).encode(), 400),
        (json.dumps(_payload(name="../../etc")).encode(), 400),
        (b'{"repo": {"name": "' + b"a" * 300_000 + b'"}}', 413),
        (b"[" * 50_000 + b"]" * 50_000, 400),  # nested too deep for the parser to recurse
        (b'{"repo": {"name": "org/model", "n": NaN}}', 400),
    ],
)
def test_a_bad_payload_is_refused_without_polling(body: bytes, status: int) -> None:
    calls: list[tuple[str, str | None]] = []
    response = _client(calls).post(
        "/hooks/hub",
        content=body,
        headers={"X-Webhook-Secret": SECRET, "Content-Type": "application/json"},
    )
    assert response.status_code == status and calls == []


def test_other_repo_types_and_untracked_repos_are_acknowledged_and_ignored(
    store: SqlStore,
) -> None:
    store.add_repo(RepoRef("org/model"))
    client = _served(store)
    headers = {"X-Webhook-Secret": SECRET}
    dataset = client.post("/hooks/hub", json=_payload(repo_type="dataset"), headers=headers)
    other = client.post("/hooks/hub", json=_payload(name="org/other"), headers=headers)
    assert (dataset.status_code, other.status_code) == (202, 202)
    assert dataset.json()["status"] == other.json()["status"] == "ignored"
    assert other.json()["reason"] == "repo is not tracked"
    assert store.claim_repos("w1", datetime.now(UTC), lease_s=60) == []  # nothing was woken


def test_the_store_poller_wakes_the_repo_for_the_next_worker(store: SqlStore) -> None:
    store.add_repo(RepoRef("org/model"))
    poll_now = store_poller(store)
    push = HubPush(SHA, {"refs/heads/main": SHA})
    assert poll_now("org/model", push)
    with pytest.raises(NotTracked):
        poll_now("org/unknown", push)
    [claim] = store.claim_repos("w1", datetime.now(UTC), lease_s=60)
    assert claim.repo_id == "org/model"
    assert claim.hint is not None and claim.hint.head == SHA  # the poll starts from the push


def _tracked(
    state: RepoState = RepoState.ACTIVE, source: SourceKind = SourceKind.HUB, branch: str = "main"
) -> TrackedRepo:
    url = None if source == SourceKind.HUB else "/srv/git/model"
    ref = RepoRef("org/model", source, url, branch)
    return TrackedRepo(ref, state, None, 0, datetime.now(UTC), None, None)


def test_a_push_naming_the_tracked_branch_gives_the_poll_its_head() -> None:
    push = HubPush(SHA, {"refs/heads/main": SHA, "refs/pr/3": "f" * 40})
    hint = push_hint(push, _tracked())
    assert hint is not None and (hint.head, hint.repo_id, hint.gated) == (SHA, "org/model", False)
    gated = push_hint(push, _tracked(RepoState.GATED))
    assert gated is not None and gated.gated  # the poll keeps the state it knows
    tag = push_hint(HubPush(None, {"refs/tags/v1": SHA}), _tracked(branch="v1"))
    assert tag is not None and tag.head == SHA


@pytest.mark.parametrize(
    ("push", "tracked"),
    [
        (HubPush(SHA, {"refs/pr/3": SHA}), _tracked()),  # not the tracked branch
        (HubPush(SHA, {}), _tracked()),  # no updatedRefs: headSha alone names no branch
        (HubPush(SHA, {"refs/heads/main": "0" * 40}), _tracked()),  # branch deleted
        (HubPush(SHA, {"refs/heads/main": "<b>not a sha</b>"}), _tracked()),
        (HubPush(SHA, {"refs/heads/main": SHA}, private=True), _tracked()),
        (HubPush(SHA, {"refs/heads/main": SHA}), _tracked(RepoState.DELETED)),
        (HubPush(SHA, {"refs/heads/main": SHA}), _tracked(source=SourceKind.GIT)),
        (HubPush(SHA, {"refs/heads/main": SHA}), _tracked(branch="dev")),
    ],
)
def test_anything_less_certain_polls_in_full(push: HubPush, tracked: TrackedRepo) -> None:
    assert push_hint(push, tracked) is None


def test_malformed_updated_refs_are_left_out() -> None:
    calls: list[tuple[str, HubPush]] = []

    def poll_now(repo_id: str, push: HubPush) -> bool:
        calls.append((repo_id, push))
        return True

    app = FastAPI()
    app.include_router(hub_hooks_router(SECRET, poll_now))
    payload = _payload()
    payload["updatedRefs"] = [
        {"ref": "refs/heads/main", "newSha": 7},
        "refs/heads/dev",
        {"ref": 5},
        {"ref": "refs/heads/x", "newSha": "a" * 100},
    ]
    payload["repo"]["private"] = "yes"  # type: ignore[index]
    response = TestClient(app).post(
        "/hooks/hub", json=payload, headers={"X-Webhook-Secret": SECRET}
    )
    assert response.status_code == 202
    [(_, push)] = calls
    assert push.refs == {"refs/heads/main": "", "refs/heads/x": ""} and push.private is False
