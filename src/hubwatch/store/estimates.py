"""The store's interface for per-revision estimates (written with the revision itself)."""

from __future__ import annotations

from abc import abstractmethod
from typing import Protocol

from hubwatch.models import CommitSha, Estimate


class EstimateStore(Protocol):
    """Reading the estimate `add_revision` stored from `Snapshot.estimate`, in its transaction."""

    @abstractmethod
    def estimate(self, repo_id: str, sha: CommitSha) -> Estimate | None:
        """The stored estimate of one revision; None when it had no config.json.

        NotTracked / UnknownRevision when the repo or revision is not stored.
        """
