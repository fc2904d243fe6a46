"""The LinkStore interface: a tracked repo's refs, the repos whose code it loads, and the changes
reported on it from either (not from its tracked branch's history)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Protocol

from hubwatch.models import CommitSha, Severity
from hubwatch.models.refs import CodeLink, GitRef, LinkedChanges, RefWatch


class LinkStore(Protocol):
    """Refs and code links are replaced as a whole by each poll; linked changes accumulate."""

    @abstractmethod
    def watch_refs(self, repo_id: str, watch: RefWatch) -> None:
        """Set which refs of the repo are diffed against its branch; NotTracked if unknown."""

    @abstractmethod
    def watched_refs(self, repo_id: str) -> RefWatch:
        """Which refs of the repo are diffed (`RefWatch.NONE` unless set)."""

    @abstractmethod
    def set_refs(self, repo_id: str, refs: Sequence[GitRef]) -> None:
        """Record the repo's refs as listed now; a ref no longer listed is forgotten, and a ref
        whose target moved loses its `diffed` mark."""

    @abstractmethod
    def refs(self, repo_id: str) -> list[GitRef]:
        """The repo's refs as last listed, by ref."""

    @abstractmethod
    def diffed_refs(self, repo_id: str) -> dict[str, CommitSha]:
        """For each ref already diffed against the branch, the target it was diffed at."""

    @abstractmethod
    def mark_diffed(self, repo_id: str, ref: str, target: CommitSha) -> None:
        """Record that `ref` was diffed at `target`."""

    @abstractmethod
    def set_links(self, repo_id: str, links: Sequence[CodeLink]) -> None:
        """Record the repos whose code the repo loads now, replacing those recorded before."""

    @abstractmethod
    def links_of(self, repo_id: str) -> list[CodeLink]:
        """The repos whose code `repo_id` loads, by target."""

    @abstractmethod
    def dependents_of(self, target: str) -> list[CodeLink]:
        """The tracked repos that load code from `target`, by repo id."""

    @abstractmethod
    def add_linked_changes(self, linked: LinkedChanges) -> None:
        """Record changes reported on `linked.repo_id` from a ref or a dependency."""

    @abstractmethod
    def linked_changes(
        self, repo_id: str, *, min_severity: Severity | None = None
    ) -> list[LinkedChanges]:
        """The repo's linked changes, oldest first, each with its changes at `min_severity` or
        above (a record left with none is left out)."""
