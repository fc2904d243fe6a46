"""GGUF metadata: the context length and rope settings, and every other key no GGUF differ reads
(`general.*`, dimensions, expert counts…), so that a changed header is always reported."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hubwatch.diff.gguf.files import SPLIT_KEYS
from hubwatch.diff.gguf.pairs import ModelPair, paired
from hubwatch.diff.gguf.template import is_template_key
from hubwatch.diff.gguf.tensors import OWNED as QUANTIZATION_KEYS
from hubwatch.diff.gguf.tokens import OWNED as SPECIAL_KEYS
from hubwatch.diff.gguf.vocabulary import OWNED as VOCABULARY_KEYS
from hubwatch.diff.sections import changed_keys, listing, show
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, Severity

_SMALL = 500  # longest JSON kept whole in before/after; longer values are cut


def context(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """`context_length` and every `rope.*` key of the model's architecture, by that suffix."""
    arch = metadata.get("general.architecture")
    if not isinstance(arch, str):
        return {}
    prefix = arch + "."
    return {
        key.removeprefix(prefix): value
        for key, value in metadata.items()
        if key == prefix + "context_length" or key.startswith(prefix + "rope.")
    }


def diff_gguf_context(old: RevisionView, new: RevisionView) -> list[Change]:
    """Per GGUF model: context length and rope (freq_base, scaling) changes."""
    changes = []
    for pair in paired(old, new):
        before, after = context(pair.before.metadata), context(pair.after.metadata)
        keys = changed_keys(before, after)
        if not keys:
            continue
        moves = (f"{key} {show(before.get(key))} → {show(after.get(key))}" for key in keys)
        changes.append(
            Change(
                "gguf.context",
                Severity.BEHAVIOR,
                f"{pair.label}: context changed: {listing(moves, 4)}.",
                pair.name,
                {key: before.get(key) for key in keys},
                {key: after.get(key) for key in keys},
            )
        )
    return changes


def _owned(key: str, arch: str | None) -> bool:
    """Whether another GGUF differ reports `key`."""
    if is_template_key(key) or key in SPECIAL_KEYS or key in VOCABULARY_KEYS:
        return True
    if key in QUANTIZATION_KEYS or key in SPLIT_KEYS:
        return True
    return bool(arch) and (key == f"{arch}.context_length" or key.startswith(f"{arch}.rope."))


def _others(pair: ModelPair) -> tuple[dict[str, Any], dict[str, Any]]:
    def rest(metadata: Mapping[str, Any]) -> dict[str, Any]:
        arch = metadata.get("general.architecture")
        arch = arch if isinstance(arch, str) else None
        return {k: v for k, v in metadata.items() if not _owned(k, arch)}

    return rest(pair.before.metadata), rest(pair.after.metadata)


def _small(value: Any) -> Any:
    text = json.dumps(value, ensure_ascii=False)
    return value if len(text) <= _SMALL else show(text, _SMALL)


def diff_gguf_metadata(old: RevisionView, new: RevisionView) -> list[Change]:
    """Per GGUF model: the metadata keys no other GGUF differ reports that changed."""
    changes = []
    for pair in paired(old, new):
        before, after = _others(pair)
        keys = changed_keys(before, after)
        if not keys:
            continue
        moves = (f"{key} {show(before.get(key), 40)} → {show(after.get(key), 40)}" for key in keys)
        changes.append(
            Change(
                "gguf.metadata",
                Severity.INFO,
                f"{pair.label}: {len(keys)} metadata key(s) changed: {listing(moves, 3)}.",
                pair.name,
                {key: _small(before.get(key)) for key in keys[:100]},
                {key: _small(after.get(key)) for key in keys[:100]},
                "\n".join(keys) if len(keys) > 3 else None,
            )
        )
    return changes
