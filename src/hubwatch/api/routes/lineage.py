"""Lineage: a tracked derivative's base and staleness, a base's tracked derivatives, and the
`stale` badge."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException

from hubwatch.api.deps import StoreDep, repo_path, require_reader
from hubwatch.api.schemas import Badge, DerivativePublic, LineagePublic, MissedChangePublic
from hubwatch.models import Severity
from hubwatch.models.derivatives import worst_missed
from hubwatch.models.lineage import Lineage, LineageStatus
from hubwatch.store.lineage import LineageStore

router = APIRouter(prefix="/api/v1", tags=["lineage"], dependencies=[Depends(require_reader)])

_SEVERITIES = {s.value: s for s in Severity}
_MOST = 2000
"""Characters kept of each stored string of a missed change (they come from upstream)."""


def missed_public(entry: Any) -> MissedChangePublic:
    """One stored missed change; a field of another type than expected is left out."""
    data = entry if isinstance(entry, dict) else {}

    def text(key: str) -> str | None:
        value = data.get(key)
        return value[:_MOST] if isinstance(value, str) else None

    severity = data.get("severity")
    return MissedChangePublic(
        sha=text("sha"),
        kind=text("kind"),
        severity=_SEVERITIES.get(severity) if isinstance(severity, str) else None,
        summary=text("summary"),
        path=text("path"),
    )


def lineage_public(lineage: Lineage) -> LineagePublic:
    return LineagePublic(
        repo_id=lineage.repo_id,
        sha=lineage.sha,
        base_repo_id=lineage.base_repo_id,
        relation=lineage.relation.value,
        status=lineage.status.value,
        base_sha=lineage.base_sha,
        missed=[missed_public(m) for m in lineage.missed],
        worst=worst_missed(lineage),
        aspects=list(lineage.aspects),
        checked_at=lineage.checked_at,
        detail=lineage.detail,
    )


def derivative_public(lineage: Lineage) -> DerivativePublic:
    return DerivativePublic(
        repo_id=lineage.repo_id,
        relation=lineage.relation.value,
        status=lineage.status.value,
        base_sha=lineage.base_sha,
        missed=len(lineage.missed),
        worst=worst_missed(lineage),
        checked_at=lineage.checked_at,
        detail=lineage.detail,
    )


@router.get("/repos/{org}/{name}/lineage", responses={404: {"description": "None worked out"}})
def get_lineage(org: str, name: str, store: StoreDep) -> LineagePublic:
    """A tracked derivative's base, the base revision it was built from, and the base's changes
    since that it did not take; 404 when the repo declares no base or none was worked out."""
    repo_id = repo_path(org, name)
    lineage = store.lineage_of(repo_id)
    if lineage is None:
        raise HTTPException(404, f"no lineage worked out for {repo_id}")
    return lineage_public(lineage)


@router.get("/repos/{org}/{name}/derivatives")
def list_derivatives(org: str, name: str, store: StoreDep) -> list[DerivativePublic]:
    """The tracked derivatives that declare this repo as their base, with their status (the
    Hub's full listing is the CLI's `hubwatch derivatives`)."""
    return [derivative_public(d) for d in store.derivatives_of(repo_path(org, name))]


_STALE_COLOR = {
    Severity.BREAKING: "red",
    Severity.SECURITY: "red",
    Severity.BEHAVIOR: "orange",
    Severity.INFO: "orange",
}


def stale_badge(store: LineageStore, repo_id: str) -> Badge:
    """Whether a tracked derivative is current with its base; NotTracked if it is not tracked."""
    lineage = store.lineage_of(repo_id)
    if lineage is None:
        return Badge(label="base", message="no base", color="lightgrey")
    if lineage.status is LineageStatus.CURRENT:
        return Badge(label="base", message="current", color="green")
    if lineage.status is LineageStatus.STALE:
        count = len(lineage.missed)
        worst = worst_missed(lineage)
        return Badge(
            label="stale",
            message=f"{count} change{'' if count == 1 else 's'}",
            color=_STALE_COLOR[worst] if worst else "orange",
        )
    if lineage.status is LineageStatus.UNMATCHED:
        return Badge(label="base", message="unmatched", color="grey")
    return Badge(label="base", message="base not tracked", color="lightgrey")
