"""The ChangeStore interface: the classified changes recorded with each revision."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Protocol

from hubwatch.models import Change, CommitSha, RevisionChanges, Severity


class ChangeStore(Protocol):
    """Changes are written with their revision (`Store.add_revision`, from `Snapshot.changes`)."""

    @abstractmethod
    def changes(
        self,
        repo_id: str,
        *,
        since: str | None = None,
        min_severity: Severity | None = None,
        limit: int | None = None,
    ) -> list[RevisionChanges]:
        """Revisions with recorded changes, oldest first: those after `since` (a sha, full or
        abbreviated) when given, each with its changes at `min_severity` or above; the first
        `limit` of them when given (the next page: `since` the last one's sha)."""

    @abstractmethod
    def replace_changes(
        self, repo_id: str, sha: CommitSha, kind: str, changes: Sequence[Change]
    ) -> None:
        """Set the stored changes of one `kind` of a revision (learned after it was stored,
        like advisories.changed); the revision's other changes stay."""
