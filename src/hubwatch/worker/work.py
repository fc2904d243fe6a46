"""A worker: runs change discovery when it is its turn, then polls woken repos under a lease.

Any number of workers share one PostgreSQL store. Discovery is a job one worker at a time
claims; repos are claimed one by one with `SELECT … FOR UPDATE SKIP LOCKED` into a lease that
the worker renews after each revision and that expires if the worker dies, so another worker
picks the repo up where the dead one stopped (each revision is stored in one transaction, and
only once).
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

import structlog

from hubwatch import metrics
from hubwatch.errors import NotTracked, StoreUnavailable
from hubwatch.models import CommitInfo, RepoStatus
from hubwatch.store.repos import RepoStore
from hubwatch.store.scheduling import ScheduleStore
from hubwatch.tracker.poll import PollResult, PollStopped, Tracker, crashed
from hubwatch.worker.discovery import Discovery, DiscoveryResult

log = structlog.get_logger(__name__)

DISCOVERY_JOB = "discovery"


class WorkStore(ScheduleStore, RepoStore, Protocol):
    """What the work loop touches: leases and jobs, and a crashed poll's record on its repo."""


def default_owner() -> str:
    """A worker id unique across machines: host, pid and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class _Released(PollStopped):
    """Raised from the progress callback to stop a poll between two revisions."""


@dataclass
class CycleResult:
    """What one worker tick did."""

    discovery: DiscoveryResult | None = None
    """Set when this worker ran discovery in this tick."""
    polls: list[PollResult] = field(default_factory=list)


class Worker:
    """Claims woken repos and polls them; runs discovery when the job is due and free."""

    def __init__(
        self,
        store: WorkStore,
        tracker: Tracker,
        discovery: Discovery,
        *,
        interval_s: float,
        lease_s: float = 300.0,
        owner: str | None = None,
    ) -> None:
        self._store = store
        self._tracker = tracker
        self._discovery = discovery
        self._interval = interval_s
        self._lease_s = lease_s
        self.owner = owner or default_owner()
        self.stopping = threading.Event()
        """Set to stop: the current repo's revision finishes, the rest of it is released."""

    def tick(self) -> CycleResult:
        """Run discovery if it is due and no other worker runs it, then drain woken repos."""
        cycle = CycleResult()
        now = datetime.now(UTC)
        if not self.stopping.is_set() and self._store.claim_job(
            DISCOVERY_JOB, self.owner, now, self._lease_s
        ):
            try:
                cycle.discovery = self._discovery.run(heartbeat=self._renew_job)
            finally:
                next_run = now + timedelta(seconds=self._interval)
                self._store.finish_job(DISCOVERY_JOB, self.owner, next_run)
        cycle.polls = self.drain()
        if cycle.discovery is not None:
            log.info(
                "poll_cycle_finished",
                repos=len(cycle.polls),
                new_revisions=sum(len(r.new) for r in cycle.polls),
                failed=sum(1 for r in cycle.polls if r.error),
                woken=len(cycle.discovery.woken),
            )
        return cycle

    def drain(self) -> list[PollResult]:
        """Poll woken repos one at a time until none is left (or stopping)."""
        results = []
        while not self.stopping.is_set():
            claimed = self._store.claim_repos(self.owner, datetime.now(UTC), self._lease_s)
            if not claimed:
                break
            result = self.poll_one(claimed[0].repo_id, claimed[0].hint)
            if result is not None:
                results.append(result)
        return results

    def poll_one(self, repo_id: str, hint: RepoStatus | None = None) -> PollResult | None:
        """Poll one claimed repo and give its lease back; None if it was released unfinished."""
        structlog.contextvars.bind_contextvars(worker=self.owner)

        def progress(_done: int, _total: int, _commit: CommitInfo) -> None:
            if self.stopping.is_set():
                raise _Released
            until = datetime.now(UTC) + timedelta(seconds=self._lease_s)
            if not self._store.renew_lease(repo_id, self.owner, until):
                log.warning("lease_lost", repo=repo_id)
                raise _Released

        try:
            result = self._tracker.poll(repo_id, progress, hint)
        except _Released:
            metrics.POLLS.labels("released").inc()
            log.info("repo_released", repo=repo_id)
            self._release(repo_id, done=False)
            return None
        except NotTracked:
            self._release(repo_id, done=True)
            return None
        except StoreUnavailable:
            raise  # the tick ends (the store logs the outage once); the lease lapses
        except Exception as exc:  # a worker must outlive any one repo, even a bug
            result = crashed(self._store, repo_id, exc, self._tracker.degraded_after)
        finally:
            structlog.contextvars.unbind_contextvars("worker")
        outcome = "failed" if result.error else "new" if result.new else "idle"
        metrics.POLLS.labels(outcome).inc()
        self._release(repo_id, done=True, listed=result.listed)
        return result

    # -- internals --------------------------------------------------------------------------

    def _release(self, repo_id: str, *, done: bool, listed: bool = False) -> None:
        due = self._discovery.next_due(datetime.now(UTC), listed=listed)
        self._store.release_repo(repo_id, self.owner, done=done, due_at=due)

    def _renew_job(self) -> None:
        until = datetime.now(UTC) + timedelta(seconds=self._lease_s)
        self._store.renew_job(DISCOVERY_JOB, self.owner, until)
