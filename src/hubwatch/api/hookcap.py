"""The Hub's daily trigger cap on one webhook, counted as its deliveries arrive.

The Hub delivers at most 1,000 triggers per webhook per day (UTC). At 1,000 changes an hour the
webhook covers the first hour of a day only; the rest of the day the listing walk finds the
changes (within a poll interval). Counting the triggers says when that happens: a warning the
first time the day's count reaches the cap, and a gauge of the count. The count is the
process's own: several `serve` replicas behind one webhook URL each count their share.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, date, datetime

import structlog

from hubwatch import metrics

log = structlog.get_logger(__name__)

HUB_DAILY_CAP = 1_000
"""Triggers the Hub delivers per webhook per day."""


class DailyCap:
    """Counts one webhook's triggers per UTC day (thread-safe)."""

    def __init__(self, cap: int = HUB_DAILY_CAP, today: Callable[[], date] | None = None) -> None:
        self.cap = cap
        self._today = today or (lambda: datetime.now(UTC).date())
        self._lock = threading.Lock()
        self._day: date | None = None
        self._count = 0

    def count(self) -> int:
        """Triggers counted today."""
        with self._lock:
            return self._count if self._day == self._today() else 0

    def spent(self) -> bool:
        """Whether today's triggers have reached the cap: the walk carries the rest of the day."""
        return self.count() >= self.cap

    def arrived(self) -> int:
        """Count one trigger; today's count."""
        with self._lock:
            day = self._today()
            if day != self._day:
                self._day, self._count = day, 0
            self._count += 1
            count = self._count
        metrics.HUB_WEBHOOK_TRIGGERS_TODAY.set(count)
        if count == self.cap:
            log.warning(
                "hub_webhook_cap_reached",
                triggers=count,
                day=str(day),
                detail="the Hub delivers no more triggers today; the listing walk finds the "
                "changes until midnight UTC (within HUBWATCH_POLL_INTERVAL_S)",
            )
        return count
