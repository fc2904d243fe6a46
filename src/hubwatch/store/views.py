"""A stored revision as the read-only view that differs compare, its contents read lazily."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from hubwatch.caching import Memo
from hubwatch.formats.view import RevisionView
from hubwatch.models import CommitSha, StoredFile
from hubwatch.store.estimates import EstimateStore
from hubwatch.store.known import KnownContent
from hubwatch.store.repos import RevisionStore
from hubwatch.store.xet import XetTermsStore


class RevisionReads(RevisionStore, KnownContent, EstimateStore, XetTermsStore, Protocol):
    """What reading a stored revision whole takes: its record, its files, their bytes, its
    estimate, the Xet terms of its weight files."""


FilesOf = Callable[[], Sequence[StoredFile]]
"""The stored files of the revision being viewed, when the caller reads them anyway."""


def stored_view(
    store: RevisionReads,
    repo_id: str,
    sha: CommitSha,
    files: FilesOf | None = None,
    memo: Memo | None = None,
) -> RevisionView:
    """A view of a stored revision, reading contents lazily from the store; `memo` is shared
    with the other views of its maker (a fresh one if None)."""
    revision = store.revision(repo_id, sha)
    return RevisionView.of_stored(
        files() if files is not None else store.files(repo_id, revision.sha),
        revision.card,
        store.blob,
        revision.sha,
        store.estimate(repo_id, revision.sha),
        memo,
        terms=lambda xet_hash: store.xet_terms([xet_hash]).get(xet_hash),
    )
