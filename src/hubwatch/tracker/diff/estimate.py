"""The estimate differ: parameters, serving memory, KV cache and largest batch, old vs new."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hubwatch.estimator.changes import estimate_changes
from hubwatch.estimator.estimate import Estimate
from hubwatch.models import Change
from hubwatch.tracker.diff.view import RevisionView


def diff_estimate(old: RevisionView, new: RevisionView) -> list[Change]:
    """What the config change means in parameters, memory and batch per card."""
    return estimate_changes(_estimate(old.estimate), _estimate(new.estimate))


def _estimate(data: Mapping[str, Any] | None) -> Estimate | None:
    return Estimate.from_json(data) if data else None
