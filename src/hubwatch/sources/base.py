"""The RevisionSource interface: what hubwatch needs from any place that holds a repo's history."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime

from hubwatch.errors import ContentUnavailable
from hubwatch.models import CommitInfo, CommitSha, FileEntry, RepoRef, RepoStatus
from hubwatch.models.lineage import Derivative, Relation
from hubwatch.models.refs import GitRef


class RevisionSource(ABC):
    """Reads commits, file lists and file bytes of one repository, always pinned to a commit sha.

    Implementations raise subclasses of `hubwatch.errors.SourceError` only.
    """

    holds_weights: bool = False
    """Whether `read_file` of a weight file reads a local copy (a git mirror) rather than
    downloading it: only then are two weight files compared byte for byte."""

    @abstractmethod
    def list_commits(self, repo: RepoRef) -> list[CommitInfo]:
        """Every commit reachable from the tracked branch, newest first (all pages)."""

    def list_commits_since(self, repo: RepoRef, stop: CommitSha) -> list[CommitInfo]:
        """The commits newest first down to `stop` (included) when it is on the branch, so a
        new revision does not cost the whole history; all of them (`list_commits`) when not.

        A source that pages its listing overrides this to stop asking at `stop`'s page.
        """
        commits = self.list_commits(repo)
        for i, commit in enumerate(commits):
            if commit.sha == stop:
                return commits[: i + 1]
        return commits

    @abstractmethod
    def status(self, repo: RepoRef) -> RepoStatus:
        """The repo's current head on the tracked branch, its id, and whether it is gated."""

    @abstractmethod
    def resolve(self, repo: RepoRef, rev: str) -> CommitSha:
        """The commit sha a branch, tag or (short) sha points to now."""

    @abstractmethod
    def list_files(self, repo: RepoRef, sha: CommitSha) -> list[FileEntry]:
        """Every file in the tree of `sha`, with size, blob id and LFS sha256."""

    def changed_files(
        self, repo: RepoRef, parent: CommitSha, sha: CommitSha
    ) -> list[FileChange] | None:
        """What changed in the tree from `parent` to `sha`, by one request where the source
        has a compare endpoint; None where it has none (or answers one not understood): the
        caller lists the files of `sha` instead (`list_files`).

        Raises what `list_files` would for transient failures (rate limits, outages), so a
        retry asks again rather than falling back.
        """
        return None

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

    def reconstruction(self, repo: RepoRef, sha: CommitSha, xet_hash: str) -> bytes:
        """The CAS server's reconstruction of the Xet file `xet_hash` of revision `sha` (the
        JSON of its terms), never a byte of the file itself.

        Raises ContentUnavailable where the source has no Xet storage (git, plain LFS).
        """
        raise ContentUnavailable(f"{repo.repo_id}: this source stores no file in Xet")

    def list_refs(self, repo: RepoRef) -> list[GitRef]:
        """Every branch, tag and open pull request ref of the repo, with the commit each points
        to. Raises ContentUnavailable where the source cannot list them."""
        raise ContentUnavailable(f"{repo.repo_id}: this source lists no refs")

    def reading(self, repo: RepoRef, sha: CommitSha) -> AbstractContextManager[object]:
        """A block in which the listing and reads of `sha` may share one connection or
        process (a snapshot's), and those of any other revision read in it (a poll reads all
        its new revisions in one); outside one, each read stands alone."""
        return nullcontext()

    def head(self, repo: RepoRef) -> CommitSha:
        """The tracked branch's head, by the cheapest request the source offers."""
        return self.status(repo).head

    def close(self) -> None:  # noqa: B027 - optional hook, most sources hold nothing
        """Release connections or processes."""


@dataclass(frozen=True, slots=True)
class FileChange:
    """One path that differs between two revisions' trees."""

    path: str
    entry: FileEntry | None
    """The file at `path` in the newer revision, as its tree listing gives it; None: the path
    is gone (deleted, or the old side of a rename)."""


@dataclass(frozen=True, slots=True)
class Modified:
    """One item of a change listing."""

    repo_id: str
    at: datetime
    """When the repo was last modified, by the source's clock."""
    status: RepoStatus | None = None
    """What the listing says of the repo now (head, gated, private), when it says it."""
    object_id: str | None = None
    """The source's own id of the repo (the Hub's `_id`), which a rename keeps."""


@dataclass(frozen=True, slots=True)
class Allowance:
    """A rate-limit policy a source announced for one bucket: `limit` requests per window."""

    limit: int
    window_s: float

    def per(self, seconds: float) -> float:
        """Requests the policy allows over `seconds`."""
        return self.limit * seconds / self.window_s


class ChangeFeed(ABC):
    """A source that lists its recently modified repos, so idle repos need no request each."""

    def allowance(self, bucket: str) -> Allowance | None:
        """The rate-limit policy the source last announced for `bucket` ("api", "resolvers");
        None where it announced none (discovery then spends without a budget)."""
        return None

    @property
    @abstractmethod
    def feed_name(self) -> str:
        """Names the listing, so that its stored cursor is not mixed with another endpoint's."""

    @abstractmethod
    def recently_modified(self, limit: int) -> Iterator[Modified]:
        """Up to `limit` repos, most recently modified first.

        Lazy: pages are fetched as the caller iterates, so stopping early saves requests. A
        page's items come once the whole page is read, so those yielded before an error (a
        deep page answering 504) are whole pages'. Raises SourceError subclasses only.
        """


class DerivativeListing(ABC):
    """A source that lists the models derived from a base (quantizations, fine-tunes…)."""

    @abstractmethod
    def derivatives(
        self, base_id: str, relation: Relation | None = None, *, limit: int = 1000
    ) -> list[Derivative]:
        """Up to `limit` models whose card declares `base_id` as a base (with `relation` only
        those so related), in the source's order. Raises SourceError subclasses only."""
