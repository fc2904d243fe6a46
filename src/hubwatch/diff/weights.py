"""Weights: tensors, shapes, dtypes and parameters from safetensors headers; formats, shard
layout and re-uploads from the file list (LFS object ids and sizes) when headers are missing."""

from __future__ import annotations

import math
import posixpath
from collections import Counter
from dataclasses import replace
from typing import Any

from hubwatch.diff.sections import listing
from hubwatch.diff.tensors import with_tensor_diff
from hubwatch.diff.weights_objects import is_placeholder, pickle_object_changes
from hubwatch.formats.safetensors import index_shards
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, FileEntry, Severity

PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".ckpt")
"""Weight formats that unpickle on load: loading one can run arbitrary code."""
# Bytes per parameter, by config torch_dtype name.
_CONFIG_DTYPE_BYTES = {
    "float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2, "float64": 8,
    "int8": 1, "uint8": 1, "float8_e4m3fn": 1, "float8_e5m2": 1,
}  # fmt: skip

Tensors = dict[str, tuple[str, tuple[int, ...]]]


def weight_format(path: str) -> str | None:
    """safetensors, pickle or gguf for a weight file; None for anything else."""
    name = posixpath.basename(path).lower()
    if name.endswith(".safetensors"):
        return "safetensors"
    if name.endswith(".gguf"):
        return "gguf"
    if name.endswith(PICKLE_SUFFIXES) and not name.startswith("training_args"):
        return "pickle"
    return None


def diff_weights(old: RevisionView, new: RevisionView) -> list[Change]:
    """Changes to the weight files of a revision."""
    before = {p: e for p, e in old.files.items() if weight_format(p)}
    after = {p: e for p, e in new.files.items() if weight_format(p)}
    placeholders = {p for p, entry in after.items() if is_placeholder(entry, new)}
    changes = _formats(before, {p: e for p, e in after.items() if p not in placeholders})
    pickles = {p for p in before.keys() & after.keys() if weight_format(p) == "pickle"}
    changes += pickle_object_changes(old, new, pickles)
    old_st = {p: e for p, e in before.items() if weight_format(p) == "safetensors"}
    new_st = {p: e for p, e in after.items() if weight_format(p) == "safetensors"}
    if not old_st or not new_st:
        return changes
    layout = _layout(old, new, old_st, new_st)
    if not _same_headers(old, new, old_st, new_st):
        old_t, new_t = _tensors(old, old_st), _tensors(new, new_st)
        if old_t is not None and new_t is not None:
            found = _by_headers(old_t, new_t, old_st, new_st)
            changes += [
                with_tensor_diff(old, new, c) if c.kind == "weights.reuploaded" else c
                for c in found
            ]
        elif _objects(old_st) != _objects(new_st):
            changes += _by_objects(old, new, old_st, new_st)
    changes += layout
    if _filling_in(old, old_st, new_st):
        # The shards an index already named arrive: an upload completing, which `health.weights`
        # reports; the tensors they bring and the new file count are that same event.
        changes = [c for c in changes if not _fill_in_noise(c)]
    if len(new_st) == 1 and new_st.keys() == old_st.keys():
        (only,) = new_st
        changes = [replace(c, path=only) if c.path is None else c for c in changes]
    return changes


def _filling_in(
    old: RevisionView, old_st: dict[str, FileEntry], new_st: dict[str, FileEntry]
) -> bool:
    """Whether the new safetensors files are only shards the old revision's index named."""
    arrived = new_st.keys() - old_st.keys()
    if not arrived:
        return False  # the usual revision: no index read
    named = {
        shard
        for path in old.files
        if path.endswith(".safetensors.index.json")
        for shard in index_shards(old, path)
    }
    return arrived <= named and old_st.keys() <= new_st.keys()


def _fill_in_noise(change: Change) -> bool:
    if change.kind == "weights.shard_layout":
        return True
    removed = change.before.get("removed") if isinstance(change.before, dict) else None
    renamed = change.before.get("renamed") if isinstance(change.before, dict) else None
    return change.kind == "weights.tensors" and not removed and not renamed


def _formats(before: dict[str, FileEntry], after: dict[str, FileEntry]) -> list[Change]:
    changes = []
    added = sorted(p for p in after if weight_format(p) == "pickle" and p not in before)
    removed = sorted(p for p in before if weight_format(p) == "pickle" and p not in after)
    if added:
        beside = (
            " beside safetensors weights"
            if any(weight_format(p) == "safetensors" for p in after)
            else ""
        )
        changes.append(
            Change(
                "weights.pickle_added",
                Severity.SECURITY,
                f"Pickle-capable weight files added{beside}: {listing(added)}; loading them can "
                "run arbitrary code.",
                added[0],
                None,
                added,
            )
        )
    if removed and not any(weight_format(p) == "pickle" for p in after):
        changes.append(
            Change(
                "weights.pickle_removed",
                Severity.INFO,
                f"Pickle-capable weight files removed: {listing(removed)}.",
                removed[0],
                removed,
                None,
            )
        )
    # GGUF files added or removed are `gguf.files` (diff/gguf/files.py), per model and
    # quantization; saying it here too would say it twice.
    return changes + _format_change(before, after, pickle_added=bool(added))


def _format_change(
    before: dict[str, FileEntry], after: dict[str, FileEntry], pickle_added: bool
) -> list[Change]:
    was = sorted({f for p in before if (f := weight_format(p)) != "gguf" and f})
    now = sorted({f for p in after if (f := weight_format(p)) != "gguf" and f})
    if not was or not now or was == now or (pickle_added and set(was) <= set(now)):
        # pickle added beside what was there: `weights.pickle_added` says it, more precisely
        return []
    summary = f"Weight format changed: {' + '.join(was)} → {' + '.join(now)}."
    return [Change("weights.format", Severity.BEHAVIOR, summary, None, was, now)]


def _same_headers(
    old: RevisionView, new: RevisionView, old_st: dict[str, FileEntry], new_st: dict[str, FileEntry]
) -> bool:
    """Whether both revisions hold the same safetensors objects with the same stored headers:
    the same tensors, and no object re-uploaded, so nothing to compare (most revisions)."""
    if _objects(old_st) != _objects(new_st):
        return False
    for path in new_st:
        sha = new.header_sha(path)
        if sha is None or sha != old.header_sha(path):
            return False
    return True


def _objects(files: dict[str, FileEntry]) -> dict[str, str]:
    return {p: e.lfs_sha256 or e.blob_id for p, e in files.items()}


def _tensors(view: RevisionView, files: dict[str, FileEntry]) -> Tensors | None:
    """Every tensor of the revision's safetensors files, or None if any header is missing."""
    tensors: Tensors = {}
    for path in files:
        header = view.header(path)
        if header is None:
            return None
        for name, info in header.items():
            if name == "__metadata__" or not isinstance(info, dict):
                continue
            shape = info.get("shape")
            shape = tuple(int(d) for d in shape) if isinstance(shape, list) else ()
            tensors[name] = (str(info.get("dtype")), shape)
    return tensors


def parameters(tensors: Tensors) -> dict[str, int]:
    """Parameter count per dtype."""
    counts: Counter[str] = Counter()
    for dtype, shape in tensors.values():
        counts[dtype] += math.prod(shape)
    return dict(sorted(counts.items()))


def _human(count: float) -> str:
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if count >= size:
            return f"{count / size:.2f}{unit}"
    return str(int(count))


def _by_headers(
    before: Tensors,
    after: Tensors,
    old_st: dict[str, FileEntry],
    new_st: dict[str, FileEntry],
) -> list[Change]:
    common = sorted(before.keys() & after.keys())
    changes = _names(before, after) + _shapes(before, after, common)
    changes += _dtypes(before, after, common)
    was, now = _objects(old_st), _objects(new_st)
    same_path = sorted(p for p in was.keys() & now.keys() if was[p] != now[p])
    if not changes and same_path:
        changes.append(
            Change(
                "weights.reuploaded",
                Severity.BEHAVIOR,
                f"{len(same_path)} of {len(now)} shard{'s' if len(now) > 1 else ''} re-uploaded"
                + (f" ({same_path[0]})" if len(same_path) == 1 else "")
                + ": new content, identical headers; outputs may change.",
                same_path[0] if len(same_path) == 1 else None,
                {p: was[p] for p in same_path},
                {p: now[p] for p in same_path},
                "\n".join(f"{p}: {was[p]} → {now[p]}" for p in same_path),
            )
        )
    return changes


def _names(before: Tensors, after: Tensors) -> list[Change]:
    """Tensors added, removed or renamed."""
    added = sorted(after.keys() - before.keys())
    removed = sorted(before.keys() - after.keys())
    renamed: dict[str, str] = {}
    # A tensor that vanished while one of the same dtype and shape appeared: a rename, when the
    # pairing is unambiguous.
    by_spec_removed = Counter(before[n] for n in removed)
    by_spec_added = Counter(after[n] for n in added)
    for name in removed:
        spec = before[name]
        if by_spec_removed[spec] == 1 and by_spec_added[spec] == 1:
            renamed[name] = next(n for n in added if after[n] == spec)
    added = [n for n in added if n not in renamed.values()]
    removed = [n for n in removed if n not in renamed]
    if not (added or removed or renamed):
        return []
    parts = []
    if added:
        parts.append(f"{len(added)} added ({listing(added, 3)})")
    if removed:
        parts.append(f"{len(removed)} removed ({listing(removed, 3)})")
    if renamed:
        parts.append(
            f"{len(renamed)} renamed ({listing((f'{a} → {b}' for a, b in renamed.items()), 3)})"
        )
    return [
        Change(
            "weights.tensors",
            Severity.BREAKING,
            f"Tensors changed: {'; '.join(parts)}; state dicts saved against the old names "
            "no longer load.",
            None,
            {"removed": removed[:50], "renamed": list(renamed)[:50]},
            {"added": added[:50], "renamed": list(renamed.values())[:50]},
        )
    ]


def _shapes(before: Tensors, after: Tensors, common: list[str]) -> list[Change]:
    """Tensors present on both sides with another shape."""
    reshaped = [n for n in common if before[n][1] != after[n][1]]
    if not reshaped:
        return []
    examples = (f"{n} {list(before[n][1])} → {list(after[n][1])}" for n in reshaped)
    return [
        Change(
            "weights.shape",
            Severity.BREAKING,
            f"{len(reshaped)} tensor shape(s) changed: {listing(examples, 3)}.",
            None,
            {n: list(before[n][1]) for n in reshaped[:50]},
            {n: list(after[n][1]) for n in reshaped[:50]},
        )
    ]


def _dtypes(before: Tensors, after: Tensors, common: list[str]) -> list[Change]:
    """Tensors stored in another dtype, and the parameter count per dtype."""
    retyped = [n for n in common if before[n][0] != after[n][0]]
    params_before, params_after = parameters(before), parameters(after)
    if not retyped and set(params_before) == set(params_after):
        return []
    moves = Counter(f"{before[n][0]} → {after[n][0]}" for n in retyped)
    total_b, total_a = sum(params_before.values()), sum(params_after.values())
    count = (
        f"parameter count unchanged ({_human(total_b)})"
        if total_b == total_a
        else f"parameters {_human(total_b)} → {_human(total_a)}"
    )
    return [
        Change(
            "weights.dtype",
            Severity.BEHAVIOR,
            f"Weight dtype changed for {len(retyped)} tensor(s) "
            f"({listing(f'{m} ×{c}' for m, c in moves.most_common())}); {count}.",
            None,
            {"parameters": params_before},
            {"parameters": params_after},
        )
    ]


def _config_dtype(view: RevisionView) -> str | None:
    config = view.json("config.json")
    if not isinstance(config, dict):
        return None
    dtype = config.get("torch_dtype", config.get("dtype"))
    return dtype if isinstance(dtype, str) else None


def _by_objects(
    old: RevisionView, new: RevisionView, old_st: dict[str, FileEntry], new_st: dict[str, FileEntry]
) -> list[Change]:
    """Headers are not available (LFS pointers): compare LFS objects, sizes and config dtype."""
    was, now = _objects(old_st), _objects(new_st)
    changed = sorted(p for p in was.keys() & now.keys() if was[p] != now[p])
    size_b = sum(e.size for e in old_st.values())
    size_a = sum(e.size for e in new_st.values())
    changes = [
        Change(
            "weights.changed",
            Severity.BEHAVIOR,
            f"Weights changed (LFS objects differ; headers unavailable): "
            f"{len(old_st)} file(s), {size_b:,} bytes → {len(new_st)} file(s), {size_a:,} bytes"
            + (f"; new content in {listing(changed, 3)}" if changed else "")
            + ".",
            None,
            was,
            now,
        )
    ]
    dtype_b, dtype_a = _config_dtype(old), _config_dtype(new)
    if dtype_b != dtype_a and dtype_b in _CONFIG_DTYPE_BYTES and dtype_a in _CONFIG_DTYPE_BYTES:
        est_b = size_b / _CONFIG_DTYPE_BYTES[dtype_b]
        est_a = size_a / _CONFIG_DTYPE_BYTES[dtype_a]
        same = abs(est_b - est_a) <= 0.01 * max(est_b, est_a)
        count = (
            f"parameter count unchanged (about {_human(est_a)}, from file sizes)"
            if same
            else f"parameters about {_human(est_b)} → {_human(est_a)} (from file sizes)"
        )
        changes.append(
            Change(
                "weights.dtype",
                Severity.BEHAVIOR,
                f"Weight dtype changed {dtype_b} → {dtype_a} (config torch_dtype; headers "
                f"unavailable); {count}.",
                "config.json",
                {"dtype": dtype_b, "estimated_parameters": round(est_b)},
                {"dtype": dtype_a, "estimated_parameters": round(est_a)},
            )
        )
    return changes


def _layout(
    old: RevisionView, new: RevisionView, old_st: dict[str, FileEntry], new_st: dict[str, FileEntry]
) -> list[Change]:
    """The shard layout: how many files, and whether an index maps tensors to them."""

    def describe(view: RevisionView, files: dict[str, FileEntry]) -> dict[str, Any]:
        indexes = sorted(p for p in view.files if p.endswith(".safetensors.index.json"))
        return {"files": sorted(files), "index": indexes[0] if indexes else None}

    b, a = describe(old, old_st), describe(new, new_st)
    if b == a:
        return []

    def words(layout: dict[str, Any]) -> str:
        n = len(layout["files"])
        index = " with an index" if layout["index"] else ""
        return f"{n} shard(s){index}" if n > 1 else f"one file ({layout['files'][0]}){index}"

    return [
        Change(
            "weights.shard_layout",
            Severity.INFO,
            f"Shard layout changed: {words(b)} → {words(a)}.",
            None,
            b,
            a,
        )
    ]
