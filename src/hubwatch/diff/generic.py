"""Every changed file yields a change: its changed JSON keys, a text diff, or its size and hash.

Each specific differ declares the paths it owns in `CLAIMS`. The generic differ reports every
modified file no differ claims; run by `diff_revisions` after the others, it also reports a claimed
file whose owners said nothing about it (a `tokenizer.json` edit no tokenizer rule covers), so a
changed file is reported once, and "nothing reported" only ever means "nothing changed".
"""

from __future__ import annotations

import fnmatch
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from hubwatch.diff.files import unified
from hubwatch.diff.gguf.pairs import model_name
from hubwatch.diff.sections import digest, listing, object_id
from hubwatch.diff.vocab_files import PATTERNS as VOCAB_PATTERNS
from hubwatch.formats.license import CLAIMED as LICENSE_PATTERNS
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, FileEntry, Severity

_TOKENIZER_FILES = (
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
    "vocab.json", "vocab.txt", "merges.txt",
)  # fmt: skip
_TEMPLATE_FILES = (
    "tokenizer_config.json", "processor_config.json", "chat_template.json", "chat_template.jinja",
)  # fmt: skip
_GGUF_DIFFERS = (
    "gguf_files", "gguf_chat_template", "gguf_special_tokens", "gguf_vocabulary",
    "gguf_context", "gguf_quantization", "gguf_tensors", "gguf_metadata",
)  # fmt: skip

CLAIMS: dict[str, tuple[str, ...]] = {
    "config": ("config.json", "*/config.json"),
    "generation": ("generation_config.json",),
    "tokenizer": tuple(p + n for n in _TOKENIZER_FILES for p in ("", "*/")),
    "chat_template": (*_TEMPLATE_FILES, "additional_chat_templates/*.jinja"),
    "weights": ("*.safetensors", "*.bin", "*.pt", "*.pth", "*.pkl", "*.ckpt"),
    "code": ("*.py", "requirements*.txt", "*/requirements*.txt"),
    "vocab_files": VOCAB_PATTERNS,
    "card": ("README.md",),
    "license": LICENSE_PATTERNS,
    "mistral": tuple(
        p + n for n in ("params.json", "tekken.json", "SYSTEM_PROMPT.txt") for p in ("", "*/")
    ),
    **dict.fromkeys(_GGUF_DIFFERS, ("*.gguf", "*.GGUF")),
}
"""Differ name (its key in `DIFFERS`) → the path patterns it owns (`fnmatch` on the whole path).

The GGUF differs report a model by its name (`gguf_pairs.model_name`): a change naming a split
model covers each of its parts."""

WHOLE_REVISION_CLAIMS = frozenset({"weights"})
"""Owners that report their files as a whole (one roll-up naming one shard, or none): any change
from them covers every file they claim."""

ROLL_UP_AFTER = 5
"""More json/text changes than this in one revision become one change; binary ones always do."""
_MAX_KEYS = 100  # changed keys kept in before/after (the count is always exact)
_MAX_DETAIL = 20_000
_SUMMARY = 160


def claimants(path: str) -> list[str]:
    """The differs that claim `path`."""
    return [name for name, patterns in CLAIMS.items() if _matches(path, patterns)]


def _matches(path: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in patterns)


def modified(old: RevisionView, new: RevisionView) -> list[str]:
    """Paths present on both sides with other bytes (added and removed are `files.*`)."""
    return sorted(
        path
        for path in old.files.keys() & new.files.keys()
        if object_id(old.files[path]) != object_id(new.files[path])
    )


def diff_generic(
    old: RevisionView, new: RevisionView, reported: Mapping[str, list[Change]] | None = None
) -> list[Change]:
    """A change for each modified file no differ claims, rolled up per kind.

    `reported`: what the other differs said, by name; with it, claimed files their owners said
    nothing about are reported too (an owner that did not run says nothing).
    """
    changes = [
        change
        for path in modified(old, new)
        if _uncovered(path, reported)
        for change in file_changes(old, new, path)
    ]
    return roll_up(changes)


def _uncovered(path: str, reported: Mapping[str, list[Change]] | None) -> bool:
    owners = claimants(path)
    if path.endswith(".index.json"):  # the weights differ may have said it as the shard layout
        said = (reported or {}).get("weights", [])
        return not any(change.kind == "weights.shard_layout" for change in said)
    if not owners:
        return True
    if reported is None:
        return False
    names = {path, model_name(path)}
    for owner in owners:
        said = reported.get(owner, [])
        if owner in WHOLE_REVISION_CLAIMS and said:
            return False
        if any(change.path in names for change in said):
            return False
    return True


def file_changes(old: RevisionView, new: RevisionView, path: str) -> list[Change]:
    """What changed in one modified file, by its class: JSON, text, else binary."""
    if path.endswith(".json"):
        before, after = old.json(path), new.json(path)
        if before is not None and after is not None:
            if path.endswith(".index.json"):
                return _index_change(path, before, after)
            return _json_change(path, before, after, _kind_for(path))
    text_b, text_a = _text(old, path), _text(new, path)
    if text_b is not None and text_a is not None:
        return _text_change(old, new, path)
    return [_binary_change(old, new, path)]


# -- JSON --------------------------------------------------------------------------------------


def changed_paths(
    before: Any, after: Any, prefix: tuple[str, ...] = ()
) -> Iterable[tuple[str, ...]]:
    """Key paths of the leaves (or whole values) that differ; objects are walked into."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(before.keys() | after.keys(), key=str):
            if key not in before or key not in after:
                yield (*prefix, key)
            else:
                yield from changed_paths(before[key], after[key], (*prefix, key))
    elif before is not after and digest(before) != digest(after):
        yield prefix


def _at(value: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


_OWNED_JSON = ("config", "generation", "tokenizer", "chat_template", "mistral")
"""Owners whose files' other keys are reported in their own namespace (`generation.other`)."""


def _kind_for(path: str) -> str:
    """`json.changed`, or `<owner>.other` for keys the file's own differ does not know."""
    owner = next((name for name in claimants(path) if name in _OWNED_JSON), None)
    return f"{owner}.other" if owner else "json.changed"


def _index_change(path: str, before: Any, after: Any) -> list[Change]:
    """A weight index: its shards and total size, as the shard layout (the weights' own kind)."""
    shards_b, shards_a = _shards(before), _shards(after)
    size_b, size_a = _total(before), _total(after)
    if shards_b == shards_a and size_b == size_a:
        return _json_change(path, before, after, "json.changed")
    parts = []
    if shards_b != shards_a:
        parts.append(f"{len(shards_b)} shard(s) → {len(shards_a)}")
    if size_b != size_a:
        parts.append(f"total_size {size_b} → {size_a}")
    return [
        Change(
            "weights.shard_layout",
            Severity.INFO,
            _cut(f"{path}: {', '.join(parts)}."),
            path,
            {"shards": sorted(shards_b)[:_MAX_KEYS], "total_size": size_b},
            {"shards": sorted(shards_a)[:_MAX_KEYS], "total_size": size_a},
        )
    ]


def _shards(index: Any) -> set[str]:
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    return {str(v) for v in weight_map.values()} if isinstance(weight_map, dict) else set()


def _total(index: Any) -> Any:
    metadata = index.get("metadata") if isinstance(index, dict) else None
    return metadata.get("total_size") if isinstance(metadata, dict) else None


def _json_change(path: str, before: Any, after: Any, kind: str) -> list[Change]:
    keys = list(changed_paths(before, after))
    if not keys:
        return []  # reformatted only: no value changed
    names = [".".join(k) or "(whole file)" for k in keys]
    kept = list(zip(names, keys, strict=True))[:_MAX_KEYS]
    return [
        Change(
            kind,
            Severity.INFO,
            _cut(f"{path}: {len(keys)} key(s) changed: {listing(names, 4)}."),
            path,
            {name: _at(before, k) for name, k in kept},
            {name: _at(after, k) for name, k in kept},
            "\n".join(names) if len(names) > 4 else None,
        )
    ]


# -- text and binary ---------------------------------------------------------------------------


def _text(view: RevisionView, path: str) -> str | None:
    """The file as text when it is stored and reads as UTF-8 without NUL bytes."""
    raw = view.raw(path)
    if raw is None or b"\0" in raw:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _text_change(old: RevisionView, new: RevisionView, path: str) -> list[Change]:
    diff = unified(old, new, path)
    lines = diff.splitlines()
    plus = [line[1:] for line in lines if line.startswith("+") and not line.startswith("+++")]
    minus = [line[1:] for line in lines if line.startswith("-") and not line.startswith("---")]
    if not plus and not minus:
        return []
    return [
        Change(
            "text.changed",
            Severity.INFO,
            _cut(f"{path}: +{len(plus)} -{len(minus)} lines."),
            path,
            minus[:_MAX_KEYS],
            plus[:_MAX_KEYS],
            diff,
        )
    ]


def _sha256(view: RevisionView, entry: FileEntry) -> str | None:
    if entry.lfs_sha256:
        return entry.lfs_sha256
    raw = view.raw(entry.path)
    return hashlib.sha256(raw).hexdigest() if raw is not None else None


def _binary_change(old: RevisionView, new: RevisionView, path: str) -> Change:
    a, b = old.files[path], new.files[path]
    was = {"size": a.size, "sha256": _sha256(old, a), "blob_id": a.blob_id}
    now = {"size": b.size, "sha256": _sha256(new, b), "blob_id": b.blob_id}

    # NOTE: without the bytes (an LFS pointer's object unread) only the git blob id, a sha-1 of
    # what is committed, is known: it is named as such, never as a sha256
    label = "sha256" if was["sha256"] and now["sha256"] else "git blob"

    def short(side: dict[str, Any]) -> str:
        return str(side["sha256"] if label == "sha256" else side["blob_id"])[:12]

    return Change(
        "binary.changed",
        Severity.INFO,
        _cut(f"{path}: {a.size:,} → {b.size:,} bytes, {label} {short(was)} → {short(now)}."),
        path,
        was,
        now,
    )


# -- roll-ups ----------------------------------------------------------------------------------

_NOUNS = {"json.changed": "JSON files", "text.changed": "text files", "binary.changed": "files"}


def roll_up(changes: list[Change]) -> list[Change]:
    """One change per kind when a revision has many (binary: more than one) of it."""
    out: list[Change] = []
    for kind in dict.fromkeys(change.kind for change in changes):
        same = [change for change in changes if change.kind == kind]
        limit = 1 if kind == "binary.changed" else ROLL_UP_AFTER
        out += [_rolled(kind, same)] if len(same) > limit else same
    return out


def _rolled(kind: str, same: list[Change]) -> Change:
    paths = [str(change.path) for change in same]
    detail = "\n".join(change.summary for change in same)
    if kind == "binary.changed":
        size_b = sum(int(change.before["size"]) for change in same)
        size_a = sum(int(change.after["size"]) for change in same)
        what = f"new content ({size_b:,} → {size_a:,} bytes in all)"
    else:
        what = "changed"
    return Change(
        kind,
        max((change.severity for change in same), key=lambda s: s.rank),
        _cut(f"{len(same)} {_NOUNS.get(kind, 'files')} {what}: {listing(paths, 3)}."),
        None,
        {change.path: change.before for change in same[:_MAX_KEYS]},
        {change.path: change.after for change in same[:_MAX_KEYS]},
        detail if len(detail) <= _MAX_DETAIL else detail[:_MAX_DETAIL] + "\n… (truncated)",
    )


def _cut(summary: str) -> str:
    return summary if len(summary) <= _SUMMARY else summary[: _SUMMARY - 1] + "…"
