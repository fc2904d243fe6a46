"""The last step of a poll: each new revision read, estimated, diffed, stored and announced."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial

import structlog

from hubwatch import metrics
from hubwatch.diff import Differ
from hubwatch.errors import AuthError, RepoGated
from hubwatch.models import CommitInfo, CommitSha, EventKind, RepoState, Snapshot
from hubwatch.tracker.compare import diff_snapshot
from hubwatch.tracker.estimate import with_estimate
from hubwatch.tracker.record import PollRun, now
from hubwatch.tracker.snapshot import Limits, take_snapshot

log = structlog.get_logger(__name__)

Progress = Callable[[int, int, CommitInfo], None]
"""Called after each stored revision with (done, total, commit)."""
RevisionHook = Callable[[str, CommitSha], None]
"""Called with (repo_id, sha) after a new revision is stored (advisories attach here)."""


@dataclass(frozen=True)
class RevisionPipeline:
    """What happens to each new revision: snapshot → estimate → diff → store → after_revision."""

    limits: Limits
    differs: Mapping[str, Differ] | None
    """The differs run on each new revision; None: the registry (`diff.DIFFERS`)."""
    hooks: tuple[RevisionHook, ...]

    def store_new(
        self,
        run: PollRun,
        commits: list[CommitInfo],
        known: dict[CommitSha, bool],
        progress: Progress | None,
    ) -> None:
        """Store the `commits` (newest first) not in `known`, oldest first; `known` follows."""
        todo = [commit for commit in reversed(commits) if commit.sha not in known]
        for done, commit in enumerate(todo, 1):
            self._store_one(run, commit, known)
            if progress:
                progress(done, len(todo), commit)

    def _store_one(self, run: PollRun, commit: CommitInfo, known: dict[CommitSha, bool]) -> None:
        repo_id = run.repo.repo_id
        snapshot = with_estimate(self._snapshot(run, commit), run.store.blob)
        parent = commit.parents[0] if commit.parents else None
        base = parent if parent in known else None
        snapshot = diff_snapshot(run.store, repo_id, snapshot, base, self.differs)
        stored = run.store.add_revision(repo_id, snapshot)
        known[commit.sha] = True
        if not stored:
            return
        run.result.new.append(commit.sha)
        log.info("revision_detected", sha=commit.sha, title=commit.title[:80])
        metrics.REVISIONS.inc()
        metrics.count_changes(snapshot.changes)
        if run.tracked.head is not None:  # a new commit, not a backfill of old history
            lag = (now() - commit.date).total_seconds()
            metrics.DETECTION_LAG.observe(max(lag, 0.0))
        self._after_revision(repo_id, commit.sha)

    def _snapshot(self, run: PollRun, commit: CommitInfo) -> Snapshot:
        repo = run.repo
        structlog.contextvars.bind_contextvars(sha=commit.sha)
        try:
            return run.retry.call(
                partial(take_snapshot, run.source, repo, commit, run.store, self.limits),
                f"{repo.repo_id}@{commit.sha[:12]}",
            )
        except AuthError as exc:
            if isinstance(exc, RepoGated) and run.tracked.state != RepoState.GATED:
                run.set_state(RepoState.GATED, EventKind.REPO_GATED, str(exc))
            raise
        finally:
            structlog.contextvars.unbind_contextvars("sha")

    def _after_revision(self, repo_id: str, sha: CommitSha) -> None:
        for hook in self.hooks:
            try:
                hook(repo_id, sha)
            except Exception as exc:  # a hook must never fail the poll; the revision is stored
                log.error("revision_hook_failed", sha=sha, error=f"{type(exc).__name__}: {exc}")
