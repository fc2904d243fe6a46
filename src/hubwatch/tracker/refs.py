"""A poll's refs step: list the repo's refs and, where asked (`track --refs prs`), diff each open
pull request whose head moved against the tracked branch's head, as linked changes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import structlog

from hubwatch.caching import Memo
from hubwatch.diff import Differ, bounded
from hubwatch.errors import ContentUnavailable
from hubwatch.models import CommitSha
from hubwatch.models.refs import GitRef, LinkedChanges, LinkOrigin, RefKind, RefWatch
from hubwatch.models.timestamps import now
from hubwatch.tracker.compare import diff_snapshot
from hubwatch.tracker.estimate import with_estimate
from hubwatch.tracker.record import PollRun
from hubwatch.tracker.snapshot import Limits, take_snapshot

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class RefsStep:
    """Diffs open pull requests against the branch: one refs request per poll of a repo that
    asked for it, and a snapshot of each pull request head that moved (unchanged files are
    not read again: their blobs are known)."""

    limits: Limits
    differs: Mapping[str, Differ] | None
    memo: Memo

    def run(self, run: PollRun, head: CommitSha) -> None:
        """List the refs and diff each moved pull request head against `head` (the branch's
        head, stored). Source errors end the step, not the poll: the next poll tries again."""
        repo_id = run.repo.repo_id
        if run.store.watched_refs(repo_id) is RefWatch.NONE:
            return
        try:
            refs = run.retry.call(lambda: run.source.list_refs(run.repo), f"{repo_id} refs")
        except ContentUnavailable as exc:
            log.info("refs_unavailable", reason=str(exc))
            return
        run.store.set_refs(repo_id, refs)
        diffed = run.store.diffed_refs(repo_id)
        for ref in refs:
            if ref.kind is RefKind.PULL_REQUEST and diffed.get(ref.ref) != ref.target:
                self._diff(run, ref, head)

    def _diff(self, run: PollRun, ref: GitRef, head: CommitSha) -> None:
        """Record what `ref`'s head would change on the branch, and mark it diffed there."""
        repo_id = run.repo.repo_id
        if ref.target == head:  # merged, or nothing pushed yet: nothing it would change
            run.store.mark_diffed(repo_id, ref.ref, ref.target)
            return
        on_ref = replace(run.repo, branch=ref.ref)
        what = f"{repo_id} {ref.label}"
        commits = run.retry.call(lambda: run.source.list_commits_since(on_ref, head), what)
        commit = next((c for c in commits if c.sha == ref.target), None)
        if commit is None:  # the ref moved between the two requests: the next poll sees it
            return
        snapshot = run.retry.call(
            lambda: take_snapshot(
                run.source, on_ref, commit, run.store, self.limits, memo=self.memo
            ),
            what,
        )
        snapshot = with_estimate(snapshot, run.store.blob, self.memo)
        compared = diff_snapshot(
            run.store,
            repo_id,
            snapshot,
            head,
            self.differs,
            memo=self.memo,
            budget_s=self.limits.diff_budget_s,
        )
        changes = tuple(map(bounded, compared.changes))
        run.store.add_linked_changes(
            LinkedChanges(
                repo_id, LinkOrigin.PULL_REQUEST, ref.ref, ref.target, head, changes, now()
            )
        )
        run.store.mark_diffed(repo_id, ref.ref, ref.target)
        log.info(
            "pull_request_diffed", ref=ref.ref, head=ref.target, base=head, changes=len(changes)
        )
