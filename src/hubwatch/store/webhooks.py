"""The WebhookStore interface: webhook subscriptions, their outbox and delivery log."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from hubwatch.models import (
    DeliveryAttempt,
    MessageState,
    OutboxMessage,
    PendingMessage,
    Severity,
    StoredEvent,
    Subscription,
)


class WebhookStore(Protocol):
    """Subscriptions, the webhook outbox (at-least-once: rows survive restarts) and its log."""

    @abstractmethod
    def add_subscription(
        self,
        url: str,
        secret: str,
        *,
        repo_id: str | None,
        org: str | None,
        kinds: Sequence[str],
        min_severity: Severity | None,
    ) -> Subscription:
        """Store a new subscription."""

    @abstractmethod
    def subscription(self, subscription_id: int) -> Subscription:
        """One subscription; UnknownSubscription if none."""

    @abstractmethod
    def subscriptions(self, *, enabled_only: bool = False) -> list[Subscription]:
        """Every subscription, oldest first."""

    @abstractmethod
    def remove_subscription(self, subscription_id: int) -> None:
        """Delete a subscription with its outbox and log; UnknownSubscription if none."""

    @abstractmethod
    def disable_subscription(self, subscription_id: int, reason: str) -> None:
        """Stop delivering to a subscription (its pending messages stay, marked failed)."""

    @abstractmethod
    def enable_subscription(self, subscription_id: int) -> Subscription:
        """Deliver to a disabled subscription again (new messages only); UnknownSubscription."""

    @abstractmethod
    def enqueue(self, messages: Sequence[OutboxMessage], *, now: datetime) -> int:
        """Add messages due `now`; one already enqueued for the same event is skipped.

        Returns how many were added.
        """

    @abstractmethod
    def due_messages(self, now: datetime, limit: int = 100) -> list[PendingMessage]:
        """Pending messages of enabled subscriptions whose next attempt is due, oldest first."""

    @abstractmethod
    def record_attempt(
        self,
        message_pk: int,
        *,
        at: datetime,
        status_code: int | None,
        error: str | None,
        duration_ms: int,
        state: MessageState,
        next_attempt_at: datetime | None,
    ) -> None:
        """Log one attempt and move the message on (delivered, retried later, or failed)."""

    @abstractmethod
    def deliveries(self, subscription_id: int, limit: int = 100) -> list[DeliveryAttempt]:
        """The subscription's delivery log, newest first."""

    @abstractmethod
    def event_cursor(self, name: str) -> int | None:
        """A notifier's stored position; None before its first run."""

    @abstractmethod
    def set_event_cursor(self, name: str, position: int) -> None:
        """Store a notifier's position."""

    @abstractmethod
    def events_after(self, position: int, limit: int = 1000) -> list[StoredEvent]:
        """Repo events recorded after `position` (all repos), oldest first."""

    @abstractmethod
    def last_event_position(self) -> int:
        """The position of the newest recorded event; 0 when there is none."""
