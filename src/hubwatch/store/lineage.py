"""The LineageStore interface: each tracked derivative's base and staleness."""

from __future__ import annotations

from abc import abstractmethod
from typing import Protocol

from hubwatch.models.lineage import Lineage


class LineageStore(Protocol):
    """One lineage record per tracked derivative, replaced as it or its base changes."""

    @abstractmethod
    def set_lineage(self, lineage: Lineage) -> None:
        """Record `lineage` for `lineage.repo_id`, replacing the one before; NotTracked if the
        derivative is not tracked."""

    @abstractmethod
    def lineage_of(self, repo_id: str) -> Lineage | None:
        """The derivative's lineage record; None when none was worked out."""

    @abstractmethod
    def derivatives_of(self, base_repo_id: str) -> list[Lineage]:
        """Every tracked derivative recorded with this base, by repo id."""
