"""Semantic diffs between two revisions: one differ per kind of file, all in one registry.

A differ is a plain callable `(old, new) -> list[Change]` over two read-only `RevisionView`s.
The built-ins register in `DIFFERS` exactly as an extension would:

    from hubwatch.tracker.diff import DIFFERS
    DIFFERS["my_kind"] = my_differ
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

import structlog

from hubwatch.models import Change, CommitSha, Severity, Snapshot
from hubwatch.store.base import Store
from hubwatch.tracker.diff.chat_template import diff_chat_template
from hubwatch.tracker.diff.config import diff_config
from hubwatch.tracker.diff.estimate import diff_estimate
from hubwatch.tracker.diff.files import diff_card, diff_code, diff_files
from hubwatch.tracker.diff.generation import diff_generation
from hubwatch.tracker.diff.tokenizer import diff_tokenizer
from hubwatch.tracker.diff.view import RevisionView
from hubwatch.tracker.diff.weights import diff_weights

log = structlog.get_logger(__name__)

Differ = Callable[[RevisionView, RevisionView], list[Change]]
"""Compares two revisions and returns what changed, classified."""

DIFFERS: dict[str, Differ] = {}
"""Every differ run on each new revision, by name; built-ins and extensions alike."""

DIFFERS.update(
    {
        "files": diff_files,
        "config": diff_config,
        "generation": diff_generation,
        "tokenizer": diff_tokenizer,
        "chat_template": diff_chat_template,
        "weights": diff_weights,
        "code": diff_code,
        "card": diff_card,
        "estimate": diff_estimate,
    }
)

__all__ = ["DIFFERS", "Differ", "RevisionView", "diff_revisions", "diff_snapshot", "diff_stored"]


def diff_revisions(
    old: RevisionView, new: RevisionView, differs: Mapping[str, Differ] | None = None
) -> list[Change]:
    """Every change from `old` to `new`, most severe first; a failing differ is recorded."""
    changes: list[Change] = []
    for name, differ in (DIFFERS if differs is None else differs).items():
        try:
            changes += differ(old, new)
        except Exception as exc:  # untrusted input must never stop a poll
            log.warning("differ_failed", differ=name, error=f"{type(exc).__name__}: {exc}")
            changes.append(
                Change(
                    "diff.failed",
                    Severity.INFO,
                    f"The {name} differ failed: {type(exc).__name__}: {str(exc)[:200]}",
                )
            )
    return sorted(changes, key=lambda change: -change.severity.rank)


def stored_view(store: Store, repo_id: str, sha: CommitSha) -> RevisionView:
    """A view of a stored revision, reading contents lazily from the store."""
    revision = store.revision(repo_id, sha)
    return RevisionView.of_stored(
        store.files(repo_id, revision.sha),
        revision.card,
        store.blob,
        revision.sha,
        store.estimate(repo_id, revision.sha),
    )


def diff_snapshot(
    store: Store,
    repo_id: str,
    snapshot: Snapshot,
    base: CommitSha | None,
    differs: Mapping[str, Differ] | None = None,
) -> Snapshot:
    """The snapshot with its changes against the stored revision `base` (None: an empty one)."""
    old = stored_view(store, repo_id, base) if base else RevisionView.empty()
    changes = diff_revisions(old, RevisionView.of_snapshot(snapshot, store.blob), differs)
    return replace(snapshot, changes=tuple(changes), base=base)


def diff_stored(
    store: Store, repo_id: str, rev_a: str, rev_b: str, differs: Mapping[str, Differ] | None = None
) -> list[Change]:
    """Changes between any two stored revisions (abbreviated shas accepted)."""
    a, b = store.revision(repo_id, rev_a), store.revision(repo_id, rev_b)
    return diff_revisions(
        stored_view(store, repo_id, a.sha), stored_view(store, repo_id, b.sha), differs
    )
