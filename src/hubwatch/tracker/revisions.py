"""The last step of a poll: each new revision read, estimated, diffed, stored and announced.

Each step is contained to its revision. What stops the poll is only what concerns the whole
repo or the whole run (`aborts`): auth, deletion, a disabled repo, the store failing, and
transient source errors, after which the revision is read again by the next poll (until the
repo has failed `degraded_after` polls in a row: then they too are recorded against the
revision, so a revision that can never be read does not hold the repo back for ever). Anything
else, bugs included, is logged as one line, recorded in the revision's `revision.partial` change,
and the revision is stored with what could be read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache, partial
from typing import TypeVar

import structlog

from hubwatch import metrics
from hubwatch.caching import Memo
from hubwatch.diff import Differ, bounded
from hubwatch.errors import (
    AuthError,
    NotTracked,
    RepoDisabled,
    RepoGated,
    RepoNotFound,
    SourceError,
    StoreError,
)
from hubwatch.lineage.judge import LineageJudge, LineageResult
from hubwatch.models import (
    Change,
    CommitInfo,
    CommitSha,
    Estimate,
    EventKind,
    RepoState,
    RevisionStored,
    Severity,
    Snapshot,
    StoredFile,
)
from hubwatch.models.timestamps import now
from hubwatch.tracker.compare import diff_snapshot
from hubwatch.tracker.digests import with_digests
from hubwatch.tracker.estimate import CONFIG, with_estimate
from hubwatch.tracker.held import LastStored, stored_files
from hubwatch.tracker.identity import with_identity
from hubwatch.tracker.listing import revision_files
from hubwatch.tracker.notable import notable
from hubwatch.tracker.partial import KIND as PARTIAL
from hubwatch.tracker.partial import Partial, partial_of, with_partial
from hubwatch.tracker.record import PollRun, PollStopped, describe, log_crash
from hubwatch.tracker.snapshot import Limits, bare_snapshot, take_snapshot
from hubwatch.tracker.xet import with_reconstructions

log = structlog.get_logger(__name__)
T = TypeVar("T")

Progress = Callable[[int, int, CommitInfo], None]
"""Called after each stored revision with (done, total, commit)."""
RevisionHook = Callable[[RevisionStored], Sequence[Change]]
"""Called after a new revision is stored, with the revision as stored; returns the changes it
stored with the revision (advisories attach here), which the hooks after it see."""

_WHOLE_REPO = (AuthError, RepoNotFound, RepoDisabled, NotTracked, PollStopped)
"""What concerns the repo or the poll as a whole: any other revision would meet it too."""


def aborts(run: PollRun, exc: Exception) -> bool:
    """Whether `exc`, met on one revision, stops the poll instead of being recorded with it.

    Transient source errors and store errors stop it so that the next poll reads the revision
    again; once the repo's polls have failed `degraded_after` times in a row, they no longer
    do, so a revision that always fails cannot hold the repo back (if the store is really down,
    storing the revision fails too, and the poll with it).
    """
    if isinstance(exc, _WHOLE_REPO):
        return True
    retried = isinstance(exc, StoreError) or (isinstance(exc, SourceError) and exc.transient)
    return retried and run.tracked.failures < run.degraded_after


@dataclass(frozen=True)
class RevisionPipeline:
    """What happens to each new revision: snapshot → estimate → diff → store → after_revision."""

    limits: Limits
    differs: Mapping[str, Differ] | None
    """The differs run on each new revision; None: the registry (`diff.DIFFERS`)."""
    hooks: tuple[RevisionHook, ...]
    lineage: LineageJudge = field(default_factory=LineageJudge)
    """Works out each new revision's lineage (as a derivative, and as a base)."""
    memo: Memo = field(default_factory=Memo)
    """What the snapshots and views of its revisions derive from content (parsed JSON, cards,
    tokenizers taken apart, renders): a backfill's next revision reads it again."""

    def store_new(
        self,
        run: PollRun,
        commits: list[CommitInfo],
        known: dict[CommitSha, bool],
        progress: Progress | None,
    ) -> None:
        """Store the `commits` (newest first) not in `known`, oldest first; `known` follows."""
        todo = [commit for commit in reversed(commits) if commit.sha not in known]
        if not todo:
            return
        held = LastStored()  # the parent of the next revision, in a backfill
        # a repo no tracked derivative names at the start of a backfill is judged as a base
        # by none of its revisions: one query per poll, not one per revision
        childless = len(todo) > 1 and self.lineage.childless(run.store, run.repo.repo_id)
        # one reader (a git process, say) for every revision of the poll, not one each
        with run.source.reading(run.repo, todo[-1].sha):
            for done, commit in enumerate(todo, 1):
                structlog.contextvars.bind_contextvars(sha=commit.sha)
                try:
                    self._store_one(run, commit, known, held, childless)
                finally:
                    structlog.contextvars.unbind_contextvars("sha")
                if progress:
                    progress(done, len(todo), commit)

    def _store_one(
        self,
        run: PollRun,
        commit: CommitInfo,
        known: dict[CommitSha, bool],
        held: LastStored,
        childless: bool = False,
    ) -> None:
        failed: list[str] = []
        parent = commit.parents[0] if commit.parents else None
        base = parent if parent in known else None
        # read once for the listing, the diff and the partial (a failed read is not kept)
        base_files = cache(lambda: _files_of(run, held, base))
        snapshot, listed = self._read(run, commit, failed, held, base, base_files)
        snapshot = _contained(
            run,
            "estimate",
            failed,
            lambda: with_estimate(snapshot, run.store.blob, self.memo),
            snapshot,
        )
        if listed and base is not None:
            snapshot = self._reconstructions(run, snapshot, base, failed, held)
        snapshot, found = self._compare(run, snapshot, base, listed, failed, held, base_files)
        snapshot = with_identity(run, snapshot)  # another repo under the name: its first one
        lineage = LineageResult((), ())
        if listed:  # without its files a revision would seem to match nothing
            snapshot, lineage = self._lineage(run, snapshot, childless)
        try:
            written = self._write(run, snapshot, found, held)
        except BaseException:
            held.forget()
            raise
        known[commit.sha] = True
        if written is None:
            return
        self._set_lineage(run, lineage)
        run.result.new.append(commit.sha)
        if found.change() is not None:
            run.result.partial.append(commit.sha)
        changes = with_partial(snapshot, found).changes
        # one line per revision stored, naming what a reader acts on (issue 32)
        log.info(
            "revision_detected",
            sha=commit.sha,
            title=commit.title[:80],
            changes=len(changes),
            notable=notable(changes),
        )
        metrics.REVISIONS.inc()
        metrics.count_changes(changes)
        if run.tracked.head is not None:  # a new commit, not a backfill of old history
            lag = (now() - commit.date).total_seconds()
            metrics.DETECTION_LAG.observe(max(lag, 0.0))
        self._after_revision(run, written, found)

    def _reconstructions(
        self, run: PollRun, snapshot: Snapshot, base: CommitSha, failed: list[str], held: LastStored
    ) -> Snapshot:
        """The snapshot with the Xet terms (or, from a git mirror, the tensor digests) its
        changed weight files' tensor diff reads."""

        def fetch() -> Snapshot:
            source, repo, files = run.source, run.repo, _files_of(run, held, base)
            found = with_reconstructions(source, repo, snapshot, base, files, run.store)
            return with_digests(source, repo, found, base, files, self.limits.max_compare_bytes)

        return _contained(run, "xet", failed, fetch, snapshot)

    def _read(
        self,
        run: PollRun,
        commit: CommitInfo,
        failed: list[str],
        held: LastStored,
        base: CommitSha | None,
        base_files: Callable[[], list[StoredFile]],
    ) -> tuple[Snapshot, bool]:
        """The snapshot, and whether its files could be listed; when reading it failed, the
        commit with the files listed (if they were). What the `held` revision read is not
        looked up in the store. The files: `base`'s with the changes since, where the source
        compares revisions (tracker/listing.py)."""
        repo, what = run.repo, f"{run.repo.repo_id}@{commit.sha[:12]}"
        with run.source.reading(repo, commit.sha):  # one git process for all of it, say
            try:
                files = revision_files(run, commit.sha, base, base_files)
            except Exception as exc:
                _gated(run, exc)
                return bare_snapshot(commit, _failed(run, "file list", exc, failed, [])), False
            known = held.known(run.store)
            take = partial(
                take_snapshot, run.source, repo, commit, known, self.limits, files, self.memo
            )
            try:
                return run.retry.call(take, what), True
            except Exception as exc:
                _gated(run, exc)
                return bare_snapshot(commit, _failed(run, "snapshot", exc, failed, files)), True

    def _compare(
        self,
        run: PollRun,
        snapshot: Snapshot,
        base: CommitSha | None,
        listed: bool,
        failed: list[str],
        held: LastStored,
        files_of_base: Callable[[], list[StoredFile]],
    ) -> tuple[Snapshot, Partial]:
        """The snapshot's changes against `base`, and what it could not read that `base` could
        (with the steps that `failed` on it). Without its file list a revision is not diffed:
        every file would seem removed. `held`: the revision stored last, read from memory when
        it is `base`; `files_of_base` reads its files once for every step."""
        repo_id = run.repo.repo_id
        unchanged = replace(snapshot, base=base, changes=())
        if listed:
            diff = partial(
                diff_snapshot,
                run.store,
                repo_id,
                snapshot,
                base,
                self.differs,
                files_of_base,
                held,
                self.memo,
                self.limits.diff_budget_s,
            )
            snapshot = _contained(run, "diff", failed, diff, unchanged)
        else:
            snapshot = unchanged
        base_files: list[StoredFile] = _contained(run, "partial", failed, files_of_base, [])
        found = partial_of(snapshot, base_files)
        found.steps += failed
        return snapshot, found

    def _lineage(
        self, run: PollRun, snapshot: Snapshot, childless: bool
    ) -> tuple[Snapshot, LineageResult]:
        """The snapshot with its `lineage.*` changes, and the records to set once it is stored.
        A failure is recorded as a `diff.failed` change, like a differ's."""
        try:
            result = self.lineage.judge(run.store, run.repo.repo_id, snapshot, childless)
        except Exception as exc:
            if aborts(run, exc):
                raise
            log_crash("lineage_failed", exc)
            failed = Change(
                "diff.failed", Severity.INFO, f"The lineage step failed: {describe(exc)}"
            )
            return replace(snapshot, changes=(*snapshot.changes, failed)), LineageResult((), ())
        return replace(snapshot, changes=(*snapshot.changes, *result.changes)), result

    def _set_lineage(self, run: PollRun, result: LineageResult) -> None:
        for record in result.records:
            try:
                run.store.set_lineage(record)
            except Exception as exc:  # the revision is stored; the next one sets it again
                log_crash("lineage_not_recorded", exc, derivative=record.repo_id)

    def _write(
        self, run: PollRun, snapshot: Snapshot, found: Partial, held: LastStored
    ) -> Snapshot | None:
        """Store the revision: what was written, or None when it was stored already. What the
        store refuses is left out, and recorded: first what was read from the files (contents,
        estimate, changes), then the file list. `held` keeps it when it is stored whole."""
        for attempt in (snapshot, _listing_only(snapshot), replace(snapshot, files=())):
            written = with_partial(attempt, found)
            # every change within its bounds, whoever made it (differs, lineage, the partial)
            written = replace(written, changes=tuple(map(bounded, written.changes)))
            try:
                stored = run.store.add_revision(run.repo.repo_id, written)
            except Exception as exc:
                if not attempt.files:  # nothing left to leave out
                    raise
                _failed(run, "store", exc, found.steps, None)
                continue
            held.stored(attempt, whole=stored and attempt is snapshot)
            return written if stored else None
        raise AssertionError("unreachable")  # pragma: no cover

    def _after_revision(self, run: PollRun, written: Snapshot, found: Partial) -> None:
        sha = written.commit.sha
        stored = RevisionStored(
            run.repo.repo_id,
            written.commit,
            written.base,
            tuple(stored_files(written)),
            written.card,
            written.changes,
        )
        for hook in self.hooks:
            try:
                added = hook(stored)
            except Exception as exc:  # a hook must never fail the poll; the revision is stored
                name = getattr(hook, "__qualname__", type(hook).__name__)
                log_crash("revision_hook_failed", exc, hook=name)
                found.steps.append(f"after_revision hook {name} failed: {describe(exc)}")
                stored = replace(stored, changes=_record_partial(run, stored.changes, sha, found))
                if sha not in run.result.partial:
                    run.result.partial.append(sha)
                continue
            if added:
                stored = replace(stored, changes=(*stored.changes, *added))


def _files_of(run: PollRun, held: LastStored, base: CommitSha | None) -> list[StoredFile]:
    """The stored files of `base`: from memory when it is the revision held."""
    if base is None:
        return []
    in_memory = held.files(base)
    return in_memory if in_memory is not None else run.store.files(run.repo.repo_id, base)


def _contained(run: PollRun, step: str, failed: list[str], do: Callable[[], T], fallback: T) -> T:
    """`do()`, or `fallback` with the failure recorded when it raises (unless it `aborts`)."""
    try:
        return do()
    except Exception as exc:
        return _failed(run, step, exc, failed, fallback)


def _failed(run: PollRun, step: str, exc: Exception, failed: list[str], fallback: T) -> T:
    """Record that `step` failed on this revision and go on with `fallback`; or re-raise."""
    if aborts(run, exc):
        raise exc
    log_crash("revision_step_failed", exc, step=step)
    failed.append(f"{step} failed: {describe(exc)}")
    return fallback


def _gated(run: PollRun, exc: Exception) -> None:
    if isinstance(exc, RepoGated) and run.tracked.state != RepoState.GATED:
        run.set_state(RepoState.GATED, EventKind.REPO_GATED, str(exc))


def _listing_only(snapshot: Snapshot) -> Snapshot:
    """The commit and its file list, without what was read from the files."""
    estimate = None
    if CONFIG in snapshot.contents:
        estimate = Estimate(ok=False, error="cannot estimate: the revision was stored in part")
    return replace(
        snapshot,
        contents={},
        headers={},
        card=None,
        card_error=None,
        estimate=estimate,
        changes=(),
    )


def _record_partial(
    run: PollRun, changes: tuple[Change, ...], sha: CommitSha, found: Partial
) -> tuple[Change, ...]:
    """Store the revision's `revision.partial` change anew; `changes` with it replaced."""
    change = found.change()
    try:
        run.store.replace_changes(run.repo.repo_id, sha, PARTIAL, [change] if change else [])
    except Exception as exc:  # the store may be what failed; the log has it
        log_crash("revision_partial_not_recorded", exc)
        return changes
    return (*(c for c in changes if c.kind != PARTIAL), *([change] if change else []))
