"""Revision health: whether a revision's weights load, its tokenizer fits its config and its card
agrees with its config, judged on both revisions and reported when a judgement flips.

Each judgement is a list of problems (none: healthy). The revision before a repo's first commit
(`RevisionView.empty()`) is healthy, so a first revision that is not says so. A judgement is only
made again when one of the files it reads changed.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from hubwatch.diff.health_files import (
    nothing_to_load,
    placeholders,
    tokenizer_files_missing,
)
from hubwatch.diff.health_tokens import tokenizer_problems
from hubwatch.diff.sections import listing
from hubwatch.formats.safetensors import INDEX_SUFFIXES, index_shards
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, Severity

_NUMBERED = re.compile(r"^(?P<stem>.+)-(?P<n>\d{5})-of-(?P<total>\d{5})\.(?P<ext>safetensors|bin)$")
# Tensors whose first dimension is the vocabulary and second the hidden size, by format.
_EMBEDDINGS = ("model.embed_tokens.weight", "transformer.wte.weight", "lm_head.weight")
_MISTRAL_EMBEDDINGS = ("tok_embeddings.weight", "output.weight")
# Pipeline tags that a model of an architecture family clearly cannot serve.
_CLASH = {
    "ForCausalLM": frozenset({"fill-mask", "token-classification", "text-classification"}),
    "ForMaskedLM": frozenset({"text-generation"}),
    "ForSequenceClassification": frozenset({"text-generation", "fill-mask"}),
    "ForTokenClassification": frozenset({"text-generation", "fill-mask"}),
}
WEIGHT_SUFFIXES = (".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".gguf", ".onnx")
VOCAB_FILES = ("vocab.json", "vocab.txt", "merges.txt", "special_tokens_map.json")
_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


@dataclass(frozen=True, slots=True)
class Aspect:
    """One health judgement: what it reads, how it judges, how its flips are reported."""

    kind: str
    label: str
    reads: Callable[[str], bool]
    judge: Callable[[RevisionView], list[str]]
    unhealthy: Severity
    unhealthy_says: str
    healthy_says: str


def diff_health(old: RevisionView, new: RevisionView) -> list[Change]:
    """One change per judgement that flips between `old` and `new`."""
    changes = []
    for aspect in ASPECTS:
        if _inputs(old, aspect.reads) == _inputs(new, aspect.reads):
            continue  # the same files: the same judgement
        before, after = aspect.judge(old), aspect.judge(new)
        if bool(before) == bool(after):
            continue
        changes.append(_flip(aspect, before, after))
    return changes


def _inputs(view: RevisionView, reads: Callable[[str], bool]) -> dict[str, str]:
    return {p: e.lfs_sha256 or e.blob_id for p, e in view.files.items() if reads(p)}


def _flip(aspect: Aspect, before: list[str], after: list[str]) -> Change:
    if after:
        # A problem reads "what (which ones)": the summary keeps what, the detail has it all.
        summary = f"{aspect.unhealthy_says}: {after[0].split(' (', 1)[0]}" + (
            f" (and {len(after) - 1} more problem(s))" if len(after) > 1 else ""
        )
        severity, detail = aspect.unhealthy, "\n".join(after)
    else:
        more = f" (and {len(before) - 1} more)" if len(before) > 1 else ""
        summary = f"{aspect.healthy_says}; resolved: {before[0].split(' (', 1)[0]}{more}."
        severity, detail = Severity.INFO, "Resolved:\n" + "\n".join(before)
    return Change(
        aspect.kind,
        severity,
        summary,
        None,
        {"healthy": not before, "problems": before},
        {"healthy": not after, "problems": after},
        detail,
    )


# -- weights ------------------------------------------------------------------------------------


def _reads_weights(path: str) -> bool:
    name = posixpath.basename(path)
    return (
        name.endswith((".safetensors", ".bin", *INDEX_SUFFIXES, *WEIGHT_SUFFIXES))
        or name in ("config.json", "params.json")
    ) and not name.startswith("training_args")


def _reads_tokenizer(path: str) -> bool:
    """config files whose token ids are judged, tokenizer files, and the custom code that names
    its own vocabulary files (`vocab_files_names`)."""
    name = posixpath.basename(path)
    if name.endswith((".py", ".model")) or name in VOCAB_FILES:
        return True
    return name in _TOKENIZER_INPUTS and "/" not in path


_TOKENIZER_INPUTS = (
    "config.json", "generation_config.json", "tokenizer.json", "added_tokens.json",
    "tokenizer_config.json", "params.json", "tekken.json",
)  # fmt: skip


def tokenizer_health(view: RevisionView) -> list[str]:
    """Token ids the vocabulary does not hold, and the vocabulary files a custom tokenizer
    needs that are missing."""
    return tokenizer_problems(view) + tokenizer_files_missing(view)


def weights_problems(view: RevisionView) -> list[str]:
    """Why the revision's weights would not load: shards missing, shards from another upload,
    embeddings whose shape disagrees with the config."""
    problems = _missing_shards(view)
    problems += _mixed_uploads(view)
    problems += _embedding_shapes(view)
    problems += placeholders(view)
    problems += nothing_to_load(view)
    return problems


def _indexes(view: RevisionView) -> list[str]:
    return sorted(p for p in view.files if p.endswith(INDEX_SUFFIXES))


def _missing_shards(view: RevisionView) -> list[str]:
    problems = []
    named: set[str] = set()
    for index in _indexes(view):
        shards = sorted(index_shards(view, index))
        named.update(shards)
        missing = [s for s in shards if s not in view.files]
        if missing:
            problems.append(
                f"{len(missing)} of {len(shards)} shards missing ({index} names "
                f"{listing(missing, 20)})"
            )
    groups: dict[tuple[str, str, str], int] = {}
    for path in view.files:
        match = _NUMBERED.match(path)
        if match and path not in named:
            key = (match["stem"], match["total"], match["ext"])
            groups[key] = groups.get(key, 0) + 1
    for (stem, total, ext), present in sorted(groups.items()):
        expected = [f"{stem}-{n:05d}-of-{total}.{ext}" for n in range(1, int(total) + 1)]
        missing = [s for s in expected if s not in view.files and s not in named]
        if missing and present < int(total):
            problems.append(
                f"{len(missing)} of {int(total)} shards missing ({listing(missing, 20)})"
            )
    return problems


def _mixed_uploads(view: RevisionView) -> list[str]:
    """Shards whose headers disagree with the index that names them: two uploads mixed."""
    problems = []
    for index in _indexes(view):
        if not index.endswith(".safetensors.index.json"):
            continue
        for shard, tensors in sorted(index_shards(view, index).items()):
            header = view.header(shard) if shard in view.files else None
            if header is None:
                continue
            stored = {name for name in header if name != "__metadata__"}
            named = set(tensors)
            if stored != named:
                odd = sorted(stored ^ named)
                problems.append(
                    f"shards of two uploads mixed: {shard} holds other tensors than {index} "
                    f"names ({len(odd)} differ: {listing(odd, 5)})"
                )
    return problems


def _embedding_shapes(view: RevisionView) -> list[str]:
    """The embedding matrix against the config's vocab_size and hidden size, where both are
    plain (no quantization packing the shapes)."""
    problems = []
    config = view.json("config.json")
    if isinstance(config, dict) and "quantization_config" not in config:
        problems += _shape_against(
            view,
            [p for p in view.files if p.endswith(".safetensors") and "/" not in p],
            _EMBEDDINGS,
            config.get("vocab_size"),
            config.get("hidden_size"),
            "config.json",
        )
    params = view.json("params.json")
    if isinstance(params, dict) and "quantization" not in params:
        problems += _shape_against(
            view,
            [p for p in view.files if posixpath.basename(p).startswith("consolidated")],
            _MISTRAL_EMBEDDINGS,
            params.get("vocab_size"),
            params.get("dim"),
            "params.json",
        )
    return problems


def _shape_against(
    view: RevisionView,
    paths: Iterable[str],
    names: tuple[str, ...],
    vocab: Any,
    hidden: Any,
    source: str,
) -> list[str]:
    problems = []
    for path in sorted(paths):
        header = view.header(path) if path.endswith(".safetensors") else None
        for name in names:
            info = header.get(name) if header else None
            shape = info.get("shape") if isinstance(info, dict) else None
            if not (isinstance(shape, list) and len(shape) == 2):
                continue
            if isinstance(vocab, int) and shape[0] != vocab:
                problems.append(
                    f"{name} in {path} has {shape[0]} rows, {source} vocab_size {vocab}"
                )
            if isinstance(hidden, int) and shape[1] != hidden:
                problems.append(
                    f"{name} in {path} is {shape[1]} wide, {source} hidden size {hidden}"
                )
    return problems


# -- card -------------------------------------------------------------------------------------


def _reads_card(path: str) -> bool:
    return path in ("README.md", "config.json")


def card_problems(view: RevisionView) -> list[str]:
    """Where the model card's front matter contradicts config.json."""
    config = view.json("config.json")
    if not isinstance(config, dict) or not view.card:
        return []
    problems = []
    base = view.card.get("base_model")
    bases = [base] if isinstance(base, str) else base if isinstance(base, list) else []
    origin = config.get("_name_or_path")
    if bases and isinstance(origin, str) and _HUB_ID.match(origin) and origin not in bases:
        problems.append(f"card base_model {listing(bases, 2)}, config.json _name_or_path {origin}")
    tag = view.card.get("pipeline_tag")
    architectures = config.get("architectures")
    if isinstance(tag, str) and isinstance(architectures, list):
        for arch in (a for a in architectures if isinstance(a, str)):
            clash = next(
                (s for s, tags in _CLASH.items() if arch.endswith(s) and tag in tags), None
            )
            if clash:
                problems.append(f"card pipeline_tag {tag}, config.json architecture {arch}")
    return problems


ASPECTS: tuple[Aspect, ...] = (
    Aspect(
        "health.weights",
        "the weights",
        _reads_weights,
        weights_problems,
        Severity.BREAKING,
        "Weights not loadable",
        "Weights now loadable",
    ),
    Aspect(
        "health.tokenizer",
        "the tokenizer",
        _reads_tokenizer,
        tokenizer_health,
        Severity.BREAKING,
        "Tokenizer broken or inconsistent with config",
        "Tokenizer now consistent with config",
    ),
    Aspect(
        "health.card",
        "the model card",
        _reads_card,
        card_problems,
        Severity.INFO,
        "Model card inconsistent with config",
        "Model card now consistent with config",
    ),
)
"""Every health judgement, in the order their changes are reported."""
