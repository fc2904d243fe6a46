"""`revision.partial`: the change that says a revision could not be read whole, and why.

A revision is partial when a file's content or safetensors header is `invalid`, `error`, or
`unavailable` because the repository lacks the object; when its front matter cannot be read;
when the source found something wrong with the commit itself (`CommitInfo.problems`); or when a
step of the pipeline crashed on it. A file over its size cap, or a weight kept in LFS that a
git mirror cannot read, is not: those are skipped by design. A file that failed the same way in
the revision the changes are computed against (same path, same blob, same status) is not
repeated, so an old broken file does not make every later revision partial.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from hubwatch.models import Change, ReadResult, ReadStatus, Severity, Snapshot, StoredFile
from hubwatch.models.revision import MISSING_OBJECT
from hubwatch.tracker.select import MODEL_CARD
from hubwatch.tracker.snapshot import SHARDS_MISSING

KIND = "revision.partial"
SHOWN = 3
"""Failed reads named in the summary; the detail and `after` list every one."""
_MISSING = (MISSING_OBJECT, "damaged")
"""What an `unavailable` reason says when the repository lacks the bytes (not LFS by design)."""


@dataclass(frozen=True, slots=True)
class FailedRead:
    """One read of a revision that failed: a file's content or header, or the model card."""

    path: str
    part: str
    """`content`, `header` or `front matter`."""
    status: str
    reason: str

    def label(self) -> str:
        part = "" if self.part == "content" else f" {self.part}"
        return f"{self.path}{part} ({self.status}: {_clip(self.reason, 200)})"


@dataclass
class Partial:
    """Everything one revision could not read; `change()` says it as one `revision.partial`."""

    reads: list[FailedRead] = field(default_factory=list)
    commit: list[str] = field(default_factory=list)
    """The source's problems with the commit itself."""
    steps: list[str] = field(default_factory=list)
    """Steps that crashed on this revision, one reason each (`snapshot failed: …`)."""

    def change(self) -> Change | None:
        """The `revision.partial` change (INFO); None when the revision was read whole."""
        parts = []
        if self.reads:
            paths = len({read.path for read in self.reads})
            shown = ", ".join(read.label() for read in self.reads[:SHOWN])
            more = len(self.reads) - SHOWN
            shown += f" and {more} more" if more > 0 else ""
            parts.append(f"{paths} file{'' if paths == 1 else 's'} could not be read: {shown}")
        parts += [f"commit: {_clip(problem, 200)}" for problem in self.commit]
        parts += [_clip(step, 300) for step in self.steps]
        if not parts:
            return None
        detail = [read.label() for read in self.reads]
        detail += [f"commit: {problem}" for problem in self.commit] + self.steps
        after = {
            "files": [dataclasses.asdict(read) for read in self.reads],
            "commit": list(self.commit),
            "steps": list(self.steps),
        }
        return Change(
            KIND, Severity.INFO, _clip("; ".join(parts), 1000), None, None, after, "\n".join(detail)
        )


def partial_of(snapshot: Snapshot, base_files: Sequence[StoredFile] = ()) -> Partial:
    """What `snapshot` could not read, leaving out failures it shares with `base_files`."""
    base = {stored.path: stored for stored in base_files}
    reads: list[FailedRead] = []
    for entry in snapshot.files:
        before = base.get(entry.path)
        same_blob = before is not None and (before.blob_id, before.lfs_sha256) == (
            entry.blob_id,
            entry.lfs_sha256,
        )
        for part, read, was in (
            ("content", snapshot.contents.get(entry.path), before and before.content_status),
            ("header", snapshot.headers.get(entry.path), before and before.header_status),
        ):
            if read is not None and _failed(read) and not (same_blob and was == read.status):
                reads.append(_failed_read(entry.path, part, read))
        if entry.path == MODEL_CARD and snapshot.card_error and not same_blob:
            if not any(read.path == MODEL_CARD for read in reads):
                reads.append(FailedRead(MODEL_CARD, "front matter", "invalid", snapshot.card_error))
    return Partial(reads, [one_line(p) for p in snapshot.commit.problems])


def with_partial(snapshot: Snapshot, partial: Partial) -> Snapshot:
    """`snapshot` with its `revision.partial` change set (or removed, when nothing failed)."""
    changes = tuple(change for change in snapshot.changes if change.kind != KIND)
    change = partial.change()
    return dataclasses.replace(snapshot, changes=(*changes, change) if change else changes)


def _failed(read: ReadResult) -> bool:
    if read.status is ReadStatus.INVALID and SHARDS_MISSING in (read.error or ""):
        return False  # an upload in progress: `health.weights` says so, once
    if read.status in (ReadStatus.INVALID, ReadStatus.ERROR):
        return True
    reason = (read.error or "").lower()
    return read.status is ReadStatus.UNAVAILABLE and any(word in reason for word in _MISSING)


def _failed_read(path: str, part: str, read: ReadResult) -> FailedRead:
    reason = one_line(read.error or read.status.value)
    # Older reasons start with the path ("config.json: …", "config.json is not …"); say it once.
    reason = reason.removeprefix(f"{path}: ")
    return FailedRead(path, part, read.status.value, reason)


def one_line(text: str) -> str:
    """`text` on one line: line breaks and other control characters become spaces."""
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
