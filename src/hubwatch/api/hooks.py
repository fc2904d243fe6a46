"""`POST /hooks/hub`: Hugging Face Hub webhooks poll the repo they name at once.

The Hub sends the secret configured for the webhook verbatim in `X-Webhook-Secret` (there is no
signature); it is compared in constant time. The payload is read from the raw JSON, never
trusted: `repo.type` must be "model", `repo.name` a valid repo id; `repo.headSha` and
`updatedRefs` are passed on. Answers are quick and final (2xx) for anything well formed, so the
Hub does not retry events hubwatch has no use for.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import structlog
from fastapi import APIRouter, HTTPException, Request
from starlette.concurrency import run_in_threadpool

from hubwatch import metrics
from hubwatch.errors import InvalidRepoId, NotTracked
from hubwatch.models import validate_repo_id
from hubwatch.store.base import Store

log = structlog.get_logger(__name__)

MAX_BODY = 256 * 1024  # a webhook payload is a few KiB; anything larger is not one

PollNow = Callable[[str, str | None], bool]
"""Called with (repo id, head sha or None); False when the repo is not tracked."""


def store_poller(store: Store) -> PollNow:
    """A PollNow that wakes the repo in the store: the next free worker polls it."""

    def poll_now(repo_id: str, _head: str | None) -> bool:
        return store.wake([repo_id], datetime.now(UTC)) > 0

    return poll_now


def hub_hooks_router(secret: str | None, poll_now: PollNow) -> APIRouter:
    """The router for `POST /hooks/hub`; with no secret configured every call is refused."""
    router = APIRouter()

    @router.post("/hooks/hub", status_code=202)
    async def hub_webhook(request: Request) -> dict[str, Any]:
        given = request.headers.get("X-Webhook-Secret", "")
        if not secret or not hmac.compare_digest(given.encode(), secret.encode()):
            metrics.HUB_WEBHOOKS.labels("refused").inc()
            raise HTTPException(401, "missing or wrong X-Webhook-Secret")
        raw = await request.body()
        if len(raw) > MAX_BODY:
            raise HTTPException(413, "payload too large for a Hub webhook")
        try:
            payload = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise HTTPException(400, "payload is not JSON") from None
        repo = payload.get("repo") if isinstance(payload, dict) else None
        if not isinstance(repo, dict) or not isinstance(repo.get("name"), str):
            raise HTTPException(400, "payload has no repo.name")
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
        head = repo.get("headSha")
        head = head if isinstance(head, str) and len(head) <= 64 else None
        refs = payload.get("updatedRefs")
        refs = (
            [r.get("ref") for r in refs if isinstance(r, dict)][:20]
            if isinstance(refs, list)
            else []
        )
        try:
            tracked = await run_in_threadpool(poll_now, repo_id, head)
        except NotTracked:
            tracked = False
        outcome = "polled" if tracked else "ignored"
        metrics.HUB_WEBHOOKS.labels(outcome).inc()
        log.info("hub_webhook_received", repo=repo_id, head=head, refs=refs, outcome=outcome)
        if not tracked:
            return {"status": "ignored", "reason": "repo is not tracked"}
        return {"status": "polling", "repo": repo_id}

    return router
