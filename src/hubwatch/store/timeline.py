"""The TimelineStore interface: a repo's filtered, paged timeline and its trend."""

from __future__ import annotations

from abc import abstractmethod
from typing import Protocol

from hubwatch.models import ChangeFilter, TimelinePage, TrendPoint


class TimelineStore(Protocol):
    """What a repo's page reads besides the repo itself: each is a few indexed queries."""

    @abstractmethod
    def timeline(
        self, repo_id: str, where: ChangeFilter, *, offset: int = 0, limit: int = 50
    ) -> TimelinePage:
        """Revisions newest first, `offset` of them skipped, committed since `where.since`:
        when `where.by_change`, only those with a change it takes, with only those changes;
        NotTracked if unknown."""

    @abstractmethod
    def trend(self, repo_id: str, *, limit: int = 200) -> list[TrendPoint]:
        """The newest `limit` revisions' estimates, configs and weight bytes, oldest first;
        NotTracked if unknown."""
