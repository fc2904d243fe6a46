"""What both estimate differs (a config's, each GGUF model's) say of a moved number."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hubwatch.models import Change, Severity


def relative(before: float, after: float) -> float:
    """How far `after` moved from `before`, as a fraction of `before` (infinite from zero)."""
    return abs(after - before) / before if before else float("inf")


def parameters_change(
    kind: str, path: str, was: Mapping[str, Any], now: Mapping[str, Any], label: str = ""
) -> Change:
    """The parameter count moved from `was` to `now` (`Estimate.params`-shaped): behavior from
    1%, info below; `label` names a GGUF model's quantization."""
    before, after = was.get("total", 0), now.get("total", 0)
    return Change(
        kind,
        Severity.BEHAVIOR if relative(before, after) >= 0.01 else Severity.INFO,
        f"{label + ': ' if label else ''}parameters {before:,} → {after:,} ({after - before:+,})",
        path,
        {"total": before, "active": was.get("active")},
        {"total": after, "active": now.get("active")},
    )
