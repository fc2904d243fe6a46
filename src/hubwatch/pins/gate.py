"""The ignore list applied to a checked report: accepted findings stop counting, expired entries
are reported and count for nothing, entries that accepted nothing are reported as unused."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import date

from hubwatch.pins.check import PinReport, PinStatus, Report
from hubwatch.pins.findings import ProjectAudit, Waiver
from hubwatch.pins.ignores import Ignore


def _pin(report: PinReport, live: Sequence[Ignore]) -> PinReport:
    repo = report.pin.repo
    if repo is None:
        return report
    waivers: list[Waiver] = []
    changes: set[tuple[str, str]] = set()
    for rc in report.changes:
        sha = rc.revision.sha
        for change in rc.changes:
            entry = next((e for e in live if e.covers_change(repo, change.kind, sha)), None)
            if entry is not None and (sha, change.kind) not in changes:
                changes.add((sha, change.kind))
                waivers.append(Waiver(entry, f"{repo} {sha[:12]} {change.kind}"))
    in_use = report.sha or (report.newest.sha if report.newest else None)
    advisories: set[str] = set()
    own = report.own_advisories
    for match in own.matches if own is not None else ():
        entry = next((e for e in live if e.covers_advisory(match, repo, in_use)), None)
        if entry is not None:
            advisories.add(match.advisory_id)
            waivers.append(Waiver(entry, match.advisory_id))
    status = False
    if report.status in (PinStatus.FLOATING, PinStatus.BEHIND):
        entry = next((e for e in live if e.covers_pin(repo, report.sha)), None)
        if entry is not None:
            status = True
            waivers.append(Waiver(entry, f"{repo} {report.status.value}"))
    return dataclasses.replace(
        report,
        waivers=tuple(waivers),
        waived_changes=frozenset(changes),
        waived_advisories=frozenset(advisories),
        waived_status=status,
    )


def _project(project: ProjectAudit, live: Sequence[Ignore]) -> ProjectAudit:
    waivers: dict[str, Waiver] = {}
    for found in project.matches:
        entry = next((e for e in live if e.covers_advisory(found.match)), None)
        if entry is not None:
            waivers.setdefault(found.match.advisory_id, Waiver(entry, found.match.advisory_id))
    return dataclasses.replace(project, waivers=tuple(waivers.values()))


def apply(report: Report, ignores: Sequence[Ignore], today: date) -> Report:
    """`report` with `ignores` applied as of `today`."""
    live = [e for e in ignores if not e.expired(today)]
    pins = tuple(_pin(p, live) for p in report.pins)
    project = _project(report.project, live) if report.project is not None else None
    used = {id(w.entry) for p in pins for w in p.waivers}
    used |= {id(w.entry) for w in (project.waivers if project is not None else ())}
    return dataclasses.replace(
        report,
        pins=pins,
        project=project,
        expired=tuple(e for e in ignores if e.expired(today)),
        unused=tuple(e for e in live if id(e) not in used),
    )
