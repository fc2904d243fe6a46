"""Revisions: commits, their files, what reading them gave, and the snapshot stored."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from hubwatch.models.change import Change
from hubwatch.models.estimate import Estimate
from hubwatch.models.ids import CommitSha, ContentSha


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
    problems: tuple[str, ...] = ()
    """What the source found wrong while reading the commit itself (a date it had to clamp, a
    message that is not UTF-8…), one reason a line."""


MISSING_OBJECT = "missing object"
"""How a `FileEntry.problem` starts when the repository lacks the object (a damaged mirror)."""


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
    problem: str | None = None
    """Why this entry cannot be stored or read as named (`invalid file name '..'`, `missing
    object <sha> (damaged repository)`); such a file is listed but never read: a missing object is
    recorded unavailable, any other problem invalid, with this reason."""
    xet_hash: str | None = None
    """The Xet file hash (the tree listing's `xetHash`): names the file's reconstruction on
    the Hub's CAS server; None for plain LFS, git and small files."""


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
    """The sha256 of the bytes: alone when they are already stored (an unchanged file), beside
    `data` when the reader hashed them already (nobody needs to again)."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything recorded about one revision, ready to be written in one transaction."""

    commit: CommitInfo
    files: tuple[FileEntry, ...]
    contents: dict[str, ReadResult] = field(default_factory=dict)
    """Content of the files that matter, by path."""
    headers: dict[str, ReadResult] = field(default_factory=dict)
    """safetensors and GGUF headers, by path of the weight file (GGUF: `models.gguf`'s JSON)."""
    card: dict[str, object] | None = None
    """Model card front matter keys (license, base_model, gated, pipeline_tag, library_name)."""
    card_error: str | None = None
    estimate: Estimate | None = None
    """The estimator's result for this revision's config.json and GGUF headers; None without
    either."""
    changes: tuple[Change, ...] = ()
    """What changed against `base`, stored with the revision."""
    base: CommitSha | None = None
    """The revision the changes were computed against (the stored first parent), if any."""
    reconstructions: dict[str, ReadResult] = field(default_factory=dict)
    """Xet reconstruction answers (the terms' JSON) by Xet file hash: of each weight file that
    changed against `base`, before and after; what the tensor diff reads. Not stored."""
    digests: dict[str, ReadResult] = field(default_factory=dict)
    """The sha256 of each tensor's bytes (`formats.tensorbytes.tensor_digests`) by git blob id:
    of each weight file without Xet that changed against `base`, before and after, where the
    source holds the files themselves (a git mirror); what the tensor diff reads. Not stored."""


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
    xet_hash: str | None = None


@dataclass(frozen=True, slots=True)
class RevisionStored:
    """A revision just stored, as the hooks after it see it, so that none reads it back."""

    repo_id: str
    commit: CommitInfo
    base: CommitSha | None
    """The revision its changes were computed against (its stored first parent), if any."""
    files: tuple[StoredFile, ...]
    """Its files as the store records them (`RevisionStore.files`: by path)."""
    card: dict[str, object] | None
    changes: tuple[Change, ...]
    """The changes stored with it, and those that the hooks before this one added."""
