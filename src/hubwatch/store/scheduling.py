"""The store's interface for sharing work between workers: schedules, leases, listing cursors."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol

from hubwatch.models import Claim, RepoStatus, ScheduleEntry


class ScheduleStore(Protocol):
    """Per-repo schedules and leases, periodic-job leases and listing cursors.

    With PostgreSQL any number of worker processes share one store: a repo is claimed with
    `SELECT … FOR UPDATE SKIP LOCKED` into a lease that expires unless renewed, so the repos of
    a worker that died go back to the others. SQLite serves one worker process at a time
    (`worker_slot`).
    """

    @abstractmethod
    def worker_slot(self, owner: str) -> AbstractContextManager[int]:
        """Hold the right to run a worker as `owner`, and take back at once the leases its dead
        predecessor held (how many: the value); WorkerConflict where this store allows only one
        worker, WorkerIdTaken where a live worker holds `owner`."""

    @abstractmethod
    def schedule_entries(self) -> list[ScheduleEntry]:
        """Every tracked repo with its schedule, by id."""

    @abstractmethod
    def schedule_page(self, after: str | None, limit: int) -> list[ScheduleEntry]:
        """Up to `limit` of `schedule_entries`, those with an id after `after` (keyset pages:
        memory bounded by a page however many repos are tracked)."""

    @abstractmethod
    def wake(
        self,
        repo_ids: Iterable[str],
        at: datetime,
        hints: Mapping[str, RepoStatus] | None = None,
    ) -> int:
        """Ask for a poll of these repos as soon as a worker is free; returns how many exist.

        `hints` gives, per repo, the status a listing reported, handed to the poll.
        """

    @abstractmethod
    def set_due(self, due: Mapping[str, datetime]) -> None:
        """When each repo's own check is next due."""

    @abstractmethod
    def set_listed(self, repo_ids: Iterable[str], listed: bool) -> None:
        """Record whether the Hub's public listing shows these repos."""

    @abstractmethod
    def claim_repos(self, owner: str, now: datetime, lease_s: float, limit: int = 1) -> list[Claim]:
        """Lease up to `limit` woken repos no live lease holds, oldest wake first."""

    @abstractmethod
    def renew_lease(self, repo_id: str, owner: str, until: datetime) -> bool:
        """Extend `owner`'s lease; False if it lost it (expired and claimed by another)."""

    @abstractmethod
    def release_repo(self, repo_id: str, owner: str, *, done: bool, due_at: datetime) -> None:
        """Give the lease back; `done` clears the wake (unless it came after the claim)."""

    @abstractmethod
    def claim_job(self, name: str, owner: str, now: datetime, lease_s: float) -> bool:
        """Whether `owner` may run periodic job `name` now (it is due and nobody runs it)."""

    @abstractmethod
    def renew_job(self, name: str, owner: str, until: datetime) -> bool:
        """Extend `owner`'s hold on job `name`; False if it lost it."""

    @abstractmethod
    def finish_job(self, name: str, owner: str, next_run_at: datetime) -> None:
        """Release job `name` and say when it is next due."""

    @abstractmethod
    def cursor(self, name: str) -> datetime | None:
        """The stored position of a change listing; None before the first read."""

    @abstractmethod
    def set_cursor(self, name: str, value: datetime) -> None:
        """Store the position of a change listing."""
