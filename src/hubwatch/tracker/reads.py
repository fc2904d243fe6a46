"""One revision's reads: each blob read and checked once whatever the paths that name it, and
all of them within the revision's byte budget (a 30 MB blob under 100 paths is 30 MB read)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from hubwatch.caching import Memo
from hubwatch.errors import ContentTooLarge, ContentUnavailable, SourceError, UnsafeContent
from hubwatch.formats.json import loads_bounded
from hubwatch.formats.view import loads_shared
from hubwatch.models import CommitSha, ContentSha, FileEntry, ReadResult, ReadStatus, RepoRef
from hubwatch.models.gguf import is_gguf
from hubwatch.sources.base import RevisionSource
from hubwatch.tracker.headers import read_gguf_header, read_header
from hubwatch.tracker.select import is_json, is_text

MiB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on one revision's work: what is read from upstream, and the time its differs take."""

    max_file_bytes: int = 32 * MiB
    max_header_bytes: int = 100 * MiB
    """safetensors and GGUF headers needing more bytes are recorded as over the cap."""
    max_revision_bytes: int = 512 * MiB
    """All the contents and headers one revision reads together (each blob counted once);
    what would go past it is recorded as over the cap, not read."""
    diff_budget_s: float = 120.0
    """Seconds all differs of one revision may take together (`diff.diff_revisions`)."""
    max_compare_bytes: int = 256 * MiB
    """A changed weight file kept in a git mirror is read whole (both sides) to compare its
    tensors' bytes up to this size (`tracker/digests.py`); larger, it is too large to compare."""


@dataclass
class RevisionReader:
    """Reads one revision's contents and headers: a blob already read for another path of the
    revision is not read, hashed or parsed again, and nothing is read past the budget."""

    source: RevisionSource
    repo: RepoRef
    sha: CommitSha
    limits: Limits
    memo: Memo
    spent: int = 0
    """Bytes read so far (each blob once)."""
    _blobs: dict[str, bytes] = field(default_factory=dict)
    _verdicts: dict[tuple[str, bool, bool], tuple[ReadStatus, str | None]] = field(
        default_factory=dict
    )
    _headers: dict[str, ReadResult] = field(default_factory=dict)
    _hashes: dict[str, ContentSha] = field(default_factory=dict)

    @property
    def left(self) -> int:
        return max(0, self.limits.max_revision_bytes - self.spent)

    def content(self, entry: FileEntry) -> ReadResult:
        """Read and check one file's content; never raises a per-file SourceError."""
        cap = self.limits.max_file_bytes
        if entry.size > cap:
            return ReadResult(
                ReadStatus.OVER_CAP,
                error=f"{entry.path}: {entry.size} bytes, over the cap of {cap}",
            )
        data = self._blobs.get(entry.blob_id)
        if data is None:
            if entry.size > self.left:
                return ReadResult(ReadStatus.OVER_CAP, error=self._spent(entry))
            try:
                data = self.source.read_file(self.repo, self.sha, entry.path, min(cap, self.left))
            except ContentTooLarge as exc:
                return ReadResult(ReadStatus.OVER_CAP, error=str(exc))
            except ContentUnavailable as exc:  # a missing object in a damaged git mirror
                return ReadResult(ReadStatus.UNAVAILABLE, error=str(exc))
            except SourceError as exc:
                if not exc.per_file:
                    raise
                return ReadResult(ReadStatus.ERROR, error=f"{entry.path}: {exc}")
            self.spent += len(data)
            self._blobs[entry.blob_id] = data
        sha = self._sha(entry.blob_id, data)
        status, why = self._verdict(entry, data, sha)
        error = None if why is None else entry.path + why
        return ReadResult(status, data=data, error=error, sha256=sha)

    def _sha(self, blob_id: str, data: bytes) -> ContentSha:
        """The bytes' sha256, once per blob: the view, the store and the hooks take it as is."""
        found = self._hashes.get(blob_id)
        if found is None:
            found = self._hashes[blob_id] = ContentSha(hashlib.sha256(data).hexdigest())
        return found

    def header(self, entry: FileEntry) -> ReadResult:
        """Read and check one weight file's header (safetensors or GGUF), once per object."""
        key = entry.lfs_sha256 or entry.blob_id
        found = self._headers.get(key)
        if found is not None:
            return found
        if self.left == 0:
            return ReadResult(ReadStatus.OVER_CAP, error=self._spent(entry))
        read = read_gguf_header if is_gguf(entry.path) else read_header
        cap = min(self.limits.max_header_bytes, self.left)
        found = read(self.source, self.repo, self.sha, entry, cap)
        if found.status is ReadStatus.OVER_CAP and cap < self.limits.max_header_bytes:
            found = ReadResult(ReadStatus.OVER_CAP, error=self._spent(entry))
        self.spent += len(found.data or b"")
        self._headers[key] = found
        return found

    def _spent(self, entry: FileEntry) -> str:
        budget = self.limits.max_revision_bytes
        return (
            f"{entry.path}: not read, the revision's read budget of {budget} bytes is spent "
            f"({self.spent} read; HUBWATCH_MAX_REVISION_BYTES)"
        )

    def _verdict(
        self, entry: FileEntry, data: bytes, sha: ContentSha
    ) -> tuple[ReadStatus, str | None]:
        """`check_content` of the blob, once per kind of name it is checked as."""
        key = (entry.blob_id, is_text(entry.path), is_json(entry.path))
        found = self._verdicts.get(key)
        if found is None:
            found = self._verdicts[key] = check_content(entry.path, data, self.memo, sha)
        return found


def check_content(
    path: str, data: bytes, memo: Memo, sha: str | None = None
) -> tuple[ReadStatus, str | None]:
    """Whether the bytes are what the name promises (the bytes are kept either way); the reason
    when not, to follow the path."""
    if not is_text(path):
        return ReadStatus.STORED, None
    if is_json(path) and json.detect_encoding(data) == "utf-8":
        # no BOM, not UTF-16 or 32: the bytes parse as the text does, and are parsed once for
        # the differs too (a view of this snapshot reads the same content); they are decoded
        # only to say why they do not parse (a 30 MB file is not copied once more)
        try:
            loads_shared(data, sha or hashlib.sha256(data).hexdigest(), memo)
        except UnsafeContent as exc:  # not JSON, NaN, nesting or a number over its limit
            return ReadStatus.INVALID, _not_utf8(data) or f": {exc}"
        return ReadStatus.STORED, None
    not_utf8 = _not_utf8(data)
    if not_utf8 is not None:
        return ReadStatus.INVALID, not_utf8
    if is_json(path):
        try:
            loads_bounded(data.decode("utf-8"))
        except UnsafeContent as exc:
            return ReadStatus.INVALID, f": {exc}"
    return ReadStatus.STORED, None


def _not_utf8(data: bytes) -> str | None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f" is not UTF-8 (byte {exc.start})"
    return None
