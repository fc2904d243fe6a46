"""CVSS v3.0 / v3.1 base scores computed from their vectors (FIRST's specification, section 7)."""

from __future__ import annotations

import math

_AV = {"N": 0.85, "A": 0.62, "L": 0.55, "P": 0.2}
_AC = {"L": 0.77, "H": 0.44}
_PR_UNCHANGED = {"N": 0.85, "L": 0.62, "H": 0.27}
_PR_CHANGED = {"N": 0.85, "L": 0.68, "H": 0.5}
_UI = {"N": 0.85, "R": 0.62}
_CIA = {"H": 0.56, "L": 0.22, "N": 0.0}
_BASE = ("AV", "AC", "PR", "UI", "S", "C", "I", "A")


def base_score(vector: str) -> float | None:
    """The base score of a `CVSS:3.x/…` vector; None for other versions or a malformed vector.

    CVSS v4 vectors are not scored here (their scoring needs the full macro-vector table);
    they are reported as vector only.
    """
    parts = vector.strip().split("/")
    if not parts or parts[0] not in ("CVSS:3.0", "CVSS:3.1"):
        return None
    metrics: dict[str, str] = {}
    for part in parts[1:]:
        key, sep, value = part.partition(":")
        if not sep or key in metrics:
            return None
        metrics[key] = value
    if any(key not in metrics for key in _BASE):
        return None
    try:
        changed = {"U": False, "C": True}[metrics["S"]]
        pr = (_PR_CHANGED if changed else _PR_UNCHANGED)[metrics["PR"]]
        exploitability = 8.22 * _AV[metrics["AV"]] * _AC[metrics["AC"]] * pr * _UI[metrics["UI"]]
        iss = 1 - ((1 - _CIA[metrics["C"]]) * (1 - _CIA[metrics["I"]]) * (1 - _CIA[metrics["A"]]))
    except KeyError:
        return None
    if changed:
        impact = 7.52 * (iss - 0.029) - 3.25 * (iss - 0.02) ** 15
    else:
        impact = 6.42 * iss
    if impact <= 0:
        return 0.0
    total = min(1.08 * (impact + exploitability) if changed else impact + exploitability, 10.0)
    return _roundup_31(total) if parts[0] == "CVSS:3.1" else math.ceil(total * 10) / 10


def _roundup_31(value: float) -> float:
    """CVSS v3.1 Roundup (Appendix A): avoids float artefacts like ceil(4.000000001)."""
    scaled = round(value * 100_000)
    if scaled % 10_000 == 0:
        return scaled / 100_000.0
    return (math.floor(scaled / 10_000) + 1) / 10.0
