"""Xet reconstructions of the weight files a revision changed, for the tensor diff to read."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from hubwatch.errors import SourceError
from hubwatch.models import CommitSha, ReadResult, ReadStatus, RepoRef, Snapshot, StoredFile
from hubwatch.models.gguf import is_gguf
from hubwatch.sources.base import RevisionSource


def with_reconstructions(
    source: RevisionSource,
    repo: RepoRef,
    snapshot: Snapshot,
    base: CommitSha | None,
    base_files: Iterable[StoredFile],
) -> Snapshot:
    """`snapshot` with the reconstructions of each safetensors or GGUF file whose Xet hash moved
    against `base`, before and after: one request a side (the source keeps them by Xet hash,
    so the old side is usually in hand from the revision before). A failed request is kept
    as the reason the tensor diff is unavailable; it never fails the revision."""
    if base is None:
        return snapshot
    before = {f.path: f.xet_hash for f in base_files if f.xet_hash is not None}
    wanted: list[tuple[CommitSha, str]] = []
    for entry in snapshot.files:
        old = before.get(entry.path)
        weights = entry.path.endswith(".safetensors") or is_gguf(entry.path)
        if not weights or entry.xet_hash is None or old is None:
            continue
        if old != entry.xet_hash:
            wanted += [(base, old), (snapshot.commit.sha, entry.xet_hash)]
    found: dict[str, ReadResult] = {}
    for sha, xet_hash in wanted:
        if xet_hash in found:
            continue
        try:
            data = source.reconstruction(repo, sha, xet_hash)
            found[xet_hash] = ReadResult(ReadStatus.STORED, data=data)
        except SourceError as exc:
            found[xet_hash] = ReadResult(ReadStatus.ERROR, error=str(exc))
    return replace(snapshot, reconstructions=found) if found else snapshot
