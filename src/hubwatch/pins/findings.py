"""What a check finds besides the pins themselves: the state of the advisory data, the advisories
of the codebase's own declared versions, and the ignore entries that accepted a finding."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from hubwatch.models import AdvisoryMatch, AdvisoryReport, AdvisoryStatus
from hubwatch.pins.declared import Declared
from hubwatch.pins.ignores import Ignore


class AdvisoryState(StrEnum):
    """Whether the advisory data behind a verdict could be read."""

    OK = "ok"
    """Checked against advisory data that could be read."""
    UNKNOWN = "unknown"
    """Missing, empty, damaged or stale data, or never checked: "none" would be a guess."""
    OFF = "off"
    """Advisories are turned off (HUBWATCH_ADVISORY_SERVICE=off)."""


def advisory_state(report: AdvisoryReport | None, enabled: bool) -> AdvisoryState:
    """The state of one revision's stored advisories."""
    if not enabled:
        return AdvisoryState.OFF
    if report is None or report.status is not AdvisoryStatus.OK:
        return AdvisoryState.UNKNOWN
    return AdvisoryState.OK


@dataclass(frozen=True, slots=True)
class Waiver:
    """An ignore entry that accepted one finding."""

    entry: Ignore
    finding: str
    """What it accepted: `PYSEC-2024-227`, `org/m 73154ee chat_template.rendered`, `org/m`."""


@dataclass(frozen=True, slots=True)
class ProjectMatch:
    """An advisory that applies to a version the codebase declares for itself."""

    match: AdvisoryMatch
    declared: Declared


@dataclass(frozen=True, slots=True)
class ProjectAudit:
    """The codebase's own declared versions, matched against the advisory data."""

    state: AdvisoryState
    checked: tuple[Declared, ...] = ()
    """The exact versions matched (of the packages that load models, by default)."""
    unpinned: tuple[Declared, ...] = ()
    """Declared by a range only: no version to match (pin it, or add a lockfile)."""
    matches: tuple[ProjectMatch, ...] = ()
    error: str | None = None
    """Why the advisory data could not be read (state UNKNOWN)."""
    service: str | None = None
    problems: tuple[str, ...] = ()
    """Declaration files that could not be read."""
    waivers: tuple[Waiver, ...] = field(default=())

    @property
    def counted(self) -> tuple[ProjectMatch, ...]:
        """The matches no ignore entry accepted."""
        waived = {w.finding for w in self.waivers}
        return tuple(m for m in self.matches if m.match.advisory_id not in waived)
