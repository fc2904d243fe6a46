"""GGUF files: models (quantizations) added or removed, split layouts, re-uploads with identical
headers, and models whose header is unread."""

from __future__ import annotations

from hubwatch.diff.gguf.pairs import common, identities, label, paired
from hubwatch.diff.sections import listing
from hubwatch.diff.tensors import with_tensor_diff
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, Severity
from hubwatch.models.gguf import GGUFModel, split_part

SPLIT_KEYS = frozenset({"split.no", "split.count", "split.tensors.count"})
"""The metadata keys llama.cpp's gguf-split writes: the layout this module reports."""


def diff_gguf_files(old: RevisionView, new: RevisionView) -> list[Change]:
    """Models added or removed, split layouts changed, re-uploads, and unread headers."""
    before, after = old.gguf_models(), new.gguf_models()
    changes = _added_removed(
        [before[n] for n in sorted(before.keys() - after.keys())],
        [after[n] for n in sorted(after.keys() - before.keys())],
    )
    for b, a in common(old, new):
        if part_count(b) != part_count(a):
            changes.append(_layout(b, a))
        if b.missing or a.missing:
            changes.append(_unread(b, a, identities(old, b), identities(new, a)))
    for pair in paired(old, new):
        changes += _reuploaded(old, new, pair.before, pair.after)
    return changes


def _quantizations(models: list[GGUFModel]) -> str:
    return listing((m.quantization or m.name for m in models), 5)


def _added_removed(removed: list[GGUFModel], added: list[GGUFModel]) -> list[Change]:
    if not added and not removed:
        return []
    parts = []
    if added:
        parts.append(f"{len(added)} added ({_quantizations(added)})")
    if removed:
        parts.append(f"{len(removed)} removed ({_quantizations(removed)})")
    models = added + removed
    return [
        Change(
            "gguf.files",
            Severity.INFO,
            f"GGUF models: {'; '.join(parts)}.",
            models[0].name if len(models) == 1 else None,
            {m.name: m.quantization for m in removed[:100]},
            {m.name: m.quantization for m in added[:100]},
            "\n".join(
                [f"+ {label(m)}: {listing(m.parts, 3)}" for m in added]
                + [f"- {label(m)}: {listing(m.parts, 3)}" for m in removed]
            )[:20_000],
        )
    ]


def part_count(model: GGUFModel) -> int:
    """How many files the model is split into, by its file names (present or not)."""
    split = split_part(model.parts[0]) if model.parts else None
    return split[2] if split else 1


def _layout(before: GGUFModel, after: GGUFModel) -> Change:
    def words(model: GGUFModel) -> str:
        n = part_count(model)
        return "one file" if n == 1 else f"{n} split parts"

    return Change(
        "gguf.files",
        Severity.INFO,
        f"{label(after)}: split layout changed: {words(before)} → {words(after)}.",
        after.name,
        list(before.parts),
        list(after.parts),
    )


def _unread(
    before: GGUFModel, after: GGUFModel, was: tuple[str, ...], now: tuple[str, ...]
) -> Change:
    """One change for a model that cannot be compared, instead of a change per differ."""
    if after.missing:
        what = f"header unread ({listing(after.missing, 3)}); its changes are unknown"
    else:
        what = "the previous revision's header is unread; what changed in it is unknown"
    return Change(
        "gguf.unread",
        Severity.INFO,
        f"{label(after)}: {what}.",
        after.name,
        {"missing": list(before.missing), "objects": dict(zip(before.parts, was, strict=True))},
        {"missing": list(after.missing), "objects": dict(zip(after.parts, now, strict=True))},
    )


def _reuploaded(
    old: RevisionView, new: RevisionView, before: GGUFModel, after: GGUFModel
) -> list[Change]:
    """The model's files hold new objects under byte-identical headers: only tensor data moved;
    which tensors, where the Xet chunks (or the git blobs) say it."""
    if before.parts != after.parts:
        return []
    was, now = identities(old, before), identities(new, after)
    changed = [p for p, x, y in zip(after.parts, was, now, strict=True) if x != y]
    if not changed or any(old.gguf_header(p) != new.gguf_header(p) for p in changed):
        return []
    objects = dict(zip(after.parts, zip(was, now, strict=True), strict=True))
    of = f"{len(changed)} of {len(after.parts)} parts " if len(after.parts) > 1 else ""
    return [
        with_tensor_diff(
            old,
            new,
            Change(
                "gguf.reuploaded",
                Severity.INFO,
                f"{label(after)}: {of}re-uploaded with identical metadata and tensor infos; the "
                "tensor data changed.",
                after.name,
                {p: objects[p][0] for p in changed},
                {p: objects[p][1] for p in changed},
                "\n".join(f"{p}: {objects[p][0]} → {objects[p][1]}" for p in changed),
            ),
        )
    ]
