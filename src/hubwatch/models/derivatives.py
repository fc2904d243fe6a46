"""A base's derivatives as shown to users: the source's listing joined with the stored lineage of
those tracked, and the summary of a derivative's missed base changes."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace
from datetime import datetime

from hubwatch.models.change import Severity
from hubwatch.models.ids import CommitSha
from hubwatch.models.lineage import Derivative, Lineage, LineageStatus, Relation

_SEVERITIES = {s.value: s for s in Severity}


@dataclass(frozen=True, slots=True)
class DerivativeStatus:
    """One derivative of a base: what the source lists of it and what is stored of it."""

    repo_id: str
    relation: Relation
    listed: bool
    """The source lists it as derived from the base (False: only the store says so)."""
    tracked: bool
    status: LineageStatus | None = None
    """None: not tracked, or tracked with no lineage worked out yet."""
    base_sha: CommitSha | None = None
    """The base revision it was built from, when one matches."""
    missed: int = 0
    """How many base changes since `base_sha` it did not take."""
    worst: Severity | None = None
    """The most severe of those."""
    last_modified: datetime | None = None
    """When the source last saw it modified."""
    detail: str | None = None


def missed_severities(lineage: Lineage) -> list[Severity]:
    """The severity of each missed base change; entries with none known are left out (they are
    stored JSON, written from upstream changes)."""
    found = (m.get("severity") if isinstance(m, dict) else None for m in lineage.missed)
    return [_SEVERITIES[s] for s in found if isinstance(s, str) and s in _SEVERITIES]


def worst_missed(lineage: Lineage) -> Severity | None:
    """The most severe missed base change, None when none is missed."""
    return max(missed_severities(lineage), key=lambda s: s.rank, default=None)


def from_lineage(lineage: Lineage, *, listed: bool = False) -> DerivativeStatus:
    """A stored lineage record as a row."""
    return DerivativeStatus(
        repo_id=lineage.repo_id,
        relation=lineage.relation,
        listed=listed,
        tracked=True,
        status=lineage.status,
        base_sha=lineage.base_sha,
        missed=len(lineage.missed),
        worst=worst_missed(lineage),
        detail=lineage.detail,
    )


def join_derivatives(
    listed: Iterable[Derivative],
    lineages: Iterable[Lineage],
    tracked: Collection[str] = (),
    *,
    tracked_only: bool = False,
) -> list[DerivativeStatus]:
    """The listed derivatives in the listing's order, each with its stored lineage, then the
    stored ones the listing lacks (by repo id); `tracked`: every tracked repo id, so that a
    tracked derivative with no lineage yet shows as tracked. Ids compare case-insensitively,
    as the Hub's do."""
    stored = {lineage.repo_id.casefold(): lineage for lineage in lineages}
    known = {repo_id.casefold() for repo_id in tracked} | set(stored)
    rows: list[DerivativeStatus] = []
    seen: set[str] = set()
    for item in listed:
        key = item.repo_id.casefold()
        if key in seen or (tracked_only and key not in known):
            continue
        seen.add(key)
        lineage = stored.get(key)
        if lineage is None:
            row = DerivativeStatus(item.repo_id, item.relation, listed=True, tracked=key in known)
        else:
            row = from_lineage(lineage, listed=True)
            if row.relation is Relation.UNKNOWN:  # the card named no relation; the Hub's guess
                row = replace(row, relation=item.relation)
        rows.append(replace(row, last_modified=item.last_modified))
    rows += [from_lineage(stored[k]) for k in sorted(stored) if k not in seen]
    return rows
