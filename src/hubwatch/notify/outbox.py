"""Putting webhook messages in the outbox: each new revision's changes and each repo event."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import structlog

from hubwatch.diff.events import event_change
from hubwatch.models import (
    Change,
    CommitSha,
    OutboxMessage,
    RevisionChanges,
    StoredEvent,
    Subscription,
)
from hubwatch.notify.signing import new_message_id
from hubwatch.store.base import Store

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


def _body(event_type: str, data: dict[str, Any], now: datetime) -> str:
    payload = {"type": event_type, "timestamp": now.isoformat(), "data": data}
    return json.dumps(payload, ensure_ascii=False, default=str, separators=(",", ":"))


class WebhookNotifier:
    """Enqueues messages for the subscriptions that want them; delivery is WebhookDeliverer's."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def after_revision(self, repo_id: str, sha: CommitSha) -> None:
        """The tracker's hook: enqueue the new revision's changes (failures are logged)."""
        self.enqueue_revision(repo_id, sha)

    def enqueue_revision(self, repo_id: str, sha: CommitSha) -> int:
        """Enqueue one stored revision's changes for every subscription that wants them."""
        subscriptions = [
            s for s in self._store.subscriptions(enabled_only=True) if s.covers(repo_id)
        ]
        if not subscriptions:
            return 0
        recorded = self._store.revision_changes(repo_id, sha)
        now = datetime.now(UTC)
        messages = []
        for subscription in subscriptions:
            changes = wanted(subscription, recorded.changes)
            if changes:
                data = _revision_data(recorded, changes)
                messages.append(
                    OutboxMessage(
                        subscription.id,
                        new_message_id(),
                        f"revision:{repo_id}:{sha}",
                        REVISION_CHANGED,
                        _body(REVISION_CHANGED, data, now),
                    )
                )
        added = self._store.enqueue(messages, now=now)
        if added:
            log.info("webhooks_enqueued", repo=repo_id, sha=sha, messages=added)
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


def _revision_data(recorded: RevisionChanges, changes: list[Change]) -> dict[str, Any]:
    revision = recorded.revision
    return {
        "repo": revision.repo_id,
        "sha": revision.sha,
        "base": recorded.base,
        "title": revision.title,
        "date": revision.date.isoformat(),
        "changes": [change_json(c) for c in changes],
    }
