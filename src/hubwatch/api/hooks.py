"""`POST /hooks/hub`: Hugging Face Hub webhooks poll the repo they name at once.

The Hub sends the secret configured for the webhook verbatim in `X-Webhook-Secret` (there is no
signature); it is compared in constant time. The payload is read from the raw JSON, never
trusted: `repo.type` must be "model", `repo.name` a valid repo id; `repo.headSha` and
`updatedRefs` are passed on. Where the push names the tracked branch's new sha, the poll starts
from it as a listing's hint does (no status request): a push costs only the reads of the new
revisions. Answers are quick and final (2xx) for anything well formed, so the Hub does not retry
events hubwatch has no use for.

Only the scopes that change what a poll reads wake one: `repo.content` (commits, tags, PR refs)
and `repo.config` (visibility, disabled), and their narrower scopes (the Hub's documentation:
"any action on a narrowed scope" is "an update on the broader scope"). A discussion or a comment
costs no Hub request: it is recorded as the repo's `hub_event`, or ignored
(`HUBWATCH_HUB_WEBHOOK_OTHER_SCOPES`). The repo is found by `repo.name`, or by `repo.id` (the Hub's
object id, which a rename keeps) when the name is not tracked: a renamed repo's hooks name it by
its new name before any poll has followed the rename.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import structlog
from fastapi import APIRouter, HTTPException, Request
from starlette.concurrency import run_in_threadpool

from hubwatch import metrics
from hubwatch.api.hookcap import DailyCap
from hubwatch.errors import InvalidRepoId, NotTracked, UnsafeContent
from hubwatch.formats.json import loads_bounded
from hubwatch.models import (
    READABLE_STATES,
    CommitSha,
    EventKind,
    RepoEvent,
    RepoState,
    RepoStatus,
    SourceKind,
    TrackedRepo,
    validate_repo_id,
)
from hubwatch.store.repos import RepoStore
from hubwatch.store.scheduling import ScheduleStore


class _PollNowStore(RepoStore, ScheduleStore, Protocol):
    """What a Hub webhook touches: the repo it names, and its place in the schedule."""


log = structlog.get_logger(__name__)

MAX_BODY = 256 * 1024  # a webhook payload is a few KiB; anything larger is not one

_SHA = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True, slots=True)
class HubPush:
    """What a Hub webhook says about the repo it names, as far as it could be read."""

    head: str | None = None
    """`repo.headSha`."""
    refs: Mapping[str, str] = field(default_factory=dict)
    """`updatedRefs`: ref name (`refs/heads/main`) to its new sha."""
    private: bool = False
    object_id: str | None = None
    """`repo.id`: the Hub's object id of the repo."""
    scope: str = "repo.content"
    """`event.scope`; a payload without one is taken for a push, as before scopes were read."""
    action: str = "update"
    """`event.action`."""

    @property
    def polls(self) -> bool:
        """Whether the event may change what a poll reads (a `repo.content`/`repo.config` scope)."""
        return any(self.scope == s or self.scope.startswith(s + ".") for s in POLL_SCOPES)


POLL_SCOPES = ("repo.content", "repo.config")
"""The webhook scopes that wake a poll."""

PollNow = Callable[[str, HubPush], bool]
"""Called with (repo id, what the push says); False when the repo is not tracked."""
Record = Callable[[str, HubPush], bool]
"""Records an event of another scope against the repo; False when the repo is not tracked."""


def push_hint(push: HubPush, tracked: TrackedRepo) -> RepoStatus | None:
    """The status a poll of `tracked` may start from, when the push names its branch's new sha.

    None (a full poll, status first) for anything less certain: another source, a repo the store
    holds as deleted or disabled, a private repo (the public listing's bookkeeping assumes
    public), a push that does not name the tracked branch, or a deleted branch.
    """
    ref = tracked.ref
    if ref.source != SourceKind.HUB or tracked.state not in READABLE_STATES or push.private:
        return None
    sha = push.refs.get(f"refs/heads/{ref.branch}") or push.refs.get(f"refs/tags/{ref.branch}")
    if sha is None or not _SHA.fullmatch(sha) or sha == "0" * 40:
        return None
    return RepoStatus(CommitSha(sha), ref.repo_id, gated=tracked.state == RepoState.GATED)


def store_poller(store: _PollNowStore) -> PollNow:
    """A PollNow that wakes the repo in the store: the next free worker polls it."""

    def poll_now(repo_id: str, push: HubPush) -> bool:
        tracked = store.get_repo(tracked_id(store, repo_id, push))  # NotTracked: ignored
        hint = push_hint(push, tracked)
        name = tracked.ref.repo_id
        hints = {name: hint} if hint is not None else None
        return store.wake([name], datetime.now(UTC), hints) > 0

    return poll_now


def store_recorder(store: RepoStore) -> Record:
    """A Record that keeps the event among the repo's events (`hub_event`): no poll, no change."""

    def record(repo_id: str, push: HubPush) -> bool:
        name = tracked_id(store, repo_id, push)
        store.get_repo(name)  # NotTracked: the router ignores it
        detail = f"Hub webhook {push.scope} {push.action} (no poll: nothing it reads changed)"
        store.add_event(name, RepoEvent(EventKind.HUB_EVENT, detail[:300], None, datetime.now(UTC)))
        return True

    return record


def tracked_id(store: RepoStore, repo_id: str, push: HubPush) -> str:
    """The name `repo_id` is tracked under: itself, or the repo with the push's object id (a
    renamed repo, before its poll followed the rename), or the one it was renamed from."""
    try:
        store.get_repo(repo_id)
        return repo_id
    except NotTracked:
        pass
    found = store.find_repo(object_id=push.object_id) if push.object_id else None
    return found or store.find_repo(former_id=repo_id) or repo_id


def _read_push(payload: dict[str, Any], repo: dict[str, Any]) -> HubPush:
    """The parts of a webhook payload a poll can use; anything malformed is left out."""
    head = repo.get("headSha")
    refs: dict[str, str] = {}
    updated = payload.get("updatedRefs")
    for item in updated[:20] if isinstance(updated, list) else []:
        if isinstance(item, dict) and isinstance(item.get("ref"), str):
            new = item.get("newSha")
            refs[item["ref"][:200]] = new if isinstance(new, str) and len(new) <= 64 else ""
    event = payload.get("event")
    event = event if isinstance(event, dict) else {}
    scope, action, object_id = event.get("scope"), event.get("action"), repo.get("id")
    return HubPush(
        head=head if isinstance(head, str) and len(head) <= 64 else None,
        refs=refs,
        private=repo.get("private") is True,
        object_id=object_id if isinstance(object_id, str) and len(object_id) <= 64 else None,
        scope=scope[:100] if isinstance(scope, str) else "repo.content",
        action=action[:40] if isinstance(action, str) else "update",
    )


def hub_hooks_router(
    secret: str | None,
    poll_now: PollNow,
    record: Record | None = None,
    cap: DailyCap | None = None,
) -> APIRouter:
    """The router for `POST /hooks/hub`; with no secret configured every call is refused.

    `record`: what becomes of events of the scopes that wake no poll; None: they are ignored.
    `cap`: counts the triggers against the Hub's daily cap (a fresh one if None).
    """
    router = APIRouter()
    cap = cap or DailyCap()

    @router.post("/hooks/hub", status_code=202)
    async def hub_webhook(request: Request) -> dict[str, Any]:
        given = request.headers.get("X-Webhook-Secret", "")
        if not secret or not hmac.compare_digest(given.encode(), secret.encode()):
            metrics.HUB_WEBHOOKS.labels("refused").inc()
            raise HTTPException(401, "missing or wrong X-Webhook-Secret")
        cap.arrived()  # the Hub counts every delivery against the day's cap, ignored ones too
        payload, repo = await _read_payload(request)
        if repo.get("type", "model") != "model":
            metrics.HUB_WEBHOOKS.labels("ignored").inc()
            return {
                "status": "ignored",
                "reason": f"{str(repo.get('type'))[:20]} repos are not tracked",
            }
        try:
            repo_id = validate_repo_id(repo["name"])
        except InvalidRepoId as exc:
            raise HTTPException(400, str(exc)) from None
        push = _read_push(payload, repo)
        if not push.polls:
            return await _other_scope(repo_id, push, record)
        try:
            tracked = await run_in_threadpool(poll_now, repo_id, push)
        except NotTracked:
            tracked = False
        outcome = "polled" if tracked else "ignored"
        metrics.HUB_WEBHOOKS.labels(outcome).inc()
        log.info(
            "hub_webhook_received",
            repo=repo_id,
            head=push.head,
            refs=sorted(push.refs),
            outcome=outcome,
        )
        if not tracked:
            return {"status": "ignored", "reason": "repo is not tracked"}
        return {"status": "polling", "repo": repo_id}

    return router


async def _read_payload(request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
    """The payload and its `repo` object, or the 4xx that says what is wrong with them."""
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise HTTPException(413, "payload too large for a Hub webhook")
    try:
        payload = loads_bounded(raw)
    except UnsafeContent:
        raise HTTPException(400, "payload is not JSON") from None
    repo = payload.get("repo") if isinstance(payload, dict) else None
    if not isinstance(repo, dict) or not isinstance(repo.get("name"), str):
        raise HTTPException(400, "payload has no repo.name")
    return payload, repo


async def _other_scope(repo_id: str, push: HubPush, record: Record | None) -> dict[str, Any]:
    """An event that changes nothing a poll reads (a discussion, a comment): no Hub request."""
    recorded = False
    if record is not None:
        try:
            recorded = await run_in_threadpool(record, repo_id, push)
        except NotTracked:
            recorded = False
    outcome = "recorded" if recorded else "ignored"
    metrics.HUB_WEBHOOKS.labels(outcome).inc()
    log.info("hub_webhook_received", repo=repo_id, scope=push.scope, outcome=outcome)
    return {"status": outcome, "reason": f"scope {push.scope} wakes no poll"}
