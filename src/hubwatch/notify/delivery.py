"""Delivering the webhook outbox: signed POSTs, exponential backoff over days, a delivery log."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import httpx2
import structlog

from hubwatch import metrics
from hubwatch.errors import WebhookUrlRefused
from hubwatch.models import MessageState, PendingMessage
from hubwatch.notify.pinned import post_pinned
from hubwatch.notify.signing import signed_headers
from hubwatch.notify.urls import UrlPolicy
from hubwatch.store.webhooks import WebhookStore

log = structlog.get_logger(__name__)

MAX_DELAY_S = 8 * 3600.0


@dataclass(frozen=True, slots=True)
class DeliveryRetry:
    """When to try a failed message again, and when to give up."""

    base_s: float = 30.0
    """Delay after the first failed attempt; each later one doubles, up to `max_delay_s`."""
    window_s: float = 3 * 24 * 3600.0
    """A message not delivered this long after it was enqueued is given up."""
    max_delay_s: float = MAX_DELAY_S

    def next_attempt(self, created_at: datetime, attempts: int, now: datetime) -> datetime | None:
        """When to try after `attempts` failed attempts; None: give up."""
        delay = min(self.base_s * 2 ** max(attempts - 1, 0), self.max_delay_s)
        at = now + timedelta(seconds=delay)
        if at > created_at + timedelta(seconds=self.window_s):
            return None
        return at


class WebhookDeliverer:
    """Sends due outbox messages; each attempt is logged, failures are retried later."""

    def __init__(
        self,
        store: WebhookStore,
        client: httpx2.Client,
        retry: DeliveryRetry | None = None,
        urls: UrlPolicy | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._store = store
        self._client = client
        self._retry = retry or DeliveryRetry()
        self._urls = urls or UrlPolicy()
        self._clock = clock

    def deliver_due(self, limit: int = 100) -> int:
        """Attempt every due message once; returns how many were delivered."""
        delivered = 0
        for message in self._store.due_messages(self._clock(), limit):
            if self._attempt(message):
                delivered += 1
        return delivered

    def _attempt(self, message: PendingMessage) -> bool:
        """Send one message once and record how it went; True when it was delivered."""
        started = time.monotonic()
        now = self._clock()
        status, error = self._send(message, now)
        duration_ms = int((time.monotonic() - started) * 1000)
        if error is None:
            self._delivered(message, now, status, duration_ms)
            return True
        self._failed(message, now, status, error, duration_ms)
        return False

    def _send(self, message: PendingMessage, now: datetime) -> tuple[int | None, str | None]:
        """POST the message, signed for `now`, to the addresses its URL check approved.

        Returns the HTTP status (None without an answer) and the error (None when delivered).
        """
        subscription = message.subscription
        try:
            addresses = self._urls.check(subscription.url)
            headers = signed_headers(
                subscription.secret, message.message_id, int(now.timestamp()), message.body
            )
            response = post_pinned(
                self._client, subscription.url, addresses, message.body.encode(), headers
            )
        except WebhookUrlRefused as exc:
            return None, str(exc)
        except httpx2.HTTPError as exc:
            return None, f"{type(exc).__name__}: {exc}"[:500]
        status = response.status_code
        return status, None if 200 <= status < 300 else f"HTTP {status}"

    def _delivered(
        self, message: PendingMessage, now: datetime, status: int | None, duration_ms: int
    ) -> None:
        """Log a delivered attempt; the message is done."""
        self._store.record_attempt(
            message.id,
            at=now,
            status_code=status,
            error=None,
            duration_ms=duration_ms,
            state=MessageState.DELIVERED,
            next_attempt_at=None,
        )
        metrics.WEBHOOK_DELIVERIES.labels("delivered").inc()
        log.info(
            "webhook_delivered",
            subscription=message.subscription.id,
            message=message.message_id,
            attempt=message.attempts + 1,
        )

    def _failed(
        self,
        message: PendingMessage,
        now: datetime,
        status: int | None,
        error: str,
        duration_ms: int,
    ) -> None:
        """Log a failed attempt and set the next one; past the window, disable the subscription."""
        subscription = message.subscription
        retry_at = self._retry.next_attempt(message.created_at, message.attempts + 1, now)
        self._store.record_attempt(
            message.id,
            at=now,
            status_code=status,
            error=error,
            duration_ms=duration_ms,
            state=MessageState.PENDING if retry_at else MessageState.FAILED,
            next_attempt_at=retry_at,
        )
        metrics.WEBHOOK_DELIVERIES.labels("failed").inc()
        log.warning(
            "webhook_attempt_failed",
            subscription=subscription.id,
            message=message.message_id,
            attempt=message.attempts + 1,
            error=error,
            retry_at=retry_at.isoformat() if retry_at else None,
        )
        if retry_at is None:
            reason = (
                f"message {message.message_id} undelivered after "
                f"{message.attempts + 1} attempts: {error}"
            )
            self._store.disable_subscription(subscription.id, reason)
            log.warning("webhook_subscription_disabled", subscription=subscription.id)
