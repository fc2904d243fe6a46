"""Retrying transient source errors with capped exponential backoff and jitter."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import structlog

from hubwatch import metrics
from hubwatch.errors import RateLimited, SourceError

T = TypeVar("T")
log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class RetryPolicy:
    """How transient errors (429, 5xx, timeouts, resets) are retried."""

    attempts: int = 5
    """Retries after the first try."""
    base_s: float = 1.0
    max_wait_s: float = 60.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    rng: random.Random = field(default_factory=random.Random, repr=False)

    def wait_for(self, attempt: int, exc: SourceError) -> float:
        """Seconds to wait before retry number `attempt` (1-based)."""
        if isinstance(exc, RateLimited) and exc.retry_after is not None:
            return min(self.max_wait_s, exc.retry_after + self.rng.uniform(0, self.base_s))
        # "full jitter": spreads retries of many clients (AWS architecture blog, 2015)
        return self.rng.uniform(0, min(self.max_wait_s, self.base_s * 2 ** (attempt - 1)))

    def call(self, fn: Callable[[], T], what: str) -> T:
        """Run `fn`, retrying transient SourceErrors; the last error propagates."""
        attempt = 0
        while True:
            try:
                return fn()
            except SourceError as exc:
                attempt += 1
                if not exc.transient or attempt > self.attempts:
                    raise
                wait = self.wait_for(attempt, exc)
                log.warning(
                    "source_retry",
                    what=what,
                    attempt=attempt,
                    wait_s=round(wait, 2),
                    error=str(exc),
                )
                metrics.RETRIES.inc()
                self.sleep(wait)
