"""The store's interface for sharing work between workers: schedules, leases, listing cursors."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol

from hubwatch.models import Claim, RepoStatus, ScheduleEntry, SourceKind, WakePriority


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
        """Every tracked repo with its schedule, by id (read by the page: `schedule_page`)."""

    @abstractmethod
    def schedule_page(
        self, after: str | None, limit: int, due_by: datetime | None = None
    ) -> list[ScheduleEntry]:
        """Up to `limit` tracked repos with their schedules, by id, those after `after`; with
        `due_by`, only those due by then (or never scheduled)."""

    @abstractmethod
    def schedule_for(
        self, repo_ids: Iterable[str], object_ids: Iterable[str] = ()
    ) -> list[ScheduleEntry]:
        """The tracked repos among `repo_ids`, and those with one of the Hub `object_ids`."""

    @abstractmethod
    def tracked_count(self, source: SourceKind) -> int:
        """How many repos of `source` are tracked."""

    @abstractmethod
    def waiting_count(self, priority: WakePriority) -> int:
        """Woken repos of `priority` or less urgent that no worker has claimed yet."""

    @abstractmethod
    def wake(
        self,
        repo_ids: Iterable[str],
        at: datetime,
        hints: Mapping[str, RepoStatus] | None = None,
        priority: WakePriority = WakePriority.CHANGE,
    ) -> int:
        """Ask for a poll of these repos as soon as a worker is free; returns how many exist.

        `hints` gives, per repo, the status a listing reported, handed to the poll. Workers
        claim the most urgent `priority` first; a repo already waiting keeps the more urgent.
        """

    @abstractmethod
    def set_due(self, due: Mapping[str, datetime]) -> None:
        """When each repo's own check is next due."""

    @abstractmethod
    def set_listed(self, repo_ids: Iterable[str], listed: bool) -> None:
        """Record whether the Hub's public listing shows these repos."""

    @abstractmethod
    def claim_repos(self, owner: str, now: datetime, lease_s: float, limit: int = 1) -> list[Claim]:
        """Lease up to `limit` woken repos no live lease holds: most urgent, then oldest wake."""

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
