"""Taking a snapshot of one revision: file list, the contents that matter, safetensors and GGUF
headers."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import replace

from hubwatch.caching import Memo
from hubwatch.errors import UnsafeContent
from hubwatch.formats.card import parse_front_matter
from hubwatch.formats.json import loads_bounded
from hubwatch.formats.safetensors import index_map
from hubwatch.models import CommitInfo, FileEntry, ReadResult, ReadStatus, RepoRef, Snapshot
from hubwatch.models.gguf import is_gguf
from hubwatch.models.revision import MISSING_OBJECT
from hubwatch.sources.base import RevisionSource
from hubwatch.store.known import KnownContent

# re-exported: the snapshot is where callers and tests have always found its limits
from hubwatch.tracker.reads import Limits as Limits
from hubwatch.tracker.reads import RevisionReader
from hubwatch.tracker.select import (
    MAX_SMALL_FILES,
    MODEL_CARD,
    is_safetensors,
    is_small_text,
    is_tiny_weight,
    is_tracked_content,
)


def take_snapshot(
    source: RevisionSource,
    repo: RepoRef,
    commit: CommitInfo,
    known: KnownContent,
    limits: Limits,
    listed: Sequence[FileEntry] | None = None,
    memo: Memo | None = None,
) -> Snapshot:
    """Read everything recorded about `commit`, reusing what `known` already holds.

    `listed`: the commit's files when the caller listed them already. `memo`: where the JSON
    and the card it parses are kept, for the differs that read them next (a fresh one if None).
    Non-transient read failures are recorded in the snapshot; transient ones (rate limits,
    dropped connections) propagate so the caller can retry the revision as a whole. A file
    whose entry has a `problem` is never read: it is recorded with the problem as the reason.
    """
    memo = memo if memo is not None else Memo()
    commit = _clean_commit(commit)
    files = _clean_paths(source.list_files(repo, commit.sha) if listed is None else listed)
    by_path = {entry.path: entry for entry in files}

    contents = _unreadable(files)
    readable = [entry for entry in files if entry.problem is None]
    small = set(sorted(entry.path for entry in readable if _small(entry))[:MAX_SMALL_FILES])
    wanted = [
        entry
        for entry in readable
        if entry.path == MODEL_CARD or is_tracked_content(entry.path) or entry.path in small
    ]
    reader = RevisionReader(source, repo, commit.sha, limits, memo)
    reused = known.contents((entry.path, entry.blob_id) for entry in wanted)  # one lookup
    for entry in wanted:
        contents[entry.path] = reused.get((entry.path, entry.blob_id)) or reader.content(entry)

    weights = [entry for entry in readable if is_safetensors(entry.path) or is_gguf(entry.path)]
    read_before = known.headers(entry.lfs_sha256 or entry.blob_id for entry in weights)
    headers: dict[str, ReadResult] = {}
    for entry in weights:
        found = read_before.get(entry.lfs_sha256 or entry.blob_id)
        headers[entry.path] = found or reader.header(entry)
    for index_path, missing in _missing_shards(contents, by_path, known.blob).items():
        index = contents[index_path]
        contents[index_path] = ReadResult(
            ReadStatus.INVALID if missing else ReadStatus.STORED,
            data=index.data,
            sha256=index.sha256,
            error=f"{index_path} {SHARDS_MISSING}: {', '.join(missing[:5])}" if missing else None,
        )

    card, card_error = _card(contents.get(MODEL_CARD), known.blob, memo)
    return Snapshot(commit, tuple(files), contents, headers, card, card_error)


def _small(entry: FileEntry) -> bool:
    """A small text file, or a weight file too small to hold weights, kept in git (not LFS)."""
    lfs = entry.lfs_sha256 is not None
    return is_small_text(entry.path, entry.size, lfs) or is_tiny_weight(entry.path, entry.size, lfs)


def bare_snapshot(commit: CommitInfo, listed: Sequence[FileEntry]) -> Snapshot:
    """`commit` with its file list and nothing read: what is stored when reading it failed."""
    files = _clean_paths(listed)
    return Snapshot(_clean_commit(commit), tuple(files), _unreadable(files))


def _unreadable(files: Sequence[FileEntry]) -> dict[str, ReadResult]:
    """The files whose entry says why they cannot be read: a missing object is unavailable,
    any other problem (a name like `..`) invalid."""
    return {
        entry.path: ReadResult(
            ReadStatus.UNAVAILABLE
            if entry.problem.startswith(MISSING_OBJECT)
            else ReadStatus.INVALID,
            error=entry.problem,
        )
        for entry in files
        if entry.problem is not None
    }


SHARDS_MISSING = "lists shards missing from the repo"
"""How an index naming absent shards is marked (`health.weights` reports it as a change)."""

MAX_PATH = 1024
"""Longest path stored as is (git allows 4096; index rows and PostgreSQL keys do not)."""


def _text(value: str) -> str:
    """Text a database accepts: no NUL, no lone surrogates (undecodable git paths)."""
    return (
        value.encode("utf-8", "surrogateescape").decode("utf-8", "replace").replace("\0", "\ufffd")
    )


def _clean_commit(commit: CommitInfo) -> CommitInfo:
    return replace(
        commit,
        title=_text(commit.title),
        message=_text(commit.message),
        authors=tuple(_text(a) for a in commit.authors),
    )


CLEANED = "…#"
"""What a path `_clean_paths` had to rename carries, before its digest: a stored list holding one
no longer names its files as the source does (tracker/listing.py reads it)."""


def _clean_paths(files: Sequence[FileEntry]) -> list[FileEntry]:
    """Paths made storable; the rare path that had to change gets a unique, marked name."""
    seen: set[str] = set()
    clean = []
    for entry in files:
        path = _text(entry.path)
        if len(path) > MAX_PATH or path != entry.path or path in seen:
            digest = hashlib.sha256(entry.path.encode("utf-8", "surrogateescape")).hexdigest()
            path = f"{path[: MAX_PATH - 40]}{CLEANED}{digest[:16]}"
        seen.add(path)
        clean.append(replace(entry, path=path) if path != entry.path else entry)
    return clean


def _bytes_of(result: ReadResult | None, load: Callable[..., bytes]) -> bytes | None:
    if result is None or result.status not in (ReadStatus.STORED, ReadStatus.INVALID):
        return None
    if result.data is not None:
        return result.data
    return load(result.sha256) if result.sha256 else None


def _missing_shards(
    contents: dict[str, ReadResult], by_path: dict[str, FileEntry], load: Callable[..., bytes]
) -> dict[str, list[str]]:
    """Shards named in each *.safetensors.index.json weight_map that are not in the tree, by
    index; an index that an earlier revision marked for missing shards (and that this one
    reuses) is judged again, and listed with none missing when they have all arrived."""
    missing: dict[str, list[str]] = {}
    for path, result in contents.items():
        marked = result.status == ReadStatus.INVALID and SHARDS_MISSING in (result.error or "")
        if not path.endswith(".safetensors.index.json") or not (
            result.status == ReadStatus.STORED or marked
        ):
            continue
        raw = _bytes_of(result, load)
        try:
            shards = index_map(loads_bounded(raw or b"{}"), path)
        except UnsafeContent:
            continue
        absent = sorted(shard for shard in shards if shard not in by_path)
        if absent or marked:
            missing[path] = absent
    return missing


def _card(
    result: ReadResult | None, load: Callable[..., bytes], memo: Memo
) -> tuple[dict[str, object] | None, str | None]:
    raw = _bytes_of(result, load)
    if raw is None:
        return None, result.error if result else None
    try:
        return parse_front_matter(raw.decode("utf-8", "replace"), memo), None
    except UnsafeContent as exc:
        return None, f"{MODEL_CARD} front matter: {exc}"
