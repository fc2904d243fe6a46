"""Dependencies of a revision and the known advisories that apply to them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from hubwatch.models.ids import AdvisoryId


@dataclass(frozen=True, slots=True)
class Dependency:
    """One thing a revision depends on, as (ecosystem, normalised name, version or range)."""

    ecosystem: str
    """OSV ecosystem name: `PyPI`."""
    name: str
    """PEP 503-normalised package name."""
    version: str | None
    """The exact version when the revision pins one; None for a range or no version at all."""
    spec: str
    """The version constraint as written (`==4.36.0`, `>=2.1`), empty when there is none."""
    source: str
    """Where it was found: the file (`config.json`, `modeling_x.py`), with the line for a
    requirements file (`requirements.txt:3`), so that every pin of a package is kept."""
    reason: str
    """Why it is a dependency, for people: `transformers_version in config.json`."""


class MatchStatus(StrEnum):
    """How sure a match is."""

    AFFECTED = "affected"
    """The pinned version is inside an affected range or list."""
    UNDETERMINED = "undetermined"
    """The version cannot be compared (not PEP 440); the advisory may apply."""


@dataclass(frozen=True, slots=True)
class SeverityScore:
    """One severity entry of an advisory."""

    type: str
    """`CVSS_V3`, `CVSS_V4`, `CVSS_V2` or `Ubuntu`."""
    vector: str
    score: float | None
    """The CVSS base score computed from the vector (v3.0/v3.1 only); None otherwise."""


@dataclass(frozen=True, slots=True)
class AdvisoryMatch:
    """A known advisory that applies to one dependency of a revision."""

    advisory_id: AdvisoryId
    aliases: tuple[str, ...]
    summary: str
    severity: tuple[SeverityScore, ...]
    fixed: tuple[str, ...]
    """Versions that fix it, from the advisory's ranges."""
    package: str
    """Normalised name of the dependency it applies to."""
    version: str | None
    status: MatchStatus
    reason: str
    """Which dependency and why: `transformers 4.36.0 (transformers_version in config.json) …`."""
    modified: str = ""
    """The advisory's `modified` timestamp, as published."""


class AdvisoryStatus(StrEnum):
    """Whether a revision's stored advisories can be trusted."""

    UNCHECKED = "unchecked"
    """Never checked."""
    OK = "ok"
    """The last check answered: the matches are what the advisory data says."""
    DEGRADED = "degraded"
    """The last check failed (no database, a corrupt or stale one, OSV.dev down): the matches
    are those of the last good check, and "none" would be a guess."""


@dataclass(frozen=True, slots=True)
class AdvisoryReport:
    """What is stored about one revision's advisories."""

    dependencies: tuple[Dependency, ...]
    matches: tuple[AdvisoryMatch, ...]
    checked_at: datetime | None
    """When the advisories were last checked; None if never."""
    service: str | None
    """Which AdvisoryService checked (`offline`, `osv`)."""
    error: str | None
    """Why the last check failed; the matches are then those of the check before."""

    @property
    def status(self) -> AdvisoryStatus:
        """UNCHECKED, OK, or DEGRADED when the last check failed."""
        if self.checked_at is None:
            return AdvisoryStatus.UNCHECKED
        return AdvisoryStatus.DEGRADED if self.error else AdvisoryStatus.OK


@dataclass(frozen=True, slots=True)
class Publication:
    """The OSV id assigned to one published change; the same in every database."""

    osv_id: AdvisoryId
    published: datetime
    modified: datetime | None = None
    """When its content last changed (None: never exported since it was published)."""
    withdrawn: datetime | None = None
    """When its change stopped being detected (history rewritten, differs changed)."""
    record: dict[str, Any] | None = field(default=None, compare=False)
    """The record as last exported, to publish it again as withdrawn."""


def publication_id(repo_id: str, sha: str, kind: str, path: str | None, year: int) -> AdvisoryId:
    """`x_HUBWATCH-<year>-<16 hex>`: derived from what the change is, so a fresh database (or
    another hubwatch) gives the same change the same id."""
    key = "\0".join((repo_id, sha, kind, path or ""))
    return AdvisoryId(f"x_HUBWATCH-{year}-{hashlib.sha256(key.encode()).hexdigest()[:16]}")
