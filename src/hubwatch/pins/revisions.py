"""The upstream revisions a report speaks of, each once however many pins reach it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from hubwatch.models import AdvisoryReport, Change, Severity, StoredRevision
from hubwatch.pins.brings import Brings, brings
from hubwatch.pins.check import PinReport, PinStatus
from hubwatch.pins.declared import Declared


@dataclass
class Described:
    """One upstream revision: its commit, its changes, what it brings, and which pins reach it."""

    repo: str
    revision: StoredRevision | None
    sha: str
    changes: tuple[Change, ...] = ()
    waived: dict[str, str] = field(default_factory=dict)
    """Change kind -> the reason it is accepted."""
    report: AdvisoryReport | None = None
    """Its stored advisories and dependencies, when a pin is at it or would move to it."""
    roles: set[str] = field(default_factory=set)
    """`pinned`, `newest`: what it is to the pins."""

    @property
    def worst(self) -> Severity | None:
        """The worst of its changes that count."""
        counted = [c.severity for c in self.changes if c.kind not in self.waived]
        return max(counted, key=lambda s: s.rank, default=None)

    def brings(self, declared: Sequence[Declared]) -> Brings:
        """What it brings, against the codebase's declared versions."""
        return brings(self.report, declared)


def _reason(report: PinReport, sha: str, kind: str) -> str | None:
    for waiver in report.waivers:
        if waiver.finding == f"{report.pin.repo} {sha[:12]} {kind}":
            return waiver.entry.reason
    return None


def described(reports: Iterable[PinReport]) -> list[Described]:
    """Every revision the reports reach (after a pin, the newest, a pinned one with
    advisories), once each, by repo in order of first mention, oldest first within it."""
    found: dict[tuple[str, str], Described] = {}
    order: list[str] = []

    def at(repo: str, revision: StoredRevision | None, sha: str) -> Described:
        if repo not in order:
            order.append(repo)
        entry = found.setdefault((repo, sha), Described(repo, revision, sha))
        entry.revision = entry.revision or revision
        return entry

    for report in reports:
        repo = report.pin.repo
        if repo is None:
            continue
        for rc in report.changes:
            entry = at(repo, rc.revision, rc.revision.sha)
            entry.changes = entry.changes or rc.changes
            for change in rc.changes:
                why = _reason(report, rc.revision.sha, change.kind)
                if why is not None:
                    entry.waived[change.kind] = why
        if report.newest is not None and report.status in (PinStatus.BEHIND, PinStatus.FLOATING):
            entry = at(repo, report.newest, report.newest.sha)
            entry.report = report.newest_advisories
            entry.roles.add("newest")
        own = report.advisories
        if report.sha is not None and own is not None and own.matches:
            entry = at(repo, report.pinned, report.sha)
            entry.report = own
            entry.roles.add("pinned")
    dates = {key: (d.revision.date.timestamp() if d.revision else 0.0) for key, d in found.items()}
    return sorted(found.values(), key=lambda d: (order.index(d.repo), dates[(d.repo, d.sha)]))
