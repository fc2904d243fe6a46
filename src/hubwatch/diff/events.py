"""Repo events (history rewritten, gated, disabled, deleted…) in the terms of a change."""

from __future__ import annotations

from hubwatch.models import Change, EventKind, RepoEvent, Severity

_EVENTS: dict[EventKind, tuple[str, Severity]] = {
    EventKind.HISTORY_REWRITTEN: ("repo.history_rewritten", Severity.BREAKING),
    EventKind.REPO_GATED: ("repo.gated", Severity.BREAKING),
    EventKind.REPO_DISABLED: ("repo.disabled", Severity.BREAKING),
    EventKind.REPO_DELETED: ("repo.deleted", Severity.BREAKING),
    EventKind.REPO_RENAMED: ("repo.renamed", Severity.INFO),
    EventKind.REPO_IDENTITY_CHANGED: ("repo.identity_changed", Severity.SECURITY),
    EventKind.REPO_UNAVAILABLE: ("repo.unavailable", Severity.BREAKING),
    EventKind.REPO_UNGATED: ("repo.ungated", Severity.INFO),
    EventKind.REPO_RESTORED: ("repo.restored", Severity.INFO),
    EventKind.REPO_DEGRADED: ("repo.degraded", Severity.BEHAVIOR),
    EventKind.REPO_RECOVERED: ("repo.recovered", Severity.INFO),
}


def event_change(event: RepoEvent) -> Change | None:
    """The change an event means to users; None for events that are not changes (poll failed)."""
    known = _EVENTS.get(event.kind)
    if known is None:
        return None
    kind, severity = known
    return Change(kind, severity, event.detail, None, None, event.sha)
