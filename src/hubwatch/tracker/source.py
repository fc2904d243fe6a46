"""The RevisionSource interface: what hubwatch needs from any place that holds a repo's history."""

from __future__ import annotations

from abc import ABC, abstractmethod

from hubwatch.models import CommitInfo, CommitSha, FileEntry, RepoRef, RepoStatus


class RevisionSource(ABC):
    """Reads commits, file lists and file bytes of one repository, always pinned to a commit sha.

    Implementations raise subclasses of `hubwatch.errors.SourceError` only.
    """

    @abstractmethod
    def list_commits(self, repo: RepoRef) -> list[CommitInfo]:
        """Every commit reachable from the tracked branch, newest first (all pages)."""

    @abstractmethod
    def status(self, repo: RepoRef) -> RepoStatus:
        """The repo's current head on the tracked branch, its id, and whether it is gated."""

    @abstractmethod
    def resolve(self, repo: RepoRef, rev: str) -> CommitSha:
        """The commit sha a branch, tag or (short) sha points to now."""

    @abstractmethod
    def list_files(self, repo: RepoRef, sha: CommitSha) -> list[FileEntry]:
        """Every file in the tree of `sha`, with size, blob id and LFS sha256."""

    @abstractmethod
    def read_file(self, repo: RepoRef, sha: CommitSha, path: str, max_bytes: int) -> bytes:
        """The whole content of a file; ContentTooLarge if it exceeds `max_bytes`."""

    @abstractmethod
    def read_range(
        self, repo: RepoRef, sha: CommitSha, path: str, start: int, length: int
    ) -> bytes:
        """`length` bytes from `start` (fewer if the file ends first); never the whole file.

        Raises ContentUnavailable where the bytes cannot be had here (an LFS pointer in git).
        """

    def close(self) -> None:  # noqa: B027 - optional hook, most sources hold nothing
        """Release connections or processes."""
