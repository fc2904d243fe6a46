"""Attaching advisories to stored revisions, after each poll and when advisory data changes."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import structlog

from hubwatch.advisories.changes import KIND as ADVISORIES_CHANGED
from hubwatch.advisories.changes import advisory_changes
from hubwatch.advisories.deps import extract, saved_with
from hubwatch.advisories.imports import ImportCache
from hubwatch.advisories.matching import dedupe
from hubwatch.advisories.publish import FeedEntry
from hubwatch.advisories.service import AdvisoryService
from hubwatch.errors import AdvisoryServiceError, HubwatchError, UnknownRevision
from hubwatch.models import (
    AdvisoryMatch,
    Change,
    CommitSha,
    RevisionStored,
    SourceKind,
    StoredFile,
    TrackedRepo,
    redact_url,
)
from hubwatch.store.advisories import AdvisoryStore
from hubwatch.store.changes import ChangeStore
from hubwatch.store.known import KnownContent
from hubwatch.store.repos import RepoStore, RevisionStore, each_repo, repo_pages


class AttachStore(RepoStore, RevisionStore, KnownContent, ChangeStore, AdvisoryStore, Protocol):
    """What attaching advisories reads and writes: revisions, their files, matches and changes."""


log = structlog.get_logger(__name__)

REPO_PAGE = 500
"""Repos whose revisions are read together by a re-check of every revision."""


@dataclass(frozen=True, slots=True)
class AdvisoryAttached:
    """A known advisory newly found to apply to a stored revision."""

    repo_id: str
    sha: CommitSha
    match: AdvisoryMatch


class AdvisoryAttacher:
    """Finds each revision's dependencies and stores the advisories that apply to them."""

    def __init__(
        self, store: AttachStore, service: AdvisoryService, imports: ImportCache | None = None
    ) -> None:
        self._store = store
        self._service = service
        self._imports = imports or ImportCache()
        self.last_error: AdvisoryServiceError | None = None
        """Why the last `attach` could not check (its revision reads `degraded`); None: it did."""
        self._warned: str | None = None
        """The failure last logged as a warning: the same one again (no OSV database, for every
        revision of a backfill) is logged at debug, until a check succeeds (issue 32)."""

    def attach(self, repo_id: str, sha: CommitSha) -> list[AdvisoryAttached]:
        """Check one stored revision; never raises for upstream or data trouble (it is recorded)."""
        self.last_error = None
        revision = self._store.revision(repo_id, sha)
        files = self._store.files(repo_id, sha)
        return self._attach(repo_id, sha, files, revision.card, revision.parents)[0]

    def _attach(
        self,
        repo_id: str,
        sha: CommitSha,
        files: Sequence[StoredFile],
        card: Mapping[str, object] | None,
        parents: Sequence[CommitSha],
    ) -> tuple[list[AdvisoryAttached], list[Change]]:
        """The advisories newly found to apply, and the revision's `advisories.changed` changes
        as stored (none when the service could not be asked)."""
        self.last_error = None
        found = extract(files, self._store.blob, card, self._imports)
        for problem in found.problems:
            log.warning("dependency_unreadable", repo=repo_id, sha=sha, problem=problem)
        # the transformers version a config was saved with is context: whoever loads the model
        # runs their own (issue 28)
        pinned = [d for d in found.dependencies if d.version is not None and not saved_with(d)]
        try:
            answers = self._service.query_all(pinned)
        except AdvisoryServiceError as exc:
            # the stored matches stay (record_advisories with None): a database that cannot
            # be read says nothing about them, and the revision reads `degraded`
            self.last_error = exc
            self._failed(repo_id, sha, exc)
            self._store.record_advisories(
                repo_id, sha, found.dependencies, None, service=self._service.name, error=str(exc)
            )
            return [], []
        self._warned = None
        matches = dedupe([m for found_matches in answers.values() for m in found_matches])
        new = self._store.record_advisories(
            repo_id, sha, found.dependencies, matches, service=self._service.name
        )
        # Which advisories apply, against the parent, is itself a change of this revision.
        before = self._parent_matches(repo_id, parents[0]) if parents else ()
        changes = advisory_changes(before, matches)
        self._store.replace_changes(repo_id, sha, ADVISORIES_CHANGED, changes)
        events = [AdvisoryAttached(repo_id, sha, match) for match in new]
        for event in events:
            log.info(
                "advisory_attached",
                repo=repo_id,
                sha=sha,
                advisory=event.match.advisory_id,
                package=event.match.package,
                version=event.match.version,
            )
        return events, changes

    def _parent_matches(self, repo_id: str, parent: CommitSha) -> tuple[AdvisoryMatch, ...]:
        try:
            return self._store.advisory_report(repo_id, parent).matches
        except UnknownRevision:  # the parent is not stored (history starts later)
            return ()

    def after_revision(self, stored: RevisionStored) -> list[Change]:
        """The tracker's hook: check a revision just stored, and give the changes it added;
        failures are logged, never raised."""
        sha = stored.commit.sha
        try:
            return self._attach(
                stored.repo_id, sha, stored.files, stored.card, stored.commit.parents
            )[1]
        except HubwatchError as exc:
            self._failed(stored.repo_id, sha, exc)
            return []

    def _failed(self, repo_id: str, sha: CommitSha, exc: HubwatchError) -> None:
        """Log a failed check: a warning the first time it fails so, debug after."""
        error = str(exc)
        if error == self._warned:
            log.debug("advisory_check_failed", repo=repo_id, sha=sha, error=error, repeated=True)
            return
        self._warned = error
        log.warning("advisory_check_failed", repo=repo_id, sha=sha, error=error)

    def recheck_all(
        self, progress: Callable[[int, int], None] | None = None
    ) -> list[AdvisoryAttached]:
        """Check every stored revision again (after the advisory data was refreshed);
        `progress(done, total)` is called after each revision.

        Every revision is checked (a failed one keeps its matches and reads `degraded`);
        then, if the service failed on any, AdvisoryServiceError says how many.
        """
        events: list[AdvisoryAttached] = []
        failed: list[AdvisoryServiceError] = []
        done = 0
        for revisions in self._revisions():
            known = done + len(revisions)  # the total so far: repos are read a page at a time
            for repo_id, sha in revisions:
                try:
                    events += self.attach(repo_id, sha)
                except HubwatchError as exc:
                    log.warning("advisory_check_failed", repo=repo_id, sha=sha, error=str(exc))
                if self.last_error is not None:
                    failed.append(self.last_error)
                done += 1
                if progress is not None:
                    progress(done, known)
        if failed:
            raise AdvisoryServiceError(
                f"advisories unknown for {len(failed)} revision(s), their earlier matches "
                f"kept: {failed[0]}"
            )
        return events

    def _revisions(self) -> Iterator[list[tuple[str, CommitSha]]]:
        """Every stored revision, a page of repos at a time: memory flat in the repos."""
        for page in repo_pages(self._store, page=REPO_PAGE):
            yield [
                (tracked.ref.repo_id, revision.sha)
                for tracked in page
                for revision in self._store.history(tracked.ref.repo_id)
            ]


def repo_url(tracked: TrackedRepo, hub_endpoint: str) -> str:
    """Where people find the repo: its Hub page, or the git URL it is tracked from."""
    if tracked.ref.source is SourceKind.GIT and tracked.ref.url:
        return redact_url(tracked.ref.url) or tracked.ref.url
    return f"{hub_endpoint.rstrip('/')}/{tracked.ref.repo_id}"


class StoreChangeFeed:
    """PublishableChanges: every change the store holds, oldest revision first in each repo."""

    def __init__(self, store: AttachStore, hub_endpoint: str) -> None:
        self._store = store
        self._hub = hub_endpoint

    def changes(self) -> Iterator[FeedEntry]:
        for tracked in each_repo(self._store):
            repo_id = tracked.ref.repo_id
            url = repo_url(tracked, self._hub)
            for recorded in self._store.changes(repo_id):
                for change in recorded.changes:
                    revision = recorded.revision
                    yield FeedEntry(
                        repo_id, url, revision.sha, revision.date, change, not revision.parents
                    )
