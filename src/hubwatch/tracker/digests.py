"""The bytes of each tensor of the weight files a revision changed, where the source holds the
files themselves (a git mirror, weights not in LFS): both sides read whole, once, and digested
tensor by tensor for the tensor diff to compare exactly."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from hubwatch.errors import ContentTooLarge, SourceError, UnsafeContent
from hubwatch.formats.tensorbytes import tensor_digests
from hubwatch.models import CommitSha, ReadResult, ReadStatus, RepoRef, Snapshot, StoredFile
from hubwatch.models.gguf import is_gguf
from hubwatch.sources.base import RevisionSource


def with_digests(
    source: RevisionSource,
    repo: RepoRef,
    snapshot: Snapshot,
    base: CommitSha | None,
    base_files: Iterable[StoredFile],
    max_bytes: int,
) -> Snapshot:
    """`snapshot` with the tensor digests of each safetensors or GGUF file kept in git (not LFS,
    not Xet) whose blob changed against `base`, before and after, keyed by blob id. A file over
    `max_bytes` or unreadable is kept as the reason the tensor diff is unavailable; it never
    fails the revision. Reasons name no file or size, so the diff says each once."""
    if base is None or not source.holds_weights:
        return snapshot
    before = {f.path: f for f in base_files}
    wanted: list[tuple[CommitSha, str, str, int]] = []
    for entry in snapshot.files:
        old = before.get(entry.path)
        weights = entry.path.endswith(".safetensors") or is_gguf(entry.path)
        if not weights or old is None or old.blob_id == entry.blob_id:
            continue
        if entry.lfs_sha256 or old.lfs_sha256 or (entry.xet_hash and old.xet_hash):
            continue  # an LFS pointer holds no tensor; Xet terms are told elsewhere
        wanted += [(base, old.path, old.blob_id, old.size)]
        wanted += [(snapshot.commit.sha, entry.path, entry.blob_id, entry.size)]
    found: dict[str, ReadResult] = {}
    for sha, path, blob_id, size in wanted:
        if blob_id not in found:
            found[blob_id] = _digest(source, repo, sha, path, size, max_bytes)
    return replace(snapshot, digests=found) if found else snapshot


def _digest(
    source: RevisionSource,
    repo: RepoRef,
    sha: CommitSha,
    path: str,
    size: int,
    max_bytes: int,
) -> ReadResult:
    too_large = f"too large to compare (over {max_bytes:,} bytes, HUBWATCH_MAX_COMPARE_BYTES)"
    if size > max_bytes:
        return ReadResult(ReadStatus.OVER_CAP, error=too_large)
    try:
        blob = source.read_file(repo, sha, path, max_bytes)
    except ContentTooLarge:
        return ReadResult(ReadStatus.OVER_CAP, error=too_large)
    except SourceError as exc:
        if not exc.per_file:
            raise
        return ReadResult(ReadStatus.ERROR, error="its git blob could not be read")
    try:
        return ReadResult(ReadStatus.STORED, data=tensor_digests(path, blob))
    except UnsafeContent as exc:
        return ReadResult(ReadStatus.INVALID, error=f"its header does not say it ({exc})")
