"""Who is behind a name, in the Hub simulator: object ids, renames, re-creation, super-squash.

The Hub gives every repo an object id (`_id` in its model info, a MongoDB ObjectId: 24 hex
digits; the real trace tests/data/hub-traces/ref-download-plain.json exchange 2 has the key, its
value redacted) and a creation time (`createdAt`). A rename (`HfApi.move_repo`) keeps both, and
the old name answers with a redirect to the new one; a repo deleted and created again under the
same name gets new ones. A super-squash (`HfApi.super_squash_history`) replaces a branch's
history with one commit holding its current files.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from pathlib import Path

from .gitrepo import git


class RepoIdentities:
    """The object id and creation time of each simulated repo, by the name it answers under."""

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}
        self._created: dict[str, int | datetime] = {}
        self._generation = 0

    def object_id(self, repo_id: str) -> str:
        """The repo's `_id`; one is made the first time a name is asked about."""
        if repo_id not in self._ids:
            seed = f"{repo_id}#{self._generation}".encode()
            self._ids[repo_id] = hashlib.sha1(seed).hexdigest()[:24]
        return self._ids[repo_id]

    def created_at(self, repo_id: str, first: int | datetime) -> int | datetime:
        """When the repo was created: fixed the first time it is asked (`first`, its first
        commit's time, unless it was re-created), so a rewritten history does not move it."""
        return self._created.setdefault(repo_id, first)

    def moved(self, old_id: str, new_id: str) -> None:
        """A rename: the repo keeps its id and creation time under its new name."""
        self._ids[new_id] = self.object_id(old_id)
        del self._ids[old_id]
        if old_id in self._created:
            self._created[new_id] = self._created.pop(old_id)

    def recreated(self, repo_id: str, when: datetime) -> None:
        """The name now belongs to a new repo, created at `when`: a new object id."""
        self._generation += 1
        self._ids.pop(repo_id, None)
        self._created[repo_id] = when
        self.object_id(repo_id)


def super_squash(path: Path, branch: str = "main", message: str = "Super-squash") -> str:
    """Replace `branch`'s history in the git repo at `path` by one commit with its current
    files, as the Hub's `super_squash_history` does; return the new commit's sha."""
    tree = git(path, "rev-parse", f"refs/heads/{branch}^{{tree}}")
    sha = git(path, "commit-tree", tree, "-m", message)
    git(path, "update-ref", f"refs/heads/{branch}", sha)
    if git(path, "rev-parse", "--is-bare-repository") == "false":
        git(path, "reset", "-q", "--hard")
    return sha
