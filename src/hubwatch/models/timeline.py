"""What a repo's page reads: a filtered page of its timeline, and its trend across revisions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from hubwatch.models.change import Change, Severity
from hubwatch.models.estimate import Estimate
from hubwatch.models.history import RevisionChanges
from hubwatch.models.ids import CommitSha

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".pkl", ".gguf")
"""The files whose sizes add up to a revision's weight bytes (the tracker's list: weights that
are never read whole)."""


@dataclass(frozen=True, slots=True)
class ChangeFilter:
    """Which changes a timeline or feed shows; every field None: all of them."""

    severity: Severity | None = None
    """Only changes of exactly this severity."""
    kind: str | None = None
    """Only changes of this kind or below it: `chat_template` takes `chat_template.rendered`."""
    since: datetime | None = None
    """Only revisions committed at or after this (the date the pages show)."""

    @property
    def by_change(self) -> bool:
        """Whether it picks changes (a severity or a kind): a timeline then shows only the
        revisions with a change it takes; by date alone, every revision since."""
        return self.severity is not None or self.kind is not None

    def takes(self, change: Change) -> bool:
        """Whether `change` passes the severity and kind parts (the date is the revision's)."""
        if self.severity is not None and change.severity is not self.severity:
            return False
        k = self.kind
        return k is None or change.kind == k or change.kind.startswith(f"{k}.")


@dataclass(frozen=True, slots=True)
class TimelinePage:
    """One page of a repo's revisions, newest first, each with the changes the filter takes."""

    revisions: tuple[RevisionChanges, ...]
    more: bool
    """Whether an older page follows."""


@dataclass(frozen=True, slots=True)
class TrendPoint:
    """What one revision stored that its repo's charts draw."""

    sha: CommitSha
    date: datetime
    breaking: bool
    """It recorded a breaking change."""
    estimate: Estimate | None
    """None: no config.json (or no estimate stored)."""
    config: bytes | None
    """Its config.json as stored (the vocabulary size is read from it); None if not stored."""
    weight_bytes: int | None
    """The sizes of its weight files (`WEIGHT_SUFFIXES`) added up; None: it has none."""
