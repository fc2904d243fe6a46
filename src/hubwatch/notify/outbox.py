"""Putting webhook messages in the outbox: each new revision's changes and each repo event."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple, Protocol

import structlog

from hubwatch.diff import event_change
from hubwatch.models import (
    Change,
    CommitSha,
    OutboxMessage,
    RevisionStored,
    StoredEvent,
    Subscription,
)
from hubwatch.notify.signing import new_message_id
from hubwatch.store.browse import BrowseStore
from hubwatch.store.webhooks import WebhookStore


class NotifyStore(WebhookStore, BrowseStore, Protocol):
    """What enqueueing reads and writes: subscriptions, the outbox, events and stored changes."""


log = structlog.get_logger(__name__)

REVISION_CHANGED = "revision.changed"
REPO_EVENT = "repo.event"
EVENTS_CURSOR = "webhook_events"


def change_json(change: Change) -> dict[str, Any]:
    """A change record as payloads, feeds and the API carry it."""
    return {
        "kind": change.kind,
        "severity": change.severity.value,
        "summary": change.summary,
        "path": change.path,
        "before": change.before,
        "after": change.after,
        "detail": change.detail,
    }


def wanted(subscription: Subscription, changes: Iterable[Change]) -> list[Change]:
    """The changes a subscription's filters let through."""
    minimum = subscription.min_severity
    kinds = subscription.kinds
    return [
        change
        for change in changes
        if (minimum is None or change.severity.rank >= minimum.rank)
        and (
            not kinds
            or any(
                change.kind == k or (k.endswith(".") and change.kind.startswith(k)) for k in kinds
            )
        )
    ]


MAX_BODY = 256 * 1024
"""The most characters of one message's body: a revision's changes past it are left out (the
body says how many, and the API has them all)."""


def _body(event_type: str, data: dict[str, Any], now: datetime) -> str:
    payload = {"type": event_type, "timestamp": now.isoformat(), "data": data}
    body = _dumped(payload)
    changes = data.get("changes")
    if len(body) <= MAX_BODY or not isinstance(changes, list):
        return body
    # first without the details (the longest part), then with fewer changes (the first are kept:
    # a diff lists the most severe first)
    lean = [{**c, "detail": None} for c in changes]
    kept = len(lean)
    while kept:
        data = {**data, "changes": lean[:kept], "changes_omitted": len(lean) - kept}
        body = _dumped({**payload, "data": data})
        if len(body) <= MAX_BODY:
            return body
        kept //= 2
    return _dumped({**payload, "data": {**data, "changes": [], "changes_omitted": len(lean)}})


def _dumped(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, default=str, separators=(",", ":"))


class WebhookNotifier:
    """Enqueues messages for the subscriptions that want them; delivery is WebhookDeliverer's."""

    def __init__(self, store: NotifyStore) -> None:
        self._store = store

    def after_revision(self, stored: RevisionStored) -> list[Change]:
        """The tracker's hook: enqueue the new revision's changes (failures are logged)."""
        subscriptions = self._subscriptions(stored.repo_id)
        if subscriptions:
            commit = stored.commit
            revision = _Revision(stored.repo_id, commit.sha, commit.title, commit.date)
            self._enqueue(subscriptions, revision, stored.base, stored.changes)
        return []

    def enqueue_revision(self, repo_id: str, sha: CommitSha) -> int:
        """Enqueue one stored revision's changes for every subscription that wants them."""
        subscriptions = self._subscriptions(repo_id)
        if not subscriptions:
            return 0
        recorded = self._store.revision_changes(repo_id, sha)
        stored = recorded.revision
        revision = _Revision(repo_id, sha, stored.title, stored.date)
        return self._enqueue(subscriptions, revision, recorded.base, recorded.changes)

    def _subscriptions(self, repo_id: str) -> list[Subscription]:
        return [s for s in self._store.subscriptions(enabled_only=True) if s.covers(repo_id)]

    def _enqueue(
        self,
        subscriptions: list[Subscription],
        revision: _Revision,
        base: CommitSha | None,
        recorded: Sequence[Change],
    ) -> int:
        now = datetime.now(UTC)
        messages = []
        for subscription in subscriptions:
            changes = wanted(subscription, recorded)
            if changes:
                data = _revision_data(revision, base, changes)
                messages.append(
                    OutboxMessage(
                        subscription.id,
                        new_message_id(),
                        f"revision:{revision.repo_id}:{revision.sha}",
                        REVISION_CHANGED,
                        _body(REVISION_CHANGED, data, now),
                    )
                )
        added = self._store.enqueue(messages, now=now)
        if added:
            log.info("webhooks_enqueued", repo=revision.repo_id, sha=revision.sha, messages=added)
        return added

    def collect_events(self) -> int:
        """Enqueue repo events recorded since the last call (the first call starts from now)."""
        position = self._store.event_cursor(EVENTS_CURSOR)
        if position is None:  # no flood of old events the first time
            self._store.set_event_cursor(EVENTS_CURSOR, self._store.last_event_position())
            return 0
        added = 0
        while batch := self._store.events_after(position, limit=500):
            subscriptions = self._store.subscriptions(enabled_only=True)
            now = datetime.now(UTC)
            messages = [
                m for stored in batch for m in self._event_messages(stored, subscriptions, now)
            ]
            added += self._store.enqueue(messages, now=now)
            position = batch[-1].position
            self._store.set_event_cursor(EVENTS_CURSOR, position)
        return added

    def _event_messages(
        self, stored: StoredEvent, subscriptions: list[Subscription], now: datetime
    ) -> list[OutboxMessage]:
        change = event_change(stored.event)
        if change is None:
            return []
        event = stored.event
        data = {
            "repo": stored.repo_id,
            "event": event.kind.value,
            "detail": event.detail,
            "sha": event.sha,
            "at": event.at.isoformat() if event.at else None,
            "changes": [change_json(change)],
        }
        return [
            OutboxMessage(
                s.id,
                new_message_id(),
                f"event:{stored.position}",
                REPO_EVENT,
                _body(REPO_EVENT, data, now),
            )
            for s in subscriptions
            if s.covers(stored.repo_id) and wanted(s, [change])
        ]


class _Revision(NamedTuple):
    """What a revision's message says of it."""

    repo_id: str
    sha: CommitSha
    title: str
    date: datetime


def _revision_data(
    revision: _Revision, base: CommitSha | None, changes: list[Change]
) -> dict[str, Any]:
    return {
        "repo": revision.repo_id,
        "sha": revision.sha,
        "base": base,
        "title": revision.title,
        "date": revision.date.isoformat(),
        "changes": [change_json(c) for c in changes],
    }
