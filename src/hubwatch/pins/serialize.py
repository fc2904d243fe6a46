"""A checked report as plain JSON-able data: the `--json` output and the API's answer."""

from __future__ import annotations

from typing import Any

from hubwatch.models import AdvisoryMatch, AdvisoryReport, RevisionChanges, Severity
from hubwatch.pins.brings import brings
from hubwatch.pins.check import PinReport, Report
from hubwatch.pins.findings import AdvisoryState, ProjectAudit, Waiver, advisory_state
from hubwatch.pins.ignores import Ignore
from hubwatch.pins.model import Pin


def pin_json(pin: Pin) -> dict[str, Any]:
    """What a scan found, as JSON."""
    return {
        "repo": pin.repo,
        "ref": pin.ref,
        "kind": pin.kind.value,
        "path": pin.path,
        "line": pin.line,
        "spelling": pin.spelling,
        "expression": pin.expression,
        "source": "git" if pin.url else "hub",
        "reason": pin.reason,
    }


def _match(match: AdvisoryMatch) -> dict[str, Any]:
    return {
        "id": match.advisory_id,
        "aliases": list(match.aliases),
        "summary": match.summary,
        "package": match.package,
        "version": match.version,
        "fixed": list(match.fixed),
        "severity": [s.vector for s in match.severity],
    }


def _advisories(
    report: AdvisoryReport | None, state: AdvisoryState | None, waived: frozenset[str]
) -> dict[str, Any] | None:
    """What a revision brings: its advisories (of its own requirements), its requirements,
    and the transformers version it was saved with (context, never matched)."""
    if report is None:
        return None
    found = brings(report)
    return {
        "state": state.value if state else None,
        "error": report.error if state is AdvisoryState.UNKNOWN else None,
        "ids": [m.advisory_id for m in report.matches if m.advisory_id not in waived],
        "ignored": sorted(waived),
        "matches": [_match(m) for m in report.matches],
        "requires": [
            {"package": d.name, "spec": d.spec, "version": d.version, "where": d.source}
            for d in found.requires
        ],
        "saved_with": [
            {"package": d.name, "version": d.version, "where": d.source} for d in found.saved_with
        ],
    }


def _waiver(waiver: Waiver) -> dict[str, Any]:
    return {"finding": waiver.finding, **_ignore(waiver.entry)}


def _ignore(entry: Ignore) -> dict[str, Any]:
    return {
        "id": entry.advisory,
        "repo": entry.repo,
        "sha": entry.sha,
        "kind": entry.kind,
        "reason": entry.reason,
        "expires": entry.expires.isoformat() if entry.expires else None,
        "origin": entry.origin,
    }


def _project(project: ProjectAudit | None) -> dict[str, Any] | None:
    if project is None:
        return None
    waived = {w.finding: w for w in project.waivers}
    return {
        "state": project.state.value,
        "error": project.error,
        "service": project.service,
        "checked": [
            {
                "package": d.dependency.name,
                "version": d.dependency.version,
                "path": d.path,
                "line": d.line,
            }
            for d in project.checked
        ],
        "unpinned": [
            {
                "package": d.dependency.name,
                "spec": d.dependency.spec,
                "path": d.path,
                "line": d.line,
            }
            for d in project.unpinned
        ],
        "advisories": [
            {
                **_match(found.match),
                "path": found.declared.path,
                "line": found.declared.line,
                "ignored": _waiver(waived[found.match.advisory_id])
                if found.match.advisory_id in waived
                else None,
            }
            for found in project.matches
        ],
        "problems": list(project.problems),
    }


def _revisions(changes: tuple[RevisionChanges, ...]) -> list[dict[str, Any]]:
    return [
        {
            "sha": rc.revision.sha,
            "date": rc.revision.date.isoformat(),
            "title": rc.revision.title,
            "changes": [
                {"kind": c.kind, "severity": c.severity.value, "summary": c.summary, "path": c.path}
                for c in rc.changes
            ],
        }
        for rc in changes
    ]


def pin_report_json(report: PinReport) -> dict[str, Any]:
    """One checked pin, as JSON."""
    severity = report.severity
    state = report.advisory_state
    return {
        **pin_json(report.pin),
        "status": report.status.value,
        "sha": report.sha,
        "newest": report.newest.sha if report.newest else None,
        "bump_to": report.bump_to,
        "severity": severity.value if severity else None,
        "changes": _revisions(report.changes),
        "dependencies": [
            {
                "repo": lc.source,
                "code_revision": lc.head,
                "changes": [
                    {"kind": c.kind, "severity": c.severity.value, "summary": c.summary}
                    for c in lc.changes
                ],
            }
            for lc in report.dependencies
        ],
        "advisory_state": state.value if state else None,
        "advisories": _advisories(report.advisories, state, report.waived_advisories),
        "newest_advisories": _advisories(
            report.newest_advisories,
            advisory_state(report.newest_advisories, report.advisories_enabled),
            frozenset(),
        ),
        "ignored": [_waiver(w) for w in report.waivers],
        "moved_to": report.moved_to,
        "identity_changed": [c.summary for c in report.identity],
        "suggested": report.suggested.sha if report.suggested else None,
        "notes": report.notes,
        "error": report.error,
    }


def report_json(report: Report, threshold: Severity) -> dict[str, Any]:
    """The whole report, with whether it fails at `threshold`."""
    return {
        "fail_on": threshold.value,
        "failed": report.fails(threshold),
        "exit_code": report.exit_code(threshold),
        "advisory_state": report.advisory_state.value,
        "advisory_errors": report.unknown_reasons(),
        "project": _project(report.project),
        "config": report.config,
        "ignores": {
            "expired": [_ignore(e) for e in report.expired],
            "unused": [_ignore(e) for e in report.unused],
        },
        "pins": [pin_report_json(p) for p in report.pins],
    }
