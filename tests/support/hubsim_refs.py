"""Hub pull requests for the simulator: `refs/pr/N` heads in a served repo's git dir, which the
simulator's refs endpoint lists under `pullRequests` (with `include_prs=1`, as huggingface_hub's
`HfApi.list_repo_refs(include_pull_requests=True)` asks) and every other route resolves.

NOTE: on the Hub a pull request is a ref `refs/pr/N` that commits are pushed to
(`HfApi.create_commit(revision="refs/pr/N")`); opening one starts it at the tip of `main`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .gitrepo import CommitSpec, add_commits, git


def push_to_pr(
    git_dir: Path,
    number: int,
    files: Mapping[str, bytes | None],
    message: str = "Update files",
    *,
    lfs_dir: Path | None = None,
) -> str:
    """Commit `files` onto pull request `number` of the repo at `git_dir`: on its head, or on
    the tip of `main` when the pull request is new (opening it). Returns the new head."""
    ref = f"refs/pr/{number}"
    branch = f"hubsim-pr-{number}"  # fast-import writes branches: one for the push, then gone
    head = git(git_dir, "for-each-ref", "--format=%(objectname)", ref)
    git(git_dir, "update-ref", f"refs/heads/{branch}", head or git(git_dir, "rev-parse", "main"))
    [sha] = add_commits(git_dir, [CommitSpec(dict(files), message, branch=branch)], lfs_dir=lfs_dir)
    git(git_dir, "update-ref", ref, sha)
    git(git_dir, "update-ref", "-d", f"refs/heads/{branch}")
    return sha


def close_pr(git_dir: Path, number: int) -> None:
    """Close (or merge) pull request `number`: it is no longer listed among the refs."""
    git(git_dir, "update-ref", "-d", f"refs/pr/{number}")


def pr_refs(git_dir: Path) -> dict[int, str]:
    """The repo's open pull requests: number -> head sha."""
    out = git(git_dir, "for-each-ref", "--format=%(refname) %(objectname)", "refs/pr/")
    found = {}
    for line in out.splitlines():
        name, sha = line.split()
        found[int(name.rsplit("/", 1)[-1])] = sha
    return found
