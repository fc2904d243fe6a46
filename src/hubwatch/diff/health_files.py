"""Health judgements read from the file list alone: a model config with nothing to load, shards
no index finds, placeholders where weights should be, a custom tokenizer's vocabulary gone."""

from __future__ import annotations

import posixpath
import re

from hubwatch.diff.code.repo import module, targets
from hubwatch.diff.sections import listing
from hubwatch.diff.weights_objects import is_placeholder
from hubwatch.formats.safetensors import INDEX_SUFFIXES, index_shards
from hubwatch.formats.view import RevisionView

_NUMBERED = re.compile(r"^(?P<stem>.+)-\d{5}-of-\d{5}\.(?P<ext>safetensors|bin)$")
# What from_pretrained (or a Mistral-native or GGUF loader) finds weights in, by name.
_ENTRY_SUFFIXES = (
    ".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".gguf", ".onnx",
    ".index.json",
)  # fmt: skip


def nothing_to_load(view: RevisionView) -> list[str]:
    """config.json names a model class but no file holds its weights, or every weight file is
    a numbered shard and no index names them (from_pretrained looks for the index)."""
    config = view.json("config.json")
    architectures = config.get("architectures") if isinstance(config, dict) else None
    if not (isinstance(architectures, list) and architectures):
        return []
    top = [p for p in view.files if "/" not in p]
    weights = [p for p in top if p.endswith(_ENTRY_SUFFIXES) and not p.startswith("training_")]
    if not weights:
        return [f"config.json names {architectures[0]} but no weight file is present"]
    if any(p.endswith(INDEX_SUFFIXES) for p in weights):
        return []
    numbered = [p for p in weights if _NUMBERED.match(p)]
    if len(numbered) == len(weights):
        kinds = sorted({m["ext"] for p in numbered if (m := _NUMBERED.match(p))})
        wanted = " or ".join(
            "model.safetensors.index.json" if k == "safetensors" else "pytorch_model.bin.index.json"
            for k in kinds
        )
        return [
            f"{len(numbered)} numbered shard(s) but no index ({wanted}): from_pretrained finds "
            "no weights"
        ]
    return []


def placeholders(view: RevisionView) -> list[str]:
    """Weight files an index names, or the one weight file, that are placeholders (a git
    symlink, a file under 1 KiB kept out of LFS): there is nothing in them to load."""
    named = {
        shard
        for index in view.files
        if index.endswith(INDEX_SUFFIXES)
        for shard in index_shards(view, index)
    }
    named |= {p for p in ("model.safetensors", "pytorch_model.bin") if p in view.files}
    empty = sorted(p for p in named if p in view.files and is_placeholder(view.files[p], view))
    if not empty:
        return []
    return [
        f"{len(empty)} of {len(named)} weight file(s) are placeholders: under 1 KiB and not LFS "
        f"(a symlink or a note; {listing(empty, 3)})"
    ]


def tokenizer_files_missing(view: RevisionView) -> list[str]:
    """The files a custom tokenizer class's `vocab_files_names` asks for that are not there."""
    problems = []
    for target in targets(view):
        if target.auto != "AutoTokenizer":
            continue
        read = module(view, target.path)
        folder = posixpath.dirname(target.config)
        for key, name in sorted((read.vocab_files if read else {}).items()):
            path = posixpath.join(folder, name) if folder else name
            if path not in view.files:
                problems.append(
                    f"{path} is missing ({key} of {target.name}, {target.path}): "
                    "AutoTokenizer.from_pretrained fails"
                )
    return sorted(set(problems))
