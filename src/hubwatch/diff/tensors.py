"""Which tensors of a re-uploaded weight file changed: the new file's chunks the old one lacks
(Xet reconstruction terms of both), mapped through its header (safetensors `data_offsets`, GGUF
tensor-info offsets); no weight byte is read."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from hubwatch.diff.sections import listing
from hubwatch.errors import UnsafeContent
from hubwatch.formats.tensorbytes import (
    Extent,
    gguf_extents,
    read_digests,
    safetensors_extents,
)
from hubwatch.formats.view import RevisionView
from hubwatch.formats.xet import Reconstruction, new_ranges, parse_reconstruction, same_terms
from hubwatch.models import Change, ReadStatus
from hubwatch.models.gguf import is_gguf

MAX_CHUNK = 128 * 1024
"""chunking.md: no chunk is longer. A run of new chunks starts at most this far before the first
changed byte (the chunk holding it began at a boundary both files share), and content-defined
chunking falls back in step with the old boundaries within a chunk or two after the last one
("only chunk C (and possibly one neighbor) is affected"): so a run's first MAX_CHUNK bytes and
its last TRAIL bytes may be unchanged; only bytes between them are taken as the change."""
TRAIL = 2 * MAX_CHUNK
"""Measured on random data: the run after a change can reach past one chunk (179 KiB in the
tests' files). Past two it is rare: in bench/xet_diff.py (162 shards, one tensor of four changed in
each), 3 of 486 untouched tensors were called "changed" for it, none of them "identical"."""
NAMES_MAX = 100
"""Tensor names kept in the change's value, per verdict (the detail lists every one)."""
AFTER_MAX = 12 * 1024
"""Under the store's bound on a change's value (summary.VALUE_MAX, 16 KiB)."""
TENSOR_DIFF = "tensor_diff"
"""The key of `weights.reuploaded`'s after value that holds the tensor diff (`TensorDiff.json`)."""


@dataclass
class TensorDiff:
    """What the chunks say of each tensor of one or more files."""

    changed: list[str] = field(default_factory=list)
    possibly: list[str] = field(default_factory=list)
    """Tensors a new chunk reaches only at an edge: the chunk may hold its neighbour's change."""
    identical: int = 0
    total: int = 0
    new_bytes: int = 0
    size: int = 0
    identical_upload: bool = True
    """Every file rebuilt from the very same terms: a byte-identical re-upload."""

    def add(self, other: TensorDiff) -> None:
        self.changed += other.changed
        self.possibly += other.possibly
        self.identical += other.identical
        self.total += other.total
        self.new_bytes += other.new_bytes
        self.size += other.size
        self.identical_upload = self.identical_upload and other.identical_upload

    def json(self) -> dict[str, Any]:
        return {
            "changed": self.changed[:NAMES_MAX],
            "changed_count": len(self.changed),
            "possibly_changed": self.possibly[:NAMES_MAX],
            "possibly_count": len(self.possibly),
            "identical": self.identical,
            "tensors": self.total,
            "new_bytes": self.new_bytes,
            "bytes": self.size,
            "byte_identical": self.identical_upload,
        }


def classify(spans: Sequence[Extent], ranges: Sequence[tuple[int, int]]) -> TensorDiff:
    """Tensors by the runs of new bytes they meet: changed where they hold bytes a run's edges
    cannot explain (past its first MAX_CHUNK and before its last TRAIL bytes, or the run lies
    within the tensor), possibly
    changed where they meet a run only within its edges, identical where they meet none."""
    result = TensorDiff(total=len(spans), identical_upload=False)
    result.new_bytes = sum(end - start for start, end in ranges)
    for name, start, end in spans:
        met = sum(_overlap(start, end, a, b) for a, b in ranges)
        core = sum(_overlap(start, end, a + MAX_CHUNK, b - TRAIL) for a, b in ranges)
        if met == 0:
            result.identical += 1
        elif core > 0 or _alone(start, end, ranges):
            result.changed.append(name)
        else:
            result.possibly.append(name)
    return result


def _overlap(start: int, end: int, a: int, b: int) -> int:
    return max(0, min(end, b) - max(start, a))


def _alone(start: int, end: int, ranges: Sequence[tuple[int, int]]) -> bool:
    """Whether a new range that meets the tensor lies within it: nothing else can explain it."""
    return any(a >= start and b <= end for a, b in ranges if a < end and b > start)


def spans_of(view: RevisionView, path: str) -> list[Extent] | None:
    """Where each tensor of `path` lies in the file, from its stored header; None unread."""
    if is_gguf(path):
        gguf = view.gguf_header(path)
        return None if gguf is None else gguf_extents(gguf)
    header = view.header(path)
    return None if header is None else safetensors_extents(header, view.files[path].size)


def file_diff(old: RevisionView, new: RevisionView, path: str) -> TensorDiff | str:
    """The tensor diff of one re-uploaded weight file (safetensors or GGUF), or why there is
    none (said of the file)."""
    before, after = old.files[path], new.files[path]
    spans = spans_of(new, path)
    if spans is None:
        return "its header could not be read"
    if before.xet_hash is None or after.xet_hash is None:
        return _by_digests(old, new, path)
    sides = [_reconstruction((new, old), xet) for xet in (before.xet_hash, after.xet_hash)]
    for side in sides:
        if isinstance(side, str):
            return side
    was, now = sides
    assert isinstance(was, Reconstruction) and isinstance(now, Reconstruction)
    if same_terms(was.terms, now.terms):
        return TensorDiff(identical=len(spans), total=len(spans), size=after.size)
    result = classify(spans, new_ranges(was, now))
    result.size = after.size
    return result


_NOT_XET = (
    "not stored in Xet, nor held by the source (plain LFS on the Hub, an LFS pointer in git): "
    "only Xet's chunk lists say what two uploads share without downloading them"
)

_NOT_DIGESTED = (
    "its git blobs are compared only as a revision is polled against its parent (their tensor "
    "digests are not stored)"
)


def _by_digests(old: RevisionView, new: RevisionView, path: str) -> TensorDiff | str:
    """The tensor diff of a file whose two git blobs the tracker digested tensor by tensor:
    exact: a tensor changed when its bytes did (a tensor the old file lacks, too), none
    possibly."""
    before, after = old.files[path], new.files[path]
    sides = []
    for blob_id in (before.blob_id, after.blob_id):
        read = next((r for v in (new, old) if (r := v.digests(blob_id)) is not None), None)
        if read is None:
            # NOTE: a blob kept in git (no LFS id) is digested only while a revision is polled
            return _NOT_XET if after.lfs_sha256 or before.lfs_sha256 else _NOT_DIGESTED
        if read.status is not ReadStatus.STORED or read.data is None:
            return read.error or str(read.status)
        try:
            sides.append(read_digests(read.data))
        except UnsafeContent as exc:
            return f"its tensor digests are malformed ({exc})"
    was, now = sides
    result = TensorDiff(total=len(now), size=after.size, identical_upload=False)
    for name, (start, end, sha) in sorted(now.items(), key=lambda item: item[1][0]):
        if name in was and was[name][2] == sha:
            result.identical += 1
        else:
            result.changed.append(name)
            result.new_bytes += end - start
    return result


def _unavailable(reasons: dict[str, str]) -> str:
    """Why some files have no tensor diff: each reason once, with the files it stands for (a
    100-shard LFS re-upload is one line, not a hundred)."""
    lines = []
    for reason in dict.fromkeys(reasons.values()):
        paths = [path for path, why in reasons.items() if why == reason]
        lines.append(f"tensor-level diff unavailable: {listing(paths, 3)}: {reason}")
    return "\n".join(lines)


def _reconstruction(views: Sequence[RevisionView], xet_hash: str) -> Reconstruction | str:
    """A reconstruction the tracker fetched, from whichever view holds it."""
    read = next((r for v in views if (r := v.reconstruction(xet_hash)) is not None), None)
    if read is None:
        # NOTE: fetched as a revision is polled, and kept in the store; one a request failed
        # for, or a revision stored before terms were kept, has none
        return "its Xet reconstruction was not fetched"
    if read.status is not ReadStatus.STORED or read.data is None:
        return f"its Xet reconstruction could not be fetched ({read.error or read.status})"
    try:
        return parse_reconstruction(read.data)
    except UnsafeContent as exc:
        return f"its Xet reconstruction is malformed ({exc})"


def tensor_summary(paths: Sequence[str], result: TensorDiff) -> str:
    """One sentence: `embed_tokens and lm_head changed (0.4% of bytes); 290 of 292 tensors
    byte-identical`."""
    where = paths[0] if len(paths) == 1 else f"{len(paths)} files"
    if result.identical_upload:
        return f"{where}: byte-identical re-upload: the same chunks as before, every tensor."
    share = f"{100 * result.new_bytes / result.size:.1f}%" if result.size else "?"
    if result.total and len(result.changed) == result.total:
        return f"{where}: all {result.total} tensors changed ({share} of bytes new)."
    if result.total and result.identical == result.total:
        # new bytes outside every tensor: the header's metadata, padding
        return f"{where}: all {result.total} tensors byte-identical; only the header changed."
    changed = _names(result.changed) if result.changed else "no tensor certainly"
    text = f"{where}: {changed} changed ({share} of bytes new)"
    if result.possibly:
        text += f", {len(result.possibly)} possibly (a new chunk spans their edge)"
    return f"{text}; {result.identical} of {result.total} tensors byte-identical."


def _names(names: Sequence[str]) -> str:
    if len(names) == 2:
        return f"{names[0]} and {names[1]}"
    return listing(names, 3)


def tensor_detail(result: TensorDiff) -> str:
    lines = [f"changed: {name}" for name in result.changed]
    lines += [f"possibly changed: {name}" for name in result.possibly]
    return "\n".join(lines)


def with_tensor_diff(old: RevisionView, new: RevisionView, change: Change) -> Change:
    """A `weights.reuploaded` change told per tensor where the chunks say it, with the reason
    where they cannot."""
    paths = sorted(p for p in change.after if isinstance(change.after, dict))
    total, reasons, told = TensorDiff(), dict[str, str](), []
    for path in paths:
        found = file_diff(old, new, path)
        if isinstance(found, str):
            reasons[path] = found
        else:
            total.add(found)
            told.append(path)
    unavailable = _unavailable(reasons)
    if not told:
        return replace(change, detail="\n".join(filter(None, (change.detail, unavailable))))
    after = {TENSOR_DIFF: total.json(), **change.after}
    if len(json.dumps(after)) > AFTER_MAX:
        # NOTE: a value over summary.VALUE_MAX is stored as a preview only; the new object of
        # each shard is in the detail already ("path: old → new"), the tensor diff is not
        after = {TENSOR_DIFF: total.json()}
    detail = "\n".join(filter(None, (tensor_detail(total), unavailable, change.detail)))
    return replace(change, summary=tensor_summary(told, total), after=after, detail=detail)
