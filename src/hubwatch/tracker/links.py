"""A poll's code-links step: the repos whose code a model loads (external `auto_map` targets,
kernel repos) become tracked dependencies, and a dependency's new revisions are reported on each
model that loads it, with the `code_revision` to pin."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import structlog

from hubwatch.caching import Memo
from hubwatch.diff import apply_policy, bounded
from hubwatch.errors import HubwatchError
from hubwatch.formats.links import code_links
from hubwatch.models import Change, CommitSha, RepoRef, Severity
from hubwatch.models.refs import CodeLink, LinkedChanges, LinkOrigin
from hubwatch.models.timestamps import now
from hubwatch.store.repos import is_tracked
from hubwatch.store.views import stored_view
from hubwatch.tracker.estimate import CONFIG
from hubwatch.tracker.record import PollRun, PollStore

log = structlog.get_logger(__name__)

KIND = "code.dependency_changed"
_LISTED = 20
"""Of a dependency's own changes, the detail lists this many."""

Track = Callable[[RepoRef], object]
"""Starts tracking a repo (and backfills it): `Tracker.track`."""


def update_links(run: PollRun, head: CommitSha, track: Track, memo: Memo) -> list[CodeLink]:
    """Record the repos the head's config.json loads code from, and track each one that is
    not tracked yet; what tracking one raises is logged, and tried again at the model's next
    new revision (idle polls work out no links: they would cost every repo queries)."""
    repo_id = run.repo.repo_id
    config = _config(run.store, repo_id, head, memo)
    links = [CodeLink(repo_id, target, kind, via) for target, kind, via in code_links(config)]
    links = [link for link in links if link.target.casefold() != repo_id.casefold()]
    if links or run.store.links_of(repo_id):
        run.store.set_links(repo_id, links)
    for link in links:
        if is_tracked(run.store, link.target):
            continue
        bound = structlog.contextvars.get_contextvars()  # the nested poll unbinds its own
        try:
            track(RepoRef(link.target))
        except HubwatchError as exc:
            log.warning("dependency_not_tracked", dependency=link.target, error=str(exc))
        else:
            log.info("dependency_tracked", dependency=link.target, via=link.via)
        finally:
            structlog.contextvars.bind_contextvars(**bound)
    return links


def report_to_dependents(run: PollRun, before: CommitSha, head: CommitSha) -> int:
    """Report the repo's revisions after `before` up to `head` on every tracked model that loads
    its code: one `code.dependency_changed` each. How many models it was reported on."""
    dependency = run.repo.repo_id
    dependents = run.store.dependents_of(dependency)
    if not dependents:
        return 0
    found = run.store.changes(dependency, since=before)
    changes = [change for revision in found for change in revision.changes]
    for link in dependents:
        change = dependency_change(link, before, head, changes)
        run.store.add_linked_changes(
            LinkedChanges(
                link.repo_id, LinkOrigin.DEPENDENCY, dependency, head, before, (change,), now()
            )
        )
        log.info("dependency_change_reported", model=link.repo_id, head=head)
    return len(dependents)


def dependency_change(
    link: CodeLink, before: CommitSha, head: CommitSha, changes: Sequence[Change]
) -> Change:
    """The change reported on `link.repo_id` when its dependency moved from `before` to `head`
    with `changes`; its severity is the policy's (`code.dependency_changed`)."""
    worst = max(changes, key=lambda c: c.severity.rank).severity if changes else Severity.INFO
    kinds = sorted({c.kind for c in changes})
    said = f"{len(changes)} change(s), the most severe {worst.value}" if changes else "no change"
    # the revision to pin first: a summary longer than the policy's bound is cut at its end
    summary = (
        f"{link.target} changed (pin code_revision={head}): {said}; "
        f"this model loads its code ({link.via})"
    )
    listed = [f"{c.severity.value} {c.kind}: {c.summary}" for c in changes[:_LISTED]]
    if len(changes) > _LISTED:
        listed.append(f"and {len(changes) - _LISTED} more")
    change = Change(
        KIND,
        Severity.SECURITY,
        summary,
        CONFIG,
        {"repo": link.target, "sha": before},
        {
            "repo": link.target,
            "sha": head,
            "code_revision": head,
            "worst": worst.value,
            "kinds": kinds,
        },
        "\n".join(listed) or None,
    )
    return bounded(apply_policy([change])[0])


def _config(store: PollStore, repo_id: str, sha: CommitSha, memo: Memo) -> dict[str, Any]:
    """The revision's root config.json as stored (parsed once per content, in `memo`: the
    revision's differs parsed it already); empty when it has none or it is unreadable."""
    parsed = stored_view(store, repo_id, sha, memo=memo).json(CONFIG)
    return parsed if isinstance(parsed, dict) else {}
