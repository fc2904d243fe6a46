"""The BrowseStore interface: the reads the API, badges and feeds page through."""

from __future__ import annotations

from abc import abstractmethod
from datetime import datetime
from typing import Protocol

from hubwatch.models import (
    ChangeFilter,
    CommitSha,
    FeedItem,
    HistoryPage,
    HistoryText,
    RepoState,
    RevisionChanges,
    StoredRevision,
)


class BrowseStore(Protocol):
    """Paged and aggregated reads; every method is one or two indexed queries."""

    @property
    def reads_are_local(self) -> bool:
        """Whether these reads are lookups in a local file that wait on no network and no
        writer (an embedded database): the API then makes them on its event loop, where a
        hop to a worker thread cost more than the read itself (issue 15)."""
        return False

    @abstractmethod
    def repo_state(self, repo_id: str) -> RepoState:
        """The repo's polling state alone (a status badge: no count of its revisions)."""

    @abstractmethod
    def history_page(
        self, repo_id: str, *, before: int | None = None, limit: int = 50
    ) -> HistoryPage:
        """Revisions older than position `before` (newest first); NotTracked if unknown."""

    @abstractmethod
    def history_text(
        self, repo_id: str, *, before: int | None = None, limit: int = 50
    ) -> HistoryText:
        """`history_page` with each revision's JSON columns as stored, not decoded."""

    @abstractmethod
    def latest_revision(self, repo_id: str) -> StoredRevision | None:
        """The most recently stored revision still reachable upstream; None before the first."""

    @abstractmethod
    def revision_changes(self, repo_id: str, sha: CommitSha) -> RevisionChanges:
        """One revision with all its recorded changes (maybe none)."""

    @abstractmethod
    def count_changes(
        self, repo_id: str, *, after: CommitSha | None = None, since: datetime | None = None
    ) -> tuple[int, int]:
        """(all changes, breaking changes) the repo recorded after revision `after` (exact sha;
        UnknownRevision if not stored) and in revisions hubwatch recorded since `since` (our
        clock: a commit's date is upstream's to set): what the counting badges show, in one
        range scan."""

    @abstractmethod
    def recent_changes(
        self,
        *,
        repo_id: str | None = None,
        org: str | None = None,
        limit: int = 50,
        where: ChangeFilter | None = None,
    ) -> list[FeedItem]:
        """The latest revisions with changes (of one repo, one org or all), newest first;
        with `where`, those with a change it takes, each with only those changes."""
