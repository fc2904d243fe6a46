"""SARIF 2.1.0 for code-scanning UIs: each finding at its file and line, named in its message."""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from hubwatch import __version__
from hubwatch.models import AdvisoryMatch, Severity
from hubwatch.pins.check import PinReport, PinStatus, Report
from hubwatch.pins.findings import AdvisoryState

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://pypi.org/project/hubwatch/"
# rule id -> (short description, SARIF level)
RULES: dict[str, tuple[str, str]] = {
    "pin-behind-breaking": ("A breaking change upstream since the pinned revision", "error"),
    "pin-behind-security": ("A security change upstream since the pinned revision", "error"),
    "pin-behind-behavior": ("Outputs change upstream since the pinned revision", "warning"),
    "pin-behind-info": ("Newer revisions upstream, nothing that changes outputs", "note"),
    "pin-advisory": ("The pinned revision brings a known advisory (its own requirements)", "error"),
    "dependency-advisory": ("A known advisory applies to a version the codebase declares", "error"),
    "advisories-unknown": ("The advisory data is missing, empty, damaged or stale", "error"),
    "pin-floating": ("A branch, tag or no revision: the model moves unseen", "warning"),
    "pin-unresolved": ("A model reference the scan cannot evaluate", "note"),
    "pin-unknown": ("The pinned sha is not in the repo's history", "error"),
    "pin-unreachable": ("The pinned revision is no longer in the repo's history", "error"),
    "pin-failed": ("The pinned repo could not be read", "error"),
}


def rule_of(report: PinReport) -> str | None:
    """The rule a pin's own state breaks (its advisories are results of their own); None for a
    current pin with nothing to say."""
    if report.status is PinStatus.BEHIND:
        worst = max(
            (c.severity for rc in report.changes for c in report.counted(rc)),
            key=lambda s: s.rank,
            default=Severity.INFO,
        )
        return f"pin-behind-{worst.value}"
    return {
        PinStatus.FLOATING: "pin-floating",
        PinStatus.UNRESOLVED: "pin-unresolved",
        PinStatus.UNKNOWN: "pin-unknown",
        PinStatus.UNREACHABLE: "pin-unreachable",
        PinStatus.FAILED: "pin-failed",
    }.get(report.status)


def _advisory(m: AdvisoryMatch) -> str:
    aliases = f" ({', '.join(m.aliases)})" if m.aliases else ""
    fixed = f"; fixed in {', '.join(m.fixed)}" if m.fixed else ""
    return f"{m.advisory_id}{aliases}: {m.summary or 'no summary'}{fixed}"


def _message(report: PinReport) -> str:
    pin = report.pin
    what = pin.repo or pin.expression or "a model"
    if report.status is PinStatus.BEHIND:
        counted = [(rc, c) for rc in report.changes for c in report.counted(rc)]
        newest = report.newest.sha[:12] if report.newest else "?"
        head = f"{what} pinned at {pin.ref}: {len(counted)} change(s) up to {newest}"
        if not counted:
            return f"{head} (every one accepted by the ignore list)"
        rc, worst = max(counted, key=lambda pair: pair[1].severity.rank)
        return (
            f"{head}; worst: {worst.kind} ({worst.severity.value}) in {rc.revision.sha[:12]} "
            f'"{rc.revision.title}": {worst.summary}'
        )
    if report.error:
        return f"{what}: {report.error}"
    if report.notes:
        return f"{what}: {report.status.value} ({pin.ref or pin.kind.value}); " + "; ".join(
            report.notes
        )
    return f"{what}: {report.status.value} ({pin.ref or pin.kind.value})"


def _result(
    rule: str, text: str, path: str, line: int, key: str, waived: str | None = None
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": rule,
        "ruleIndex": list(RULES).index(rule),
        "level": RULES[rule][1],
        "message": {"text": text},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": PurePath(path).as_posix()},
                    "region": {"startLine": max(line, 1)},
                }
            }
        ],
        "partialFingerprints": {"pin/v1": key},
    }
    if waived is not None:
        result["suppressions"] = [{"kind": "external", "justification": waived}]
    return result


def _pin_results(p: PinReport) -> list[dict[str, Any]]:
    key = f"{p.pin.repo}:{p.pin.path}:{p.pin.spelling}"
    found = []
    rule = rule_of(p)
    if rule is not None:
        accepted = next(
            (w.entry.reason for w in p.waivers if w.finding.endswith(" floating")), None
        )
        found.append(_result(rule, _message(p), p.pin.path, p.pin.line, key, accepted))
    own = p.own_advisories
    reasons = {w.finding: w.entry.reason for w in p.waivers}
    for m in own.matches if own is not None else ():
        text = f"{p.pin.repo} at {(p.sha or '')[:12]} brings {_advisory(m)}"
        waived = reasons.get(m.advisory_id)
        found.append(
            _result("pin-advisory", text, p.pin.path, p.pin.line, f"{key}:{m.advisory_id}", waived)
        )
    return found


def _project_results(report: Report) -> list[dict[str, Any]]:
    project = report.project
    if project is None:
        return []
    reasons = {w.finding: w.entry.reason for w in project.waivers}
    found = []
    for pm in project.matches:
        d = pm.declared
        text = f"{d.dependency.name} {d.dependency.version} is affected by {_advisory(pm.match)}"
        key = f"{d.path}:{d.dependency.name}:{pm.match.advisory_id}"
        found.append(
            _result(
                "dependency-advisory", text, d.path, d.line, key, reasons.get(pm.match.advisory_id)
            )
        )
    return found


def _unknown_results(report: Report) -> list[dict[str, Any]]:
    if report.advisory_state is not AdvisoryState.UNKNOWN:
        return []
    where = report.project.checked[0] if report.project and report.project.checked else None
    path, line = (where.path, where.line) if where else (report.config or ".", 1)
    if where is None and report.pins:
        path, line = report.pins[0].pin.path, report.pins[0].pin.line
    text = "advisory data unknown, no advisory verdict: " + "; ".join(report.unknown_reasons())
    return [_result("advisories-unknown", text, path, line, "advisories-unknown")]


def report_sarif(report: Report) -> dict[str, Any]:
    """The log: one run, the rules, one result per finding; accepted findings carry a
    suppression with the reason; unknown advisory data fails the invocation."""
    results = [r for p in report.pins for r in _pin_results(p)]
    results += _project_results(report) + _unknown_results(report)
    rules = [
        {"id": rule, "shortDescription": {"text": text}, "defaultConfiguration": {"level": level}}
        for rule, (text, level) in RULES.items()
    ]
    driver = {
        "name": "hubwatch",
        "version": __version__,
        "informationUri": INFORMATION_URI,
        "rules": rules,
    }
    unknown = report.advisory_state is AdvisoryState.UNKNOWN
    invocation: dict[str, Any] = {"executionSuccessful": not unknown}
    if unknown:
        invocation["toolExecutionNotifications"] = [
            {"level": "error", "message": {"text": why}} for why in report.unknown_reasons()
        ]
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, "invocations": [invocation], "results": results}],
    }
