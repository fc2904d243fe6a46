"""A worker: runs change discovery when it is its turn, then polls woken repos under a lease.

Any number of workers share one PostgreSQL store. Discovery is a job one worker at a time
claims; repos are claimed one by one with `SELECT … FOR UPDATE SKIP LOCKED` into a lease that
the worker renews while the poll runs (and after each revision) and that expires if the worker
dies, so another worker picks the repo up where the dead one stopped (each revision is stored in
one transaction, and only once). A worker polls up to `concurrency` repos at once, each in its
own thread (`pool.py`): one slow repo never delays another, and a stuck one is abandoned.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Protocol

import structlog

from hubwatch import metrics
from hubwatch.errors import NotTracked, StoreUnavailable, WorkerIdTaken
from hubwatch.models import CommitInfo, EventKind, RepoEvent, RepoStatus
from hubwatch.models.timestamps import now as utcnow
from hubwatch.store.repos import RepoStore
from hubwatch.store.scheduling import ScheduleStore
from hubwatch.tracker.poll import PollResult, PollStopped, Tracker, crashed
from hubwatch.tracker.record import log_crash, record_failure
from hubwatch.worker.discovery import Discovery, DiscoveryResult
from hubwatch.worker.pool import PollPool, RunningPoll

log = structlog.get_logger(__name__)

DISCOVERY_JOB = "discovery"


class WorkStore(ScheduleStore, RepoStore, Protocol):
    """What the work loop touches: leases and jobs, and a crashed poll's record on its repo."""


MAX_PER_HOST = 64
"""Default worker ids tried on one host: `host`, `host-2` … `host-64`."""


def default_owner() -> str:
    """A worker id unique across machines: host, pid and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


@contextmanager
def worker_slot(store: ScheduleStore, wanted: str | None = None) -> Iterator[str]:
    """Hold a worker slot in `store`; the id it runs under. `wanted`: that id (WorkerIdTaken
    while a live worker holds it); else the host's name, numbered (`host-2`…) where several
    workers on one host share the store. The same id after a restart is the same worker: the
    leases its dead predecessor held are taken back at once instead of waited out."""
    host = socket.gethostname()
    names = [wanted] if wanted else [host, *(f"{host}-{n}" for n in range(2, MAX_PER_HOST + 1))]
    with ExitStack() as stack:
        for name in names:
            try:
                freed = stack.enter_context(store.worker_slot(name))
            except WorkerIdTaken:
                if name == names[-1]:
                    raise
                continue
            if freed:
                log.info("leases_reclaimed", worker=name, leases=freed)
            yield name
            return


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
        concurrency: int = 4,
        stall_s: float = 1800.0,
        tick_s: float | None = None,
    ) -> None:
        """`concurrency` repos are polled at once; a poll that stores no revision for `stall_s`
        is abandoned; a tick waits up to `tick_s` for its polls (None: until all are done),
        and those still running go on into the next tick."""
        self._store = store
        self._tracker = tracker
        self._discovery = discovery
        self._interval = interval_s
        self._lease_s = lease_s
        self._stall_s = stall_s
        self._tick_s = tick_s
        self.owner = owner or default_owner()
        self.stopping = threading.Event()
        """Set to stop: each running poll's revision finishes, the rest of its repo is released."""
        self._finished: list[PollResult] = []
        """Polls `work` finished since the last discovery, for its cycle's log line."""
        self._finished_lock = threading.Lock()
        self._pool = PollPool(
            concurrency,
            stall_s=stall_s,
            renew_s=lease_s / 3,
            renew=self._renew_lease,
            on_abandon=self._abandon,
        )

    def tick(self) -> CycleResult:
        """Run discovery if it is due and no other worker runs it, then drain woken repos."""
        cycle = CycleResult(self._discover())
        cycle.polls = self.drain(self._tick_s)
        if cycle.discovery is not None:
            _log_cycle(cycle.polls, woken=len(cycle.discovery.woken))
        return cycle

    def discover(self) -> DiscoveryResult | None:
        """Run discovery if it is due and no other worker runs it (None if it did not), and log
        the cycle: the polls `work` finished since the last one, what this one woke."""
        found = self._discover()
        if found is not None:
            with self._finished_lock:
                polls, self._finished = self._finished, []
            _log_cycle(polls, woken=len(found.woken))
        return found

    def work(self) -> list[PollResult]:
        """Fill the free slots with woken repos and collect the polls that end within a tick
        (`tick_s`); the daemon runs it beside `discover`, so a slow discovery (a listing from a
        black-holed Hub) never holds up polls of repos already woken."""
        results = self.drain(self._tick_s)
        with self._finished_lock:
            self._finished += results
        return results

    def _discover(self) -> DiscoveryResult | None:
        now = datetime.now(UTC)
        if self.stopping.is_set() or not self._store.claim_job(
            DISCOVERY_JOB, self.owner, now, self._lease_s
        ):
            return None
        try:
            return self._discovery.run(heartbeat=self._renew_job, stopping=self.stopping.is_set)
        finally:
            next_run = now + timedelta(seconds=self._interval)
            self._store.finish_job(DISCOVERY_JOB, self.owner, next_run)

    def drain(self, budget_s: float | None = None) -> list[PollResult]:
        """Poll woken repos, `concurrency` at a time, until none is left (or stopping); with
        `budget_s`, return after it with the polls still running left to go on."""
        deadline = None if budget_s is None else time.monotonic() + budget_s
        results: list[PollResult] = []
        while True:
            if not self.stopping.is_set():
                self._fill()
            if not self._pool.running:
                break
            left = 1.0 if deadline is None else deadline - time.monotonic()
            if left <= 0:
                break
            results += self._pool.wait(min(1.0, left))
        return results + self._pool.wait(0)

    def wind_down(self) -> list[PollResult]:
        """After `stopping` is set: wait for the running polls to stop at their next revision
        (each bounded by the watchdog), their repos released."""
        self.stopping.set()
        return self.drain()

    def _fill(self) -> None:
        """Claim woken repos into the free slots, each polled in its own thread."""
        while self._pool.free() > 0:
            claimed = self._store.claim_repos(self.owner, datetime.now(UTC), self._lease_s)
            if not claimed:
                return
            repo_id, hint = claimed[0].repo_id, claimed[0].hint
            if self._pool.lingering(repo_id):
                # its abandoned poll still runs here: it is polled again when next due
                log.info("poll_skipped", repo=repo_id, reason="its abandoned poll still runs")
                self._release(repo_id, done=True)
                continue
            self._pool.start(repo_id, partial(self.poll_one, repo_id, hint))

    def poll_one(
        self, repo_id: str, hint: RepoStatus | None = None, poll: RunningPoll | None = None
    ) -> PollResult | None:
        """Poll one claimed repo and give its lease back; None if it was released unfinished
        (or abandoned: the watchdog recorded it). `poll`: its handle in the pool."""
        structlog.contextvars.bind_contextvars(worker=self.owner)

        def progress(done: int, total: int, _commit: CommitInfo) -> None:
            if self.stopping.is_set() or (poll is not None and poll.stop.is_set()):
                raise _Released
            if poll is not None:
                poll.advanced(done, total)
            if not self._renew_lease(repo_id):
                log.warning("lease_lost", repo=repo_id)
                raise _Released

        try:
            result = self._tracker.poll(repo_id, progress, hint)
        except _Released:
            if poll is not None and not self._pool.settle(poll):
                return None
            metrics.POLLS.labels("released").inc()
            log.info("repo_released", repo=repo_id)
            self._release(repo_id, done=False)
            return None
        except NotTracked:
            self._release(repo_id, done=True)
            return None
        except StoreUnavailable:
            raise  # the tick (or the pool's thread) ends quietly: the store logs the outage once
        except Exception as exc:  # a worker must outlive any one repo, even a bug
            if poll is not None and poll.abandoned:
                return None
            result = crashed(self._store, repo_id, exc, self._tracker.degraded_after)
        finally:
            structlog.contextvars.unbind_contextvars("worker")
        if poll is not None and not self._pool.settle(poll):
            return None  # abandoned meanwhile: what it did is stored, the failure recorded
        outcome = "failed" if result.error else "new" if result.new else "idle"
        metrics.POLLS.labels(outcome).inc()
        self._release(repo_id, done=True, listed=result.listed)
        return result

    # -- internals --------------------------------------------------------------------------

    def _release(self, repo_id: str, *, done: bool, listed: bool = False) -> None:
        due = self._discovery.next_due(datetime.now(UTC), listed=listed, repo_id=repo_id)
        self._store.release_repo(repo_id, self.owner, done=done, due_at=due)

    def _renew_lease(self, repo_id: str) -> bool:
        until = datetime.now(UTC) + timedelta(seconds=self._lease_s)
        return self._store.renew_lease(repo_id, self.owner, until)

    def _abandon(self, poll: RunningPoll) -> PollResult:
        """Record a poll the watchdog gave up on, and give its repo back (due as usual)."""
        stored = f"; {poll.done} of {poll.total} new revisions stored" if poll.total else ""
        error = f"poll abandoned: no revision stored in {self._stall_s:g} s{stored}"
        log.warning("poll_abandoned", repo=poll.repo_id, worker=self.owner, error=error)
        metrics.POLLS.labels("abandoned").inc()
        try:
            event = RepoEvent(EventKind.POLL_FAILED, error, None, utcnow())
            self._store.add_event(poll.repo_id, event)
            record_failure(self._store, poll.repo_id, error, self._tracker.degraded_after)
            self._release(poll.repo_id, done=True)
        except Exception as exc:  # the store itself may be what is stuck
            log_crash("poll_abandon_not_recorded", exc, repo=poll.repo_id)
        return PollResult(poll.repo_id, error=error)

    def _renew_job(self) -> None:
        until = datetime.now(UTC) + timedelta(seconds=self._lease_s)
        self._store.renew_job(DISCOVERY_JOB, self.owner, until)


def _log_cycle(polls: list[PollResult], **fields: int) -> None:
    log.info(
        "poll_cycle_finished",
        repos=len(polls),
        new_revisions=sum(len(r.new) for r in polls),
        failed=sum(1 for r in polls if r.error),
        **fields,
    )
