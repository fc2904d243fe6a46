"""Xet reconstructions of the weight files a revision changed, for the tensor diff to read: kept
in the store by Xet hash, so each file's terms are asked for once, whatever restarts between."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import structlog

from hubwatch.errors import SourceError, StoreError, UnsafeContent
from hubwatch.formats.xet import parse_reconstruction, terms_json
from hubwatch.models import CommitSha, ReadResult, ReadStatus, RepoRef, Snapshot, StoredFile
from hubwatch.models.gguf import is_gguf
from hubwatch.sources.base import RevisionSource
from hubwatch.store.xet import XetTermsStore

log = structlog.get_logger(__name__)


def with_reconstructions(
    source: RevisionSource,
    repo: RepoRef,
    snapshot: Snapshot,
    base: CommitSha | None,
    base_files: Iterable[StoredFile],
    kept: XetTermsStore | None = None,
) -> Snapshot:
    """`snapshot` with the reconstructions of each safetensors or GGUF file whose Xet hash moved
    against `base`, before and after: from `kept` when the store holds them, else one request
    a side, whose terms `kept` then keeps. A failed request is kept as the reason the tensor
    diff is unavailable; it never fails the revision."""
    if base is None:
        return snapshot
    wanted = _wanted(snapshot, base, base_files)
    if not wanted:
        return snapshot
    held = kept.xet_terms({xet_hash for _, xet_hash in wanted}) if kept is not None else {}
    found = {xet_hash: ReadResult(ReadStatus.STORED, data=data) for xet_hash, data in held.items()}
    fetched: dict[str, bytes] = {}
    for sha, xet_hash in wanted:
        if xet_hash in found:
            continue
        try:
            data = source.reconstruction(repo, sha, xet_hash)
        except SourceError as exc:
            found[xet_hash] = ReadResult(ReadStatus.ERROR, error=str(exc))
            continue
        try:
            data = fetched[xet_hash] = terms_json(parse_reconstruction(data))
        except UnsafeContent:
            pass  # kept as sent: the tensor diff says it is malformed; the store keeps none
        found[xet_hash] = ReadResult(ReadStatus.STORED, data=data)
    if kept is not None and fetched:
        try:
            kept.keep_xet_terms(fetched)
        except StoreError as exc:  # asked for again next time; this revision has them
            log.warning("xet_terms_not_kept", repo=repo.repo_id, error=str(exc))
    return replace(snapshot, reconstructions=found)


def _wanted(
    snapshot: Snapshot, base: CommitSha, base_files: Iterable[StoredFile]
) -> list[tuple[CommitSha, str]]:
    """(revision, Xet hash) of both sides of each weight file whose Xet hash moved."""
    before = {f.path: f.xet_hash for f in base_files if f.xet_hash is not None}
    wanted: list[tuple[CommitSha, str]] = []
    for entry in snapshot.files:
        old = before.get(entry.path)
        weights = entry.path.endswith(".safetensors") or is_gguf(entry.path)
        if weights and entry.xet_hash is not None and old is not None and old != entry.xet_hash:
            wanted += [(base, old), (snapshot.commit.sha, entry.xet_hash)]
    return wanted
