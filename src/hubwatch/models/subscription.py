"""Webhook subscriptions, their outbox messages and delivery attempts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from hubwatch.models.change import Severity
from hubwatch.models.repo import RepoEvent


class MessageState(StrEnum):
    """Where an outbox message stands."""

    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"
    """Given up after the retry window; its subscription was disabled."""


@dataclass(frozen=True, slots=True)
class Subscription:
    """Who wants which changes: one repo (`repo_id`) or a whole org (`org`), with filters."""

    id: int
    url: str
    secret: str
    """The `whsec_…` signing secret; never logged, shown once on creation."""
    repo_id: str | None
    org: str | None
    kinds: tuple[str, ...]
    """Change kinds wanted (exact, or a prefix ending in `.`); empty: every kind."""
    min_severity: Severity | None
    enabled: bool
    disabled_reason: str | None
    created_at: datetime

    def covers(self, repo_id: str) -> bool:
        """Whether the subscription is about this repo."""
        if self.repo_id is not None:
            return self.repo_id == repo_id
        return self.org is None or repo_id.split("/", 1)[0] == self.org


@dataclass(frozen=True, slots=True)
class OutboxMessage:
    """A message to enqueue for one subscription."""

    subscription_id: int
    message_id: str
    event_key: str
    event_type: str
    body: str


@dataclass(frozen=True, slots=True)
class PendingMessage:
    """A due outbox message, with what is needed to send it."""

    id: int
    message_id: str
    event_type: str
    body: str
    attempts: int
    created_at: datetime
    subscription: Subscription


@dataclass(frozen=True, slots=True)
class DeliveryAttempt:
    """One attempt in the delivery log."""

    message_id: str
    event_type: str
    attempt: int
    at: datetime
    status_code: int | None
    error: str | None
    duration_ms: int
    state: MessageState
    """How this attempt ended: DELIVERED, or FAILED (a later attempt may still deliver)."""


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """A repo event with its position in the event table (for the notifier's cursor)."""

    position: int
    repo_id: str
    event: RepoEvent
