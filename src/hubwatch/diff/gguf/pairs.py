"""GGUF models paired across two revisions by name, for the GGUF differs to compare.

Every GGUF differ compares only models present in both revisions, read whole on both sides, whose
files changed: a model added or removed is `gguf.files`' to say, one whose header is unread is
`gguf.unread`'s (said once, not as a cascade of false changes), and unchanged files have nothing
to say.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from hubwatch.formats.view import RevisionView
from hubwatch.models.gguf import GGUFModel, split_part


@dataclass(frozen=True, slots=True)
class ModelPair:
    """One GGUF model in both revisions."""

    name: str
    before: GGUFModel
    after: GGUFModel

    @property
    def label(self) -> str:
        """The model as summaries name it: its file and quantization."""
        return label(self.after)

    def metadata(self, key: str) -> tuple[Any, Any]:
        """`key` of the metadata on both sides (None where absent)."""
        return self.before.metadata.get(key), self.after.metadata.get(key)

    def arch_value(self, key: str) -> tuple[Any, Any]:
        """`<architecture>.<key>` on both sides, each side under its own architecture."""
        return self.before.arch_value(key), self.after.arch_value(key)


def label(model: GGUFModel) -> str:
    """`Llama-3-8B-Q4_K_M.gguf (Q4_K_M)`, or the bare name when it states no quantization."""
    return f"{model.name} ({model.quantization})" if model.quantization else model.name


def identities(view: RevisionView, model: GGUFModel) -> tuple[str, ...]:
    """What each part of `model` holds in `view`: its LFS object, else its git blob."""
    return tuple(
        (entry.lfs_sha256 or entry.blob_id) if (entry := view.files.get(p)) else ""
        for p in model.parts
    )


def common(old: RevisionView, new: RevisionView) -> Iterator[tuple[GGUFModel, GGUFModel]]:
    """Every model in both revisions whose files changed (read or not), by name."""
    before, after = old.gguf_models(), new.gguf_models()
    for name in sorted(before.keys() & after.keys()):
        b, a = before[name], after[name]
        if b.parts != a.parts or identities(old, b) != identities(new, a) or b.missing != a.missing:
            yield b, a


def paired(old: RevisionView, new: RevisionView) -> list[ModelPair]:
    """The models to compare: in both revisions, changed, and read whole on both sides."""
    return [ModelPair(a.name, b, a) for b, a in common(old, new) if not b.missing and not a.missing]


def model_name(path: str) -> str:
    """The model a GGUF file belongs to (a split part's model), as changes name it."""
    split = split_part(path)
    return split[0] if split else path
