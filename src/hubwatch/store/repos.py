"""The RepoStore and RevisionStore interfaces: tracked repos, their events, revisions and files."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Protocol

from hubwatch.errors import NotTracked
from hubwatch.models import (
    CommitSha,
    RepoEvent,
    RepoIdentity,
    RepoRef,
    RepoState,
    Snapshot,
    StoredFile,
    StoredRevision,
    TrackedRepo,
)


class RepoLookup(Protocol):
    """Reads one tracked repo: the least a caller that only asks "is it tracked?" needs."""

    def get_repo(self, repo_id: str) -> TrackedRepo:
        """One tracked repo; NotTracked if unknown."""
        ...


def is_tracked(store: RepoLookup, repo_id: str) -> bool:
    """Whether `repo_id` is tracked in `store`."""
    try:
        store.get_repo(repo_id)
    except NotTracked:
        return False
    return True


class RepoPages(Protocol):
    """Reads the tracked repos a page at a time: what a listing of any size needs."""

    def repos_page(
        self, after: str | None = None, limit: int = 1000, offset: int = 0
    ) -> list[TrackedRepo]:
        """Up to `limit` tracked repos by id after `after`, the first `offset` skipped."""
        ...


PAGE = 1000
"""Repos read at a time by `each_repo`: memory bounded by a page, not by the repos tracked."""


def repo_pages(
    store: RepoPages, *, offset: int = 0, limit: int | None = None, page: int = PAGE
) -> Iterator[list[TrackedRepo]]:
    """The tracked repos by id, a page of up to `page` at a time; the first `offset` skipped,
    at most `limit` of them (None: all)."""
    after: str | None = None
    left = limit
    while left is None or left > 0:
        size = page if left is None else min(page, left)
        found = store.repos_page(after, size, offset)
        if found:
            yield found
        if len(found) < size:
            return
        after, offset = found[-1].ref.repo_id, 0
        if left is not None:
            left -= len(found)


def each_repo(
    store: RepoPages, *, offset: int = 0, limit: int | None = None, page: int = PAGE
) -> Iterator[TrackedRepo]:
    """The tracked repos by id, read a page at a time (`repo_pages`), one by one."""
    for found in repo_pages(store, offset=offset, limit=limit, page=page):
        yield from found


class RepoPins(Protocol):
    """When a codebase's pins last named each repo: discovery verifies the repos pinned lately
    before the others."""

    @abstractmethod
    def mark_pinned(self, repo_ids: Iterable[str], at: datetime) -> int:
        """Record that a pin named each of these repos at `at` (a later time recorded already
        is kept); how many were marked. Those not tracked are skipped."""


class RepoStore(Protocol):
    """The tracked repos, what polls learned about them, and their events."""

    @abstractmethod
    def add_repo(self, repo: RepoRef) -> bool:
        """Track `repo`; False if it was already tracked (the stored settings are kept)."""

    @abstractmethod
    def add_repos(self, repos: Iterable[RepoRef]) -> int:
        """Track many repos at once, none of them polled (a worker's first poll reads them);
        how many were new. Those already tracked are skipped, their settings kept."""

    @abstractmethod
    def remove_repo(self, repo_id: str) -> None:
        """Stop tracking and forget the repo's history; NotTracked if unknown."""

    @abstractmethod
    def get_repo(self, repo_id: str) -> TrackedRepo:
        """One tracked repo; NotTracked if unknown."""

    @abstractmethod
    def list_repos(self) -> list[TrackedRepo]:
        """Every tracked repo, by id."""

    @abstractmethod
    def repos_page(
        self, after: str | None = None, limit: int = 1000, offset: int = 0
    ) -> list[TrackedRepo]:
        """Up to `limit` tracked repos by id, those with an id after `after` (a keyset: each
        page one indexed query, however many repos), the first `offset` of them skipped."""

    @abstractmethod
    def update_repo(
        self,
        repo_id: str,
        *,
        state: RepoState | None = None,
        head: CommitSha | None = None,
        polled_at: datetime | None = None,
        error: str | None = None,
        clear_error: bool = False,
        renamed_to: str | None = None,
    ) -> None:
        """Record what a poll learned about the repo; `clear_error` also resets its failures."""

    @abstractmethod
    def set_identity(self, repo_id: str, identity: RepoIdentity) -> None:
        """Record the Hub's ids of the repo behind `repo_id` (what later polls compare with)."""

    @abstractmethod
    def rename_repo(self, repo_id: str, new_id: str) -> bool:
        """Track the repo under `new_id` from now on, `repo_id` kept among its former ids;
        False (nothing changed) when `new_id` is tracked already."""

    @abstractmethod
    def find_repo(
        self, *, object_id: str | None = None, former_id: str | None = None
    ) -> str | None:
        """The id of the tracked repo with this Hub object id, or that was tracked under
        `former_id` before a rename it followed; None: none."""

    @abstractmethod
    def record_failure(self, repo_id: str, error: str, polled_at: datetime) -> int:
        """Record a poll that failed with `error`; how many polls in a row have failed now."""

    @abstractmethod
    def add_event(self, repo_id: str, event: RepoEvent) -> None:
        """Record an event."""

    @abstractmethod
    def events(self, repo_id: str) -> list[RepoEvent]:
        """The repo's events, oldest first."""


class RevisionStore(Protocol):
    """A tracked repo's stored revisions and their files.

    Each `add_revision` is one transaction: the whole revision is stored or none of it.
    """

    @abstractmethod
    def known_shas(self, repo_id: str) -> dict[CommitSha, bool]:
        """Every stored sha of the repo, with whether it is still reachable upstream."""

    @abstractmethod
    def add_revision(self, repo_id: str, snapshot: Snapshot) -> bool:
        """Store one revision atomically; False if it was already stored (idempotent)."""

    @abstractmethod
    def set_reachable(self, repo_id: str, shas: Iterable[CommitSha], reachable: bool) -> None:
        """Mark revisions as (no longer) reachable from the tracked branch; never deletes."""

    @abstractmethod
    def history(self, repo_id: str) -> list[StoredRevision]:
        """The repo's stored revisions, oldest first."""

    @abstractmethod
    def revision(self, repo_id: str, rev: str) -> StoredRevision:
        """One revision by full or abbreviated sha; UnknownRevision if none or ambiguous."""

    @abstractmethod
    def files(self, repo_id: str, sha: CommitSha) -> list[StoredFile]:
        """The files of one stored revision, by path."""

    @abstractmethod
    def last_read(
        self, repo_id: str, paths: Iterable[str], before: CommitSha
    ) -> dict[str, CommitSha]:
        """For each of `paths`, the newest revision stored before `before` in which its content
        was read and stored: what a file deleted (or unreadable) and back again is compared
        with. A path no earlier revision read is left out."""
