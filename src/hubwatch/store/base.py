"""The Store interface: what the tracker and the CLI need from persistence."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from datetime import datetime

from hubwatch.models import (
    CommitSha,
    ContentSha,
    ReadResult,
    RepoEvent,
    RepoRef,
    RepoState,
    Snapshot,
    StoredFile,
    StoredRevision,
    TrackedRepo,
)
from hubwatch.store.advisories import AdvisoryStore
from hubwatch.store.browse import BrowseStore
from hubwatch.store.changes import ChangeStore
from hubwatch.store.estimates import EstimateStore
from hubwatch.store.scheduling import ScheduleStore
from hubwatch.store.webhooks import WebhookStore


class KnownContent(ABC):
    """What is already stored, so that unchanged files and headers are not read again."""

    @abstractmethod
    def content(self, path: str, blob_id: str) -> ReadResult | None:
        """The recorded read of this exact blob at this path, without its bytes."""

    @abstractmethod
    def header(self, object_id: str) -> ReadResult | None:
        """The recorded header read of this weight object (LFS sha256 or blob id)."""

    @abstractmethod
    def blob(self, sha256: ContentSha) -> bytes:
        """Stored bytes by their sha256."""


class Store(
    KnownContent,
    ChangeStore,
    AdvisoryStore,
    EstimateStore,
    ScheduleStore,
    WebhookStore,
    BrowseStore,
):
    """Tracked repos, their revisions, file lists, contents and events.

    Lifecycle: `start()` (runs migrations) before use, `close()` after. Each `add_revision`
    is one transaction: the whole revision is stored or none of it.
    """

    @abstractmethod
    def start(self) -> None:
        """Bring the schema up to date and get ready."""

    @abstractmethod
    def close(self) -> None:
        """Release connections."""

    @abstractmethod
    def add_repo(self, repo: RepoRef) -> bool:
        """Track `repo`; False if it was already tracked (the stored settings are kept)."""

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
        """Record what a poll learned about the repo."""

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
    def add_event(self, repo_id: str, event: RepoEvent) -> None:
        """Record an event."""

    @abstractmethod
    def events(self, repo_id: str) -> list[RepoEvent]:
        """The repo's events, oldest first."""

    @abstractmethod
    def history(self, repo_id: str) -> list[StoredRevision]:
        """The repo's stored revisions, oldest first."""

    @abstractmethod
    def revision(self, repo_id: str, rev: str) -> StoredRevision:
        """One revision by full or abbreviated sha; UnknownRevision if none or ambiguous."""

    @abstractmethod
    def files(self, repo_id: str, sha: CommitSha) -> list[StoredFile]:
        """The files of one stored revision, by path."""
