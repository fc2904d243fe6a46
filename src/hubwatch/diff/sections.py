"""Sections of JSON files: pairing a file across two revisions, hashing sections, showing values."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from hubwatch.formats.view import RevisionView
from hubwatch.models import FileEntry


def pair(old: RevisionView, new: RevisionView, path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both sides of a JSON object file, `{}` where absent or not an object.

    A file that appears together with the model's first `config.json` (a first upload) is
    compared with itself: everything in it is new, and "files added" already says so.
    """
    before, after = old.json(path), new.json(path)
    if first_upload(old, path) or unread(old, path):
        before = after  # nothing known of the keys before: none is said to change
    elif unread(new, path):
        after = before  # nor after: an unreadable file is not a file whose keys are unset
    return (before if isinstance(before, dict) else {}), (after if isinstance(after, dict) else {})


def unread(view: RevisionView, path: str) -> bool:
    """Whether `path` is in the revision but could not be read as a JSON object (over the cap,
    not JSON, not an object): its keys are unknown, not unset."""
    return path in view.files and not isinstance(view.json(path), dict)


def object_id(entry: FileEntry) -> str:
    """What a file's content is known by: its LFS object's sha256, else its git blob id."""
    return entry.lfs_sha256 or entry.blob_id


def same_blob(old: RevisionView, new: RevisionView, path: str) -> bool:
    """Whether `path` holds the same bytes in both revisions (or is absent from both)."""
    a, b = old.files.get(path), new.files.get(path)
    return (a.blob_id if a else None) == (b.blob_id if b else None)


def first_upload(old: RevisionView, path: str) -> bool:
    """Whether `path` is new in a revision that uploads the model (no config.json before)."""
    return path not in old.files and not _has_model(old)


def _has_model(view: RevisionView) -> bool:
    return any(p == "config.json" or p.endswith("/config.json") for p in view.files)


def digest(value: Any) -> str:
    """A stable hash of a JSON value (key order ignored)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def changed_keys(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Top-level keys whose values differ.

    Each section is compared whole first (C-level equality, no copy); only sections that
    compare unequal, or equal across types (`1` and `1.0`, `true` and `1`), are hashed.
    """
    keys = sorted(before.keys() | after.keys())
    return [key for key in keys if _differs(before, after, key)]


def _differs(before: Mapping[str, Any], after: Mapping[str, Any], key: str) -> bool:
    if (key in before) != (key in after):
        return True
    b, a = before[key], after[key]
    if b is a or (type(b) is type(a) and isinstance(b, str | dict | list) and b == a):
        return False
    return digest(b) != digest(a)


def show(value: Any, limit: int = 80) -> str:
    """A value as a short readable string for a summary."""
    if value is None:
        return "unset"
    if isinstance(value, str):  # its first characters encode as the start of the whole
        text = json.dumps(value[:limit], ensure_ascii=False)
        text = text if len(value) <= limit else text[:-1]
    else:
        text = "".join(_first(_ENCODER.iterencode(value), limit + 1))  # not all of a long value
    return text if len(text) <= limit else text[: limit - 1] + "…"


_ENCODER = json.JSONEncoder(ensure_ascii=False)


def _first(chunks: Iterable[str], limit: int) -> Iterator[str]:
    """The chunks until `limit` characters are in hand (the last one may go past them); a
    string as long as a 30 MB file is cut, not encoded whole."""
    held = 0
    for chunk in chunks:
        if len(chunk) > limit - held:
            yield chunk[: limit - held]
            return
        yield chunk
        held += len(chunk)


def listing(items: Iterable[Any], limit: int = 5) -> str:
    """The first few items, comma-separated, with how many more there are."""
    items = list(items)
    shown = ", ".join(str(item) for item in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def arrow(before: Any, after: Any) -> str:
    return f"{show(before)} → {show(after)}"


def other_settings(
    path: str, keys: list[str], before: dict[str, Any], after: dict[str, Any], prefix: str = ""
) -> str:
    """The sentence for settings no rule names: each with its values when there are few,
    their names when there are many (`prefix`: the sub-config they sit in)."""
    if len(keys) <= 3:
        named = ", ".join(f"{prefix}{k} {arrow(before.get(k), after.get(k))}" for k in keys)
    else:
        named = listing(prefix + k for k in keys)
    return f"{path}: {len(keys)} other setting(s) changed: {named}."
