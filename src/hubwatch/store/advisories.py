"""The AdvisoryStore interface: each revision's dependencies, matched advisories, OSV ids."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, Protocol

from hubwatch.models import AdvisoryMatch, AdvisoryReport, CommitSha, Dependency, Publication


class AdvisoryStore(Protocol):
    """Per-revision dependencies and advisories, and the ids of published OSV records."""

    @abstractmethod
    def record_advisories(
        self,
        repo_id: str,
        sha: CommitSha,
        dependencies: Sequence[Dependency],
        matches: Sequence[AdvisoryMatch] | None,
        *,
        service: str,
        error: str | None = None,
    ) -> list[AdvisoryMatch]:
        """Replace the revision's dependencies and (unless None) its matches in one transaction.

        Returns the matches that were not attached before. With `matches=None` (the check
        failed) the stored matches are kept and `error` is recorded.
        """

    @abstractmethod
    def advisory_report(self, repo_id: str, sha: CommitSha) -> AdvisoryReport:
        """What is stored about the revision; UnknownRevision if it is not stored."""

    @abstractmethod
    def publication(
        self, repo_id: str, sha: CommitSha, kind: str, path: str | None, year: int
    ) -> Publication:
        """The id of the record for this change: the stored one, else the next free in `year`."""

    @abstractmethod
    def revise_publication(
        self, osv_id: str, digest: str, record: dict[str, Any], at: datetime
    ) -> datetime:
        """Keep the record as exported now; its `modified`: `at` when its content (`digest`)
        changed since the last export (or it was withdrawn), else the stored one."""

    @abstractmethod
    def withdraw_publications(self, live: Collection[str], at: datetime) -> list[Publication]:
        """Every publication not in `live` (its change is gone), withdrawn at `at` unless it
        already was, with the record last exported for it."""
