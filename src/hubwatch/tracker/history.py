"""The second step of a poll: the branch's commits, and which recorded revisions are reachable."""

from __future__ import annotations

from hubwatch.models import CommitInfo, CommitSha, EventKind
from hubwatch.tracker.record import PollRun


def list_history(run: PollRun, known: dict[CommitSha, bool]) -> list[CommitInfo]:
    """The tracked branch's commits newest first, with reachability brought up to date: down to
    the stored head when the branch still holds it, otherwise every one.

    `known` maps each recorded sha to whether it was reachable; recorded revisions missing from
    the listing are marked unreachable (a history_rewritten event) but kept, and those listed
    again are marked reachable.
    """
    repo, head = run.repo, run.tracked.head
    if head is not None and known.get(head):
        # Down to the stored head only: on a linear history every recorded revision is behind
        # it, so a new revision costs a page or so, not the whole history again.
        commits = run.retry.call(
            lambda: run.source.list_commits_since(repo, head), f"{repo.repo_id} commits"
        )
        if commits and commits[-1].sha == head:
            _listed_again(run, known, {commit.sha for commit in commits})
            return commits
    else:
        commits = run.retry.call(lambda: run.source.list_commits(repo), f"{repo.repo_id} commits")
    # the head is gone from the branch (a force push): what else is, only the whole listing says
    _reachability(run, known, commits)
    return commits


def _listed_again(run: PollRun, known: dict[CommitSha, bool], listed: set[CommitSha]) -> None:
    back = [sha for sha, reachable in known.items() if not reachable and sha in listed]
    if back:
        run.store.set_reachable(run.repo.repo_id, back, True)


def _reachability(run: PollRun, known: dict[CommitSha, bool], commits: list[CommitInfo]) -> None:
    repo = run.repo
    listed = {commit.sha for commit in commits}
    gone = [sha for sha, reachable in known.items() if reachable and sha not in listed]
    if gone:
        run.store.set_reachable(repo.repo_id, gone, False)
        run.result.unreachable = gone
    if gone and not run.result.identity_changed:  # that event says why they are gone
        run.event(
            EventKind.HISTORY_REWRITTEN,
            f"{len(gone)} recorded revision(s) no longer reachable from "
            f"{repo.branch}; they are kept",
            sha=gone[0],
        )
    _listed_again(run, known, listed)
