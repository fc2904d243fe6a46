"""What a discovery cycle decided and has not written yet: wakes by priority, due times, listings.

Decisions are written a batch at a time (`flush`), so that a cycle over 100,000 repos holds one
page of them in memory, and a worker may claim the changes found on the first page of the
listing while the cycle goes on.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from hubwatch import metrics
from hubwatch.models import RepoStatus, WakePriority
from hubwatch.store.scheduling import ScheduleStore


@dataclass
class Plan:
    """Decisions waiting to be written to the store."""

    wake: dict[WakePriority, list[str]] = field(default_factory=dict)
    hints: dict[str, RepoStatus] = field(default_factory=dict)
    due: dict[str, datetime] = field(default_factory=dict)
    listed: list[str] = field(default_factory=list)
    woken: list[str] = field(default_factory=list)
    """Every repo woken so far in the cycle (written or not), for its result."""
    changes: int = 0
    """Repos woken as changes in the cycle so far."""

    def add_wake(
        self, repo_id: str, priority: WakePriority, hint: RepoStatus | None = None
    ) -> None:
        self.wake.setdefault(priority, []).append(repo_id)
        if hint is not None:
            self.hints[repo_id] = hint
        self.woken.append(repo_id)
        if priority is WakePriority.CHANGE:
            self.changes += 1

    def flush(self, store: ScheduleStore) -> None:
        """Write what was decided since the last flush."""
        if self.listed:
            store.set_listed(self.listed, True)
        store.set_due(self.due)
        now = datetime.now(UTC)
        for priority in sorted(self.wake):
            ids = self.wake[priority]
            hints = {i: self.hints[i] for i in ids if i in self.hints}
            store.wake(ids, now, hints, priority)
            metrics.DISCOVERY_WOKEN.inc(len(ids))
        self.wake, self.hints, self.due, self.listed = {}, {}, {}, []


def verification_due(repo_id: str, now: datetime, verify_s: float) -> datetime:
    """When a listed repo's next full verification is due: at its own phase of the period.

    Each repo's phase is fixed by its id, so the verifications of 100,000 repos registered in
    one minute are due evenly over the period, every period, instead of in a wave a period
    after their registration. The next phase at least half a period away is taken, so a
    verification that ran late is not repeated at once.
    """
    period = max(verify_s, 1.0)
    digest = hashlib.sha256(repo_id.encode()).digest()
    phase = int.from_bytes(digest[:8], "big") / 2**64 * period
    epoch = now.timestamp()
    start = epoch - epoch % period + phase
    while start < epoch + period / 2:
        start += period
    return now + timedelta(seconds=start - epoch)
