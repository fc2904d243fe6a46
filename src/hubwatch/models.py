"""Frozen value objects shared by every layer: repos, commits, files, snapshots, events."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, NewType

from hubwatch.errors import InvalidRepoId

CommitSha = NewType("CommitSha", str)
ContentSha = NewType("ContentSha", str)
"""sha256 hex of stored bytes: the key of the content-addressed blob table."""

# NOTE: the Hub's own rule (huggingface_hub.utils.validate_repo_id): letters, digits, `-_.`,
# no `--` or `..`, 96 characters at most per name, not starting or ending with `-` or `.`.
_NAME = re.compile(r"^(?![.-])(?!.*(?:--|\.\.))[A-Za-z0-9._-]{1,96}(?<![.-])$")
MAX_REPO_ID_LENGTH = 96 * 2 + 1


class SourceKind(StrEnum):
    """Where a repo's revisions come from."""

    HUB = "hub"
    GIT = "git"


@dataclass(frozen=True, slots=True)
class RepoRef:
    """A tracked repository: its Hub-style id and where to read it from."""

    repo_id: str
    """`org/name`, validated on construction."""
    source: SourceKind = SourceKind.HUB
    url: str | None = None
    """Git URL or local path (GitSource); None for the Hub."""
    branch: str = "main"
    """The branch or tag whose history is tracked."""

    def __post_init__(self) -> None:
        validate_repo_id(self.repo_id)

    @property
    def org(self) -> str:
        return self.repo_id.split("/", 1)[0]


def validate_repo_id(repo_id: str) -> str:
    """Return `repo_id` if it is a safe `org/name`; otherwise raise InvalidRepoId saying why."""
    if not repo_id:
        raise InvalidRepoId("repo id is empty; expected ORG/NAME")
    shown = repo_id if len(repo_id) <= 60 else repo_id[:57] + "..."
    if len(repo_id) > MAX_REPO_ID_LENGTH:
        raise InvalidRepoId(
            f"repo id {shown!r} is {len(repo_id)} characters long; the Hub allows "
            f"at most 96 per part"
        )
    parts = repo_id.split("/")
    if len(parts) != 2:
        raise InvalidRepoId(f"repo id {shown!r} must be exactly ORG/NAME")
    for part in parts:
        if not _NAME.match(part):
            raise InvalidRepoId(
                f"repo id {shown!r}: {part!r} may only hold letters, digits, '-', '_' and '.', "
                "must not start or end with '-' or '.', and must not contain '--' or '..'"
            )
    return repo_id


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """One commit's metadata, as a source reports it."""

    sha: CommitSha
    parents: tuple[CommitSha, ...]
    date: datetime
    """Commit date, timezone-aware UTC."""
    authors: tuple[str, ...]
    title: str
    message: str


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One file in a revision's tree."""

    path: str
    size: int
    """Real size in bytes (for LFS files, the size of the LFS object, not of the pointer)."""
    blob_id: str
    """Git blob sha1 of what is committed (the pointer, for LFS files)."""
    lfs_sha256: str | None = None
    """sha256 of the LFS object, when the file is stored in LFS."""


class ReadStatus(StrEnum):
    """What became of an attempt to read a file's content or a safetensors header."""

    STORED = "stored"
    OVER_CAP = "over_cap"
    INVALID = "invalid"
    """Read and stored, but not what it claims to be (not JSON, not UTF-8, a lying header)."""
    UNAVAILABLE = "unavailable"
    """Not readable from this source (LFS pointer in a git mirror); not a failure."""
    ERROR = "error"
    """The read failed (HTTP error…); recorded, the revision is still stored."""


@dataclass(frozen=True, slots=True)
class ReadResult:
    """Outcome of reading one file's content or one safetensors header."""

    status: ReadStatus
    data: bytes | None = None
    """The bytes to store (file content, or the header's JSON), when any were read."""
    error: str | None = None
    sha256: ContentSha | None = None
    """Set instead of `data` when the bytes are already stored (an unchanged file)."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything recorded about one revision, ready to be written in one transaction."""

    commit: CommitInfo
    files: tuple[FileEntry, ...]
    contents: dict[str, ReadResult] = field(default_factory=dict)
    """Content of the files that matter, by path."""
    headers: dict[str, ReadResult] = field(default_factory=dict)
    """safetensors headers, by path of the weight file."""
    card: dict[str, object] | None = None
    """Model card front matter keys (license, base_model, gated, pipeline_tag, library_name)."""
    card_error: str | None = None
    estimate: dict[str, Any] | None = None
    """The estimator's result for this revision's config.json (JSON); None without a config."""
    changes: tuple[Change, ...] = ()
    """What changed against `base`, stored with the revision."""
    base: CommitSha | None = None
    """The revision the changes were computed against (the stored first parent), if any."""


@dataclass(frozen=True, slots=True)
class RepoStatus:
    """What a source says about a repo as a whole right now."""

    head: CommitSha
    """The commit the tracked branch points to."""
    repo_id: str
    """The id the source answers under (differs from the asked one after a rename)."""
    gated: bool = False
    disabled: bool = False
    private: bool = False


class Severity(StrEnum):
    """How much a change matters to someone who depends on the model."""

    BREAKING = "breaking"
    """Code or outputs break: stop tokens, architecture, vocabulary re-numbered."""
    SECURITY = "security"
    """Riskier to load: pickle weights added, custom code added or changed."""
    BEHAVIOR = "behavior"
    """Outputs change: a chat template that renders differently, new sampling defaults."""
    INFO = "info"
    """Worth knowing, changes nothing for users: a cosmetic template edit, a README."""

    @property
    def rank(self) -> int:
        """Higher is more severe; `severity.rank >= Severity.BEHAVIOR.rank` filters."""
        return _SEVERITY_RANK[self]


_SEVERITY_RANK = {
    Severity.INFO: 0,
    Severity.BEHAVIOR: 1,
    Severity.SECURITY: 2,
    Severity.BREAKING: 3,
}


@dataclass(frozen=True, slots=True)
class Change:
    """One typed, classified difference between two revisions."""

    kind: str
    """Dotted kind, e.g. `generation.stop_tokens`, `chat_template.rendered`."""
    severity: Severity
    summary: str
    """One sentence a person can read."""
    path: str | None = None
    """The file the change concerns, when there is one."""
    before: Any = None
    """Machine-readable value before (JSON-able)."""
    after: Any = None
    """Machine-readable value after (JSON-able)."""
    detail: str | None = None
    """Longer text: a unified diff, the first differing span of a rendered template."""


class EventKind(StrEnum):
    """Things that happen to a tracked repo besides new revisions."""

    HISTORY_REWRITTEN = "history_rewritten"
    REPO_GATED = "repo_gated"
    REPO_UNGATED = "repo_ungated"
    REPO_DISABLED = "repo_disabled"
    REPO_DELETED = "repo_deleted"
    REPO_RENAMED = "repo_renamed"
    POLL_FAILED = "poll_failed"
    REPO_RESTORED = "repo_restored"


@dataclass(frozen=True, slots=True)
class RepoEvent:
    """A recorded event about a repo."""

    kind: EventKind
    detail: str
    sha: CommitSha | None = None
    at: datetime | None = None


@dataclass(frozen=True, slots=True)
class StoredRevision:
    """A revision as the store returns it."""

    repo_id: str
    sha: CommitSha
    parents: tuple[CommitSha, ...]
    date: datetime
    authors: tuple[str, ...]
    title: str
    message: str
    changed: tuple[str, ...]
    """Paths added, removed or modified against the first parent (all paths for a root commit)."""
    reachable: bool = True
    card: dict[str, object] | None = None


@dataclass(frozen=True, slots=True)
class StoredFile:
    """A file of a stored revision, with what became of reading it."""

    path: str
    size: int
    blob_id: str
    lfs_sha256: str | None
    content_sha256: ContentSha | None
    content_status: ReadStatus | None
    content_error: str | None
    header_sha256: ContentSha | None
    header_status: ReadStatus | None
    header_error: str | None
