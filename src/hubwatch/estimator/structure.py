"""The shape of a model as the estimator sees it: towers of layers made of named parameters."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import repeat
from operator import is_
from typing import Any


class KvKind(StrEnum):
    """What one layer keeps per token while generating."""

    FULL = "full"
    """Keys and values for every token of the context."""
    SLIDING = "sliding"
    """Keys and values for the last `window` tokens only."""
    LATENT = "latent"
    """A compressed latent per token (MLA), as vLLM and SGLang cache it."""
    NONE = "none"
    """Nothing per token: encoders, linear-attention and state-space layers."""


@dataclass(slots=True, unsafe_hash=True)
class Param:
    """A group of parameters of one module, counted once per layer it appears in.

    Not frozen, though never changed once made (hashable all the same), for the reason
    `Layer` is not: a model's read makes a few dozen."""

    module: str
    """Dotted module name with the layer index left out, e.g. `self_attn.q_proj`."""
    numel: int
    """Parameters of this module, all copies (experts) together, bias included."""
    kind: str
    """embedding, head, attention, mlp, experts, router, norm, conv, projector."""
    fan_in: int = 0
    """For a linear layer: its input features (0 for anything else)."""
    fan_out: int = 0
    copies: int = 1
    """Experts: how many copies of this linear the layer holds."""
    active: int | None = None
    """Parameters a token passes through (MoE: top-k experts); None means all of them."""

    @property
    def active_numel(self) -> int:
        return self.numel if self.active is None else self.active

    @property
    def is_linear(self) -> bool:
        return self.fan_in > 0


NOT_QUANTISED = frozenset({"head", "embedding"})
"""Kinds of linear parameter weight quantisation leaves at their own precision."""
NOT_ADAPTED = frozenset({"head", "router", "experts", "embedding", "conv"})
"""Kinds of linear parameter LoRA never adapts."""


def linear(
    module: str, fan_in: int, fan_out: int, *, bias: bool, kind: str, copies: int = 1, used: int = 0
) -> Param:
    """A linear layer (or `copies` experts of it, `used` of which a token goes through)."""
    one = fan_in * fan_out + (fan_out if bias else 0)
    return Param(
        module,
        one * copies,
        kind,
        fan_in,
        fan_out,
        copies,
        one * used if copies > 1 or used else None,
    )


def plain(module: str, numel: int, kind: str) -> Param:
    """Parameters that are not a linear layer: norms, embeddings, convolutions, biases."""
    return Param(module, numel, kind)


@dataclass(slots=True, unsafe_hash=True)
class Layer:
    """One block of a tower, as it holds parameters, caches keys and values, keeps activations.

    Layer, Tower, Stack, Computes and Model are not frozen, though never changed once made
    (hashable all the same, and the counts' caches rely on it): a frozen dataclass's
    `__init__` sets each field through `object.__setattr__`, three times a plain one's, and
    every estimate reads a model afresh."""

    params: tuple[Param, ...]
    kv: KvKind = KvKind.NONE
    kv_elems_per_token: int = 0
    """Cached elements per token (keys plus values, or the MLA latent)."""
    window: int | None = None
    """Tokens kept by a sliding-window layer."""
    act_elems_per_token: int = 0
    """Activation elements one token leaves saved for the backward pass (flash attention)."""
    heads: int = 1
    """Attention heads: the eager kernel keeps a seq x seq score matrix for each."""

    @property
    def numel(self) -> int:
        return sum(p.numel for p in self.params)

    @property
    def active_numel(self) -> int:
        return sum(p.active_numel for p in self.params)


@dataclass(slots=True, unsafe_hash=True)
class Tower:
    """A stack of layers with what comes before (embeddings) and after (final norm, head)."""

    name: str
    """text, vision, audio, projector, drafter."""
    before: tuple[Param, ...]
    layers: tuple[Layer, ...]
    after: tuple[Param, ...] = ()
    hidden: int = 0
    vocab: int = 0
    """Size of the output distribution (0 when the tower has no language-model head)."""

    def all_params(self) -> list[Param]:
        out = list(self.before)
        for layer in self.layers:
            out.extend(layer.params)
        out.extend(self.after)
        return out


def numel(tower: Tower) -> int:
    """Parameters of `tower`: `all_params()` summed, each distinct layer's once, times its
    repeats (layers alike share one tuple of parameters)."""
    total = sum(p.numel for p in tower.before) + sum(p.numel for p in tower.after)
    return total + stack(tower.layers).numel


@dataclass(slots=True, unsafe_hash=True)
class Stack:
    """A tower's layers as every count reads them: each distinct layer once, with its repeats,
    and each distinct tuple of parameters once (layers alike are one Layer object, and layers
    that differ only in their cache share one tuple of parameters)."""

    layers: tuple[Layer, ...]
    """Each distinct layer, in the order they first appear."""
    repeats: tuple[int, ...]
    """How many layers of the tower each of `layers` is."""
    index: tuple[int, ...]
    """For each layer of the tower, its distinct layer's place in `layers`."""
    groups: tuple[tuple[tuple[Param, ...], int], ...]
    """Each distinct tuple of parameters with the layers holding it, in the order they first
    appear."""
    numel: int
    """Parameters of all the layers."""


def stack(layers: tuple[Layer, ...]) -> Stack:
    """The `Stack` of `layers`, made once: reading, counting and walking a model all read it
    (kept by the tuple's identity, the tuple held beside)."""
    found = _STACKS.get(id(layers))
    if found is not None and found[0] is layers:
        return found[1]
    made = _stack(layers)
    if len(_STACKS) >= 64:
        _STACKS.clear()  # a sizing reads one model's few towers; older ones are not read again
    _STACKS[id(layers)] = (layers, made)
    return made


_STACKS: dict[int, tuple[tuple[Layer, ...], Stack]] = {}


def _stack(layers: tuple[Layer, ...]) -> Stack:
    # NOTE: a tower has a few distinct layers among dozens: every pass over all of them is one
    # C call (map, dict, count), and only the distinct ones go through Python.
    if layers and all(map(is_, layers, repeat(layers[0]))):
        # NOTE: most towers are one layer repeated, told in one C pass of identity checks
        # without the maps by identity below.
        distinct, index = layers[:1], (0,) * len(layers)
    else:
        by_id = dict(zip(map(id, layers), layers, strict=True))
        distinct = tuple(by_id.values())
        at = dict(zip(by_id, range(len(distinct)), strict=True))
        index = tuple(map(at.__getitem__, map(id, layers)))
    repeats = tuple(counted(index, len(distinct)))
    groups: dict[int, list[Any]] = {}
    for layer, times in zip(distinct, repeats, strict=True):
        group = groups.get(id(layer.params))
        if group is None:
            groups[id(layer.params)] = [layer.params, times]
        else:
            group[1] += times
    shared = tuple([(params, times) for params, times in groups.values()])
    total = 0
    for params, times in shared:
        for p in params:
            total += p.numel * times
    return Stack(distinct, repeats, index, shared, total)


def counted(index: tuple[int, ...], kinds: int) -> list[int]:
    """How often each of `0 .. kinds - 1` occurs in `index`."""
    if kinds <= 8:
        # NOTE: a family has a few kinds of layer: counting each in C is quicker than
        # Counter's set-up, and Counter stays for the rare many
        return list(map(index.count, range(kinds)))
    found = Counter(index)
    return [found[at] for at in range(kinds)]


LM_HEADS = frozenset({"lm_head", "embed_out", "output"})
"""Module names of a decoder's LM head across the families (`lm_head`, GPT-NeoX's `embed_out`)."""


class HeadKind(StrEnum):
    """What the model computes at its end, which decides the logits term."""

    LM = "lm"
    """A language-model head: logits over the vocabulary for every token."""
    NONE = "none"
    """No head (an embedding model, `…Model`): hidden states, no logits."""
    CLASSIFICATION = "classification"
    """A score over a few labels (`…ForSequenceClassification`, reward models)."""
    PROJECTION = "projection"
    """Projections into an embedding space (CLIP, SigLIP, a head found only in the weights)."""


class AttentionKind(StrEnum):
    """Whether a token sees only the ones before it (and so can be decoded with a cache)."""

    CAUSAL = "causal"
    BIDIRECTIONAL = "bidirectional"


@dataclass(slots=True, unsafe_hash=True)
class Computes:
    """What the model computes, which decides its memory terms, and why, in words."""

    head: HeadKind
    attention: AttentionKind
    cache: bool
    """Whether serving keeps a KV cache: causal attention and an LM head that decodes."""
    logits: int
    """Width of the output the loss sees per token (vocabulary, labels; 0 without a head)."""
    borrowed: tuple[Param, ...] = ()
    """Frozen weights resident on the card but not in this checkpoint (a drafter's target
    embeddings and head): never counted as parameters, never trained."""
    weights_only: tuple[Param, ...] = ()
    """Heads the safetensors headers hold that the config's structure does not name."""
    told: tuple[str, ...] = ()
    """Each choice in words ("no LM head: no logits term", …)."""


@dataclass(slots=True, unsafe_hash=True)
class Model:
    """A model the estimator could read: its family, its towers, and what it assumed."""

    family: str
    architecture: str
    towers: tuple[Tower, ...]
    context: int
    """The longest context the config declares (max_position_embeddings or its alias)."""
    generates: bool = True
    """Whether it decodes token by token (has a KV cache); False for encoders."""
    exact: bool = True
    """False when the architecture is unknown and the counts are a generic guess."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    """What was assumed, in words (defaults taken, nested configs read, shared weights)."""
    computes: Computes | None = None
    """Head, attention and borrowed modules (`estimator.semantics`); None: an LM head, causal
    when `generates`, nothing borrowed."""

    @property
    def caches(self) -> bool:
        """Whether serving keeps a KV cache."""
        return self.generates if self.computes is None else self.computes.cache

    @property
    def resident_after(self) -> tuple[Param, ...]:
        """What follows the text tower's layers on the card: its final norm and head (no LM
        head when the model computes none), and any head only the weights hold."""
        after = self.text.after
        if self.computes is None:
            return after
        if self.computes.head is not HeadKind.LM:
            after = tuple(p for p in after if p.module not in LM_HEADS)
        return after + self.computes.weights_only

    @property
    def logits(self) -> int:
        """Width of the per-token output the training loss sees."""
        return self.text.vocab if self.computes is None else self.computes.logits

    @property
    def text(self) -> Tower:
        """The tower that generates (or encodes) text: the one the KV cache belongs to."""
        for tower in self.towers:
            if tower.name in ("text", "drafter"):
                return tower
        return self.towers[0]
