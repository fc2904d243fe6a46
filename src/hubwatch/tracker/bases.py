"""`track --with-base`: after a derivative, track the bases its card declares, and theirs, to a
depth limit; cycles and junk ids are refused with a reason, never followed."""

from __future__ import annotations

from dataclasses import dataclass, field

from hubwatch.errors import HubwatchError
from hubwatch.formats.card import declared_bases
from hubwatch.lineage.judge import LineageJudge, LineageReads
from hubwatch.models import RepoRef
from hubwatch.tracker.poll import Tracker
from hubwatch.tracker.revisions import Progress

DEFAULT_BASE_DEPTH = 2
MAX_BASE_DEPTH = 5
"""Bases of bases followed at most: a chain longer than a few models is a card mistake."""


@dataclass
class BaseWalk:
    """What `track_bases` did: the bases tracked (nearest first) and what it refused, and why."""

    tracked: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def track_bases(
    tracker: Tracker,
    store: LineageReads,
    repo_id: str,
    depth: int = DEFAULT_BASE_DEPTH,
    progress: Progress | None = None,
) -> BaseWalk:
    """Track the bases `repo_id` (tracked) declares, level by level down to `depth`, then judge
    each derivative again now that its base is stored (its newest revision's `lineage.stale`)."""
    if not 1 <= depth <= MAX_BASE_DEPTH:
        raise ValueError(f"the base depth is 1 to {MAX_BASE_DEPTH}, not {depth}")
    walk = BaseWalk()
    seen = {repo_id}
    frontier: list[tuple[str, ...]] = [(repo_id,)]  # each: the chain from repo_id down
    for level in range(depth + 1):
        deeper: list[tuple[str, ...]] = []
        for chain in frontier:
            for base in _bases(store, chain[-1], walk):
                if base in chain:
                    cycle = " → ".join((*chain, base))
                    walk.notes.append(f"{chain[-1]} declares {base}: a cycle ({cycle}), refused")
                elif level == depth:
                    walk.notes.append(
                        f"{chain[-1]} declares {base}: past --base-depth {depth}, not tracked"
                    )
                elif base not in seen:
                    seen.add(base)
                    if _track(tracker, base, walk, progress):
                        deeper.append((*chain, base))
        frontier = deeper
    judge = LineageJudge()
    for derivative in (repo_id, *walk.tracked):
        judge.rejudge(store, derivative)
    return walk


def _bases(store: LineageReads, repo_id: str, walk: BaseWalk) -> tuple[str, ...]:
    """The bases the newest stored revision of `repo_id` declares; junk noted in `walk`."""
    newest = next((r for r in reversed(store.history(repo_id)) if r.reachable), None)
    declared = declared_bases(newest.card if newest else None)
    walk.notes += [f"{repo_id}: {reason}, ignored" for reason in declared.ignored]
    return declared.bases


def _track(tracker: Tracker, base: str, walk: BaseWalk, progress: Progress | None) -> bool:
    try:
        result = tracker.track(RepoRef(base), progress)
    except HubwatchError as exc:
        walk.notes.append(f"cannot track base {base}: {exc}")
        return False
    if result.failure is not None:
        walk.notes.append(f"base {base} tracked in part: {result.failure}")
    walk.tracked.append(result.repo_id)
    return True
