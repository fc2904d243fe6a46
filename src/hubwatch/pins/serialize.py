"""A checked report as plain JSON-able data: the `--json` output and the API's answer."""

from __future__ import annotations

from typing import Any

from hubwatch.models import AdvisoryReport, RevisionChanges, Severity
from hubwatch.pins.check import PinReport, Report
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


def _advisories(report: AdvisoryReport | None) -> dict[str, Any] | None:
    if report is None:
        return None
    return {
        "checked": report.checked_at is not None,
        "ids": [m.advisory_id for m in report.matches],
        "summaries": {m.advisory_id: m.summary for m in report.matches},
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
    return {
        **pin_json(report.pin),
        "status": report.status.value,
        "sha": report.sha,
        "newest": report.newest.sha if report.newest else None,
        "bump_to": report.bump_to,
        "severity": severity.value if severity else None,
        "changes": _revisions(report.changes),
        "advisories": _advisories(report.advisories),
        "newest_advisories": _advisories(report.newest_advisories),
        "error": report.error,
    }


def report_json(report: Report, threshold: Severity) -> dict[str, Any]:
    """The whole report, with whether it fails at `threshold`."""
    return {
        "fail_on": threshold.value,
        "failed": report.fails(threshold),
        "pins": [pin_report_json(p) for p in report.pins],
    }
