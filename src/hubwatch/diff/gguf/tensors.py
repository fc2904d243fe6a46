"""GGUF tensors: which tensors changed quantization type (and the file type), and tensors added,
removed or re-shaped. Summarised by pattern (`blk.*.ffn_down.weight`), not one line per layer."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from hubwatch.diff.gguf.pairs import ModelPair, paired
from hubwatch.diff.sections import listing, show
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, Severity
from hubwatch.models.gguf import GGUFTensor

FILE_TYPE, QUANT_VERSION = "general.file_type", "general.quantization_version"
OWNED = frozenset({FILE_TYPE, QUANT_VERSION})
"""The metadata keys this module reports."""
_NUMBER = re.compile(r"(?<=\.)\d+(?=\.|$)")
_KEPT = 50  # patterns kept in before/after


def pattern(name: str) -> str:
    """A tensor name with its layer numbers as `*` (`blk.7.ffn_down.weight` → `blk.*.ffn_down…`)."""
    return _NUMBER.sub("*", name)


def _patterns(names: Iterable[str]) -> Counter[str]:
    return Counter(map(pattern, names))


def _counted(counts: Counter[str], limit: int = 3) -> str:
    return listing((f"{p} ×{n}" if n > 1 else p for p, n in counts.most_common()), limit)


def _by_name(tensors: tuple[GGUFTensor, ...]) -> dict[str, GGUFTensor]:
    return {tensor.name: tensor for tensor in tensors}


def diff_gguf_quantization(old: RevisionView, new: RevisionView) -> list[Change]:
    """Per GGUF model: the tensors whose ggml type changed, by pattern, and the file type."""
    changes = []
    for pair in paired(old, new):
        change = _quantization(pair)
        if change is not None:
            changes.append(change)
    return changes


def _quantization(pair: ModelPair) -> Change | None:
    before, after = _by_name(pair.before.tensors), _by_name(pair.after.tensors)
    moves = Counter(
        (pattern(name), before[name].type, after[name].type)
        for name in before.keys() & after.keys()
        if before[name].type != after[name].type
    )
    file_type = pair.metadata(FILE_TYPE)
    version = pair.metadata(QUANT_VERSION)
    if not moves and file_type[0] == file_type[1] and version[0] == version[1]:
        return None
    ordered = sorted(moves.items(), key=lambda item: (-item[1], item[0]))
    parts = []
    if moves:
        count = sum(moves.values())
        shown = (f"{p}: {b} → {a}" + (f" ×{n}" if n > 1 else "") for (p, b, a), n in ordered)
        parts.append(f"{count} tensor(s) changed type ({listing(shown, 3)})")
    if file_type[0] != file_type[1]:
        parts.append(f"file_type {show(file_type[0])} → {show(file_type[1])}")
    if version[0] != version[1]:
        parts.append(f"quantization_version {show(version[0])} → {show(version[1])}")
    return Change(
        "gguf.quantization",
        Severity.BEHAVIOR,
        f"{pair.label}: quantization changed: {'; '.join(parts)}.",
        pair.name,
        {
            "file_type": file_type[0],
            "types": {p: b for (p, b, _), _n in ordered[:_KEPT]},
            "nbytes": pair.before.nbytes,
        },
        {
            "file_type": file_type[1],
            "types": {p: a for (p, _, a), _n in ordered[:_KEPT]},
            "nbytes": pair.after.nbytes,
        },
        "\n".join(f"{p}: {b} → {a} ×{n}" for (p, b, a), n in ordered)[:20_000] or None,
    )


def diff_gguf_tensors(old: RevisionView, new: RevisionView) -> list[Change]:
    """Per GGUF model: tensors added, removed or re-shaped (the architecture changed)."""
    changes = []
    for pair in paired(old, new):
        change = _tensors(pair)
        if change is not None:
            changes.append(change)
    return changes


def _tensors(pair: ModelPair) -> Change | None:
    before, after = _by_name(pair.before.tensors), _by_name(pair.after.tensors)
    added = _patterns(after.keys() - before.keys())
    removed = _patterns(before.keys() - after.keys())
    reshaped = sorted(
        name for name in before.keys() & after.keys() if before[name].shape != after[name].shape
    )
    if not (added or removed or reshaped):
        return None
    parts = []
    if added:
        parts.append(f"{added.total()} added ({_counted(added)})")
    if removed:
        parts.append(f"{removed.total()} removed ({_counted(removed)})")
    if reshaped:
        shapes = Counter(
            (pattern(n), str(list(before[n].shape)), str(list(after[n].shape))) for n in reshaped
        )
        shown = (
            f"{p} {b} → {a}" + (f" ×{n}" if n > 1 else "") for (p, b, a), n in shapes.most_common()
        )
        parts.append(f"{len(reshaped)} re-shaped ({listing(shown, 3)})")
    return Change(
        "gguf.tensors",
        Severity.BREAKING,
        f"{pair.label}: tensors changed: {'; '.join(parts)}; the architecture differs.",
        pair.name,
        {
            "removed": dict(removed.most_common(_KEPT)),
            "shapes": {n: list(before[n].shape) for n in reshaped[:_KEPT]},
        },
        {
            "added": dict(added.most_common(_KEPT)),
            "shapes": {n: list(after[n].shape) for n in reshaped[:_KEPT]},
        },
    )
