"""What a model computes (its head, its attention, the modules it borrows), which decides which
memory terms it is charged, and the heads only its safetensors headers show."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace

from hubwatch.estimator.structure import (
    LM_HEADS,
    AttentionKind,
    Computes,
    HeadKind,
    Model,
    Param,
    Tower,
    linear,
    plain,
)

_CLASSIFIERS = ("ForSequenceClassification", "ForTokenClassification")


def decide(model: Model, config: Mapping[str, object]) -> Model:
    """`model` with what it computes decided from its architecture and config: the head
    (an LM head, none, a classifier, projections), the attention (causal or bidirectional),
    a drafter's borrowed embeddings and head."""
    attention, told = _attention(model, config)
    text = model.text
    if text.name == "drafter":
        return _drafter(model, config, attention, told)
    arch = model.architecture
    if arch.endswith(_CLASSIFIERS) and text.vocab:
        labels = _labels(config)
        after = tuple(p for p in text.after if p.module not in LM_HEADS)
        after += (linear("score", text.hidden, labels, bias=False, kind="head"),)
        told.append(
            f"classification head ({arch}): a score over {labels} labels, no vocabulary logits"
        )
        model = _with_text(model, replace(text, after=after, vocab=0))
        return _computed(model, HeadKind.CLASSIFICATION, attention, labels, told)
    if _base_model(arch, config) and text.vocab:
        after = tuple(p for p in text.after if p.module not in LM_HEADS)
        told.append(f"no LM head ({arch}): hidden states out, no logits term")
        notes = (*model.notes, f"{arch} has no LM head: counted without lm_head")
        model = replace(_with_text(model, replace(text, after=after, vocab=0)), notes=notes)
        return _computed(model, HeadKind.NONE, attention, 0, told)
    if text.vocab:
        told.append(f"LM head: logits over {text.vocab:,} tokens")
        return _computed(model, HeadKind.LM, attention, text.vocab, told)
    projections = [p.module for t in model.towers for p in t.after if p.kind == "projector"]
    if projections:
        told.append(f"projection head ({', '.join(projections[:3])}): no logits term")
        return _computed(model, HeadKind.PROJECTION, attention, 0, told)
    told.append(f"no LM head ({arch or 'base model'}): no logits term")
    return _computed(model, HeadKind.NONE, attention, 0, told)


def _attention(model: Model, config: Mapping[str, object]) -> tuple[AttentionKind, list[str]]:
    # NOTE: EmbeddingGemma (gemma3_text) sets use_bidirectional_attention; LLM2Vec-style
    # embedders set is_causal false: the same decoder layers, but nothing to decode with.
    if not model.generates:
        return AttentionKind.BIDIRECTIONAL, ["bidirectional encoder: no KV cache"]
    if config.get("use_bidirectional_attention") is True or config.get("is_causal") is False:
        return AttentionKind.BIDIRECTIONAL, ["bidirectional attention (config): no KV cache"]
    return AttentionKind.CAUSAL, []


def _computed(
    model: Model, head: HeadKind, attention: AttentionKind, logits: int, told: list[str]
) -> Model:
    cache = attention is AttentionKind.CAUSAL and head is HeadKind.LM
    if attention is AttentionKind.CAUSAL and not cache:
        told.append("nothing decoded: no KV cache kept while serving")
    return replace(model, computes=Computes(head, attention, cache, logits, told=tuple(told)))


def _drafter(
    model: Model, config: Mapping[str, object], attention: AttentionKind, told: list[str]
) -> Model:
    """A drafter runs on the target's embeddings and LM head: resident and frozen beside it,
    not in its checkpoint, and its loss is over the target's vocabulary."""
    text = model.text
    vocab = config.get("vocab_size")
    if not isinstance(vocab, int) or isinstance(vocab, bool) or not 0 < vocab <= 2**22:
        told.append("drafter without a vocab_size: the target's embeddings and head not known")
        return _computed(model, HeadKind.NONE, attention, 0, told)
    borrowed: tuple[Param, ...] = (plain("embed_tokens", vocab * text.hidden, "embedding"),)
    if config.get("tie_word_embeddings") is not True:
        borrowed += (linear("lm_head", text.hidden, vocab, bias=False, kind="head"),)
    n = sum(p.numel for p in borrowed)
    told.append(
        f"drafter: the target's embeddings and LM head ({n:,} parameters) resident and "
        f"frozen, not in this checkpoint; logits over its {vocab:,} tokens"
    )
    computes = Computes(
        HeadKind.LM, attention, attention is AttentionKind.CAUSAL, vocab, borrowed, (), tuple(told)
    )
    return replace(model, computes=computes)


def _labels(config: Mapping[str, object]) -> int:
    """Labels of a classification head: id2label's, num_labels, else transformers' 2."""
    id2label = config.get("id2label")
    if isinstance(id2label, Mapping) and 0 < len(id2label) <= 1_000_000:
        return len(id2label)
    n = config.get("num_labels")
    if isinstance(n, int) and not isinstance(n, bool) and 0 < n <= 1_000_000:
        return n
    return 2


def _base_model(architecture: str, config: Mapping[str, object]) -> bool:
    """A transformers base class (`Qwen3Model`): no LM head. Remote code (`auto_map`) names
    its own classes (ChatGLM's `ChatGLMModel` has one), so it is not read by its name."""
    if config.get("auto_map"):
        return False
    return architecture.endswith("Model") and not architecture.endswith("LMHeadModel")


def _with_text(model: Model, text: Tower) -> Model:
    towers = tuple(text if t is model.text else t for t in model.towers)
    return replace(model, towers=towers)


# -- heads only the weights show --------------------------------------------------------------

_LAYER = re.compile(r"(?:^|\.)(?:layers|layer|h|blocks|block)\.\d+\.")
_TOWERS = re.compile(r"(vision|visual|audio|image|mm_projector|multi_modal_projector|mtp)")
_WRAPPERS = frozenset({"model", "transformer", "base_model", "language_model", "text_model"})
_KNOWN = frozenset(
    {
        "embed_tokens",
        "embeddings",
        "wte",
        "wpe",
        "norm",
        "ln_f",
        "final_layernorm",
        "final_norm",
        "lm_head",
        "embed_out",
        "rotary_emb",
        "encoder",
        "decoder",
        "pooler",
        "layers",
        "h",
    }
)


def weights_only(model: Model, names: Mapping[str, int], surplus: int) -> Model:
    """`model` as its safetensors tensors show it: no LM head when the checkpoint is a base
    model's (`_base_checkpoint`), and the heads they hold that its structure does not name
    (a projection a sentence-transformers export carries): tensors outside the layer stacks and
    towers whose module matches no module of the model, grouped by module. Only what the
    checkpoint holds beyond the derived count (`surplus`) can be such a head."""
    if model.computes is None:
        return model
    model = _base_checkpoint(model, names)
    if surplus <= 0:
        return model
    assert model.computes is not None
    known = set(_KNOWN)
    for tower in model.towers:
        known |= {p.module.split(".")[0] for p in (*tower.before, *tower.after)}
    found: dict[str, int] = defaultdict(int)
    for name, numel in names.items():
        if _LAYER.search(name) or _TOWERS.search(name):
            continue
        parts = name.split(".")[:-1]  # the module: `.weight`, `.bias` left out
        while parts and parts[0] in _WRAPPERS:
            parts = parts[1:]
        if parts and parts[0] not in known:
            found[parts[0]] += numel
    total = sum(found.values())
    if not found or total > surplus:
        return model
    heads = tuple(plain(module, n, "head") for module, n in sorted(found.items()))
    shown = ", ".join(f"{p.module} ({p.numel:,})" for p in heads[:4])
    told = f"head in the weights only, not in the config: {shown}; counted in memory"
    computes = model.computes
    head = HeadKind.PROJECTION if computes.head is HeadKind.NONE else computes.head
    return replace(
        model,
        computes=replace(computes, head=head, weights_only=heads, told=(*computes.told, told)),
    )


def _base_checkpoint(model: Model, names: Mapping[str, int]) -> Model:
    """No LM head when the weights were saved from the base class: `embed_tokens` at the top,
    no `model.` prefix, no LM head tensor. Qwen3-Embedding's config names Qwen3ForCausalLM,
    but sentence-transformers saves the Qwen3Model inside it."""
    computes = model.computes
    if computes is None or computes.head is not HeadKind.LM or model.text.name != "text":
        return model
    top = {name.split(".")[0] for name in names}
    if "embed_tokens" not in top or "model" in top or top & LM_HEADS:
        return model
    told = (
        *(line for line in computes.told if not line.startswith("LM head")),
        "the checkpoint is a base model's (embed_tokens at the top, no lm_head): no LM head, "
        "no logits term, no KV cache",
    )
    computes = replace(computes, head=HeadKind.NONE, cache=False, logits=0, told=told)
    return replace(model, computes=computes)
