"""Pickle-format weight files (`.bin`, `.pt`…) compared by their LFS objects and sizes, the only
thing a revision says about them: new content, a tensor that changed size, placeholders filled."""

from __future__ import annotations

from hubwatch.diff.sections import listing, object_id
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, FileEntry, Severity

PLACEHOLDER_BYTES = 1024
"""A weight file kept in git (not LFS) under this size holds no tensors: a symlink (git mode
120000 stores the target path), an empty file, a note. No pickle loader can read it."""


def holds_weights(raw: bytes) -> bool:
    """Whether bytes start as a weight file does: a pickle, a zip (torch.save), a safetensors
    header, GGUF."""
    return (
        raw[:1] == b"\x80"
        or raw.startswith((b"PK\x03\x04", b"GGUF"))
        or (len(raw) > 8 and raw[8:9] == b"{")
    )


def is_placeholder(entry: FileEntry, view: RevisionView | None = None) -> bool:
    """Under 1 KiB and not in LFS, and (when `view` holds its bytes) not starting as weights
    do; without its bytes, a safetensors file whose header was read is not one."""
    if entry.lfs_sha256 is not None or entry.size >= PLACEHOLDER_BYTES:
        return False
    raw = view.raw(entry.path) if view is not None else None
    if raw is not None:
        return not holds_weights(raw)
    if view is not None and entry.path.endswith(".safetensors"):
        return view.header(entry.path) is None
    return True


def pickle_object_changes(
    old: RevisionView, new: RevisionView, pickle_paths: set[str]
) -> list[Change]:
    """One `weights.changed` when pickle weight files present on both sides hold new objects:
    their objects and sizes (the policy reads the sizes: a tensor that changed size)."""
    changed = sorted(
        p
        for p in pickle_paths
        if p in old.files and p in new.files and object_id(old.files[p]) != object_id(new.files[p])
    )
    if not changed:
        return []
    was = {p: old.files[p] for p in changed}
    now = {p: new.files[p] for p in changed}
    filled = [p for p in changed if is_placeholder(was[p], old) and not is_placeholder(now[p], new)]
    resized = [p for p in changed if was[p].size != now[p].size and p not in filled]
    size_b, size_a = sum(e.size for e in was.values()), sum(e.size for e in now.values())
    if filled:
        what = f"{len(filled)} placeholder file(s) (under 1 KiB, not LFS) now hold pickle weights"
    elif resized:
        what = f"{len(resized)} changed size ({listing(_moves(was, now, resized), 2)})"
    else:
        what = "new content, the same sizes"
    return [
        Change(
            "weights.changed",
            Severity.BEHAVIOR,
            f"Weights changed (pickle files, headers unavailable): {len(changed)} file(s), "
            f"{size_b:,} → {size_a:,} bytes; {what}.",
            changed[0] if len(changed) == 1 else None,
            {
                "objects": {p: object_id(e) for p, e in was.items()},
                "sizes": {p: e.size for p, e in was.items()},
            },
            {
                "objects": {p: object_id(e) for p, e in now.items()},
                "sizes": {p: e.size for p, e in now.items()},
            },
        )  # fmt: skip
    ]


def _moves(was: dict[str, FileEntry], now: dict[str, FileEntry], paths: list[str]) -> list[str]:
    return [f"{p} {was[p].size:,} → {now[p].size:,} bytes" for p in paths]
