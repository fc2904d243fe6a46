"""The second step of a poll: the branch's commits, and which recorded revisions are reachable."""

from __future__ import annotations

from hubwatch.models import CommitInfo, CommitSha, EventKind
from hubwatch.tracker.record import PollRun


def list_history(run: PollRun, known: dict[CommitSha, bool]) -> list[CommitInfo]:
    """Every commit on the tracked branch, newest first, with reachability brought up to date.

    `known` maps each recorded sha to whether it was reachable; recorded revisions missing from
    the listing are marked unreachable (a history_rewritten event) but kept, and those listed
    again are marked reachable.
    """
    repo = run.repo
    commits = run.retry.call(lambda: run.source.list_commits(repo), f"{repo.repo_id} commits")
    listed = {commit.sha for commit in commits}
    gone = [sha for sha, reachable in known.items() if reachable and sha not in listed]
    back = [sha for sha, reachable in known.items() if not reachable and sha in listed]
    if gone:
        run.store.set_reachable(repo.repo_id, gone, False)
        run.result.unreachable = gone
        run.event(
            EventKind.HISTORY_REWRITTEN,
            f"{len(gone)} recorded revision(s) no longer reachable from "
            f"{repo.branch}; they are kept",
            sha=gone[0],
        )
    if back:
        run.store.set_reachable(repo.repo_id, back, True)
    return commits
