"""Database outages as one process sees them: one log line when one starts, one when it ends."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import structlog

log = structlog.get_logger(__name__)

RETRY_AFTER_S = 5
"""What the API tells a client to wait (`Retry-After`) while the database is unavailable."""
SETTLE_S = 1.0
"""An outage ends at the first success this long after its last failure: a server shutting
down still answers a few statements on the sessions it has not closed yet, and ends them a
moment later (two outages logged for one restart, without it)."""


class Outage:
    """Whether the database answers, for every thread of one process sharing a store.

    A PostgreSQL restart fails every query of every request and job until it is back: the
    store calls `failed` for each, which logs `database_unavailable` once, at the first; the
    API calls `refused` for each request it answers 503; the first operation that succeeds
    again calls `recovered`, which logs `database_available` with how long it lasted and what
    was refused meanwhile (once `SETTLE_S` passed without a failure). Nothing is logged per
    request.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._since: float | None = None
        """When (monotonic) the current outage started; None while the database answers."""
        self._failures = 0
        self._refused = 0
        self.failed_at = 0.0
        """When (monotonic) an operation last failed to reach the database: a pooled
        connection last used before it is checked before it is used again."""

    @property
    def down(self) -> bool:
        """Whether the last operation on the database failed to reach it."""
        return self._since is not None

    def failed(self, reason: str) -> None:
        """An operation could not reach the database (`reason`: the driver's message)."""
        now = self._clock()
        with self._lock:
            self.failed_at = now
            first = self._since is None
            if first:
                self._since, self._failures, self._refused = now, 0, 0
            self._failures += 1
        if first:
            log.warning("database_unavailable", reason=reason)

    def refused(self) -> None:
        """A request was answered "unavailable" because of the outage."""
        with self._lock:
            self._refused += 1

    def recovered(self) -> None:
        """An operation reached the database: the outage, if one was on and none failed for
        `SETTLE_S`, is over."""
        if self._since is None:  # the common case, without the lock: one read per operation
            return
        now = self._clock()
        if now - self.failed_at < SETTLE_S:
            return  # not settled yet: the server may still be going down
        with self._lock:
            if self._since is None or now - self.failed_at < SETTLE_S:
                return
            down_s = now - self._since
            failures, refused = self._failures, self._refused
            self._since = None
        log.info("database_available", down_s=round(down_s, 1), failed=failures, refused=refused)
