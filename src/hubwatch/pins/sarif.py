"""SARIF 2.1.0 for code-scanning UIs: each pin that needs attention, at its file and line."""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from hubwatch import __version__
from hubwatch.models import Severity
from hubwatch.pins.check import PinReport, PinStatus, Report

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://pypi.org/project/hubwatch/"
# rule id -> (short description, SARIF level)
RULES: dict[str, tuple[str, str]] = {
    "pin-behind-breaking": ("A breaking change upstream since the pinned revision", "error"),
    "pin-behind-security": ("A security change upstream since the pinned revision", "error"),
    "pin-behind-behavior": ("Outputs change upstream since the pinned revision", "warning"),
    "pin-behind-info": ("Newer revisions upstream, nothing that changes outputs", "note"),
    "pin-advisory": ("The pinned revision has known advisories", "error"),
    "pin-floating": ("A branch, tag or no revision: the model moves unseen", "warning"),
    "pin-unresolved": ("A model reference the scan cannot evaluate", "note"),
    "pin-unknown": ("The pinned sha is not in the repo's history", "error"),
    "pin-failed": ("The pinned repo could not be read", "error"),
}


def rule_of(report: PinReport) -> str | None:
    """The rule a pin breaks; None for a current pin with nothing to say."""
    if report.advisories is not None and report.advisories.matches:
        return "pin-advisory"
    if report.status is PinStatus.BEHIND:
        worst = report.severity or Severity.INFO
        return f"pin-behind-{worst.value}"
    return {
        PinStatus.FLOATING: "pin-floating",
        PinStatus.UNRESOLVED: "pin-unresolved",
        PinStatus.UNKNOWN: "pin-unknown",
        PinStatus.FAILED: "pin-failed",
    }.get(report.status)


def _message(report: PinReport) -> str:
    pin = report.pin
    what = pin.repo or pin.expression or "a model"
    if report.status is PinStatus.BEHIND:
        count = sum(len(rc.changes) for rc in report.changes)
        newest = report.newest.sha[:12] if report.newest else "?"
        return f"{what} pinned at {pin.ref}: {count} change(s) up to {newest}"
    if report.error:
        return f"{what}: {report.error}"
    return f"{what}: {report.status.value} ({pin.ref or pin.kind.value})"


def _uri(path: str) -> str:
    return PurePath(path).as_posix()


def report_sarif(report: Report) -> dict[str, Any]:
    """The log: one run, the rules, and one result per pin that a rule applies to."""
    ids = list(RULES)
    results = []
    for p in report.pins:
        rule = rule_of(p)
        if rule is None:
            continue
        results.append(
            {
                "ruleId": rule,
                "ruleIndex": ids.index(rule),
                "level": RULES[rule][1],
                "message": {"text": _message(p)},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": _uri(p.pin.path)},
                            "region": {"startLine": max(p.pin.line, 1)},
                        }
                    }
                ],
                "partialFingerprints": {"pin/v1": f"{p.pin.repo}:{p.pin.path}:{p.pin.spelling}"},
            }
        )
    rules = [
        {
            "id": rule,
            "shortDescription": {"text": text},
            "defaultConfiguration": {"level": level},
        }
        for rule, (text, level) in RULES.items()
    ]
    driver = {
        "name": "hubwatch",
        "version": __version__,
        "informationUri": INFORMATION_URI,
        "rules": rules,
    }
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, "results": results}],
    }
