"""Where a person reads a revision: its commit page on the Hub."""

from __future__ import annotations

from collections.abc import Callable

Link = Callable[[str, str], str | None]
"""(repo, sha) -> URL of the revision's page, or None where there is none (a git remote)."""


def hub_links(endpoint: str, git_repos: frozenset[str] = frozenset()) -> Link:
    """Commit pages under the Hub `endpoint`; repos read from git have none."""
    base = endpoint.rstrip("/")

    def link(repo: str, sha: str) -> str | None:
        return None if repo in git_repos else f"{base}/{repo}/commit/{sha}"

    return link
