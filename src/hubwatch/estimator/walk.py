"""A model's structure walked once for all of its workloads: its distinct layers, their repeats
and each parameter group's facts, which serving and every training method read again."""

from __future__ import annotations

import math
from collections.abc import Sequence

from hubwatch.estimator.structure import (
    NOT_ADAPTED,
    NOT_QUANTISED,
    Model,
    Param,
    Stack,
    Tower,
    stack,
)

Fact = tuple[int, bool, bool, int, str]
"""One parameter as the memory terms read it: numel, whether weight quantisation applies to
it, whether LoRA adapts it when every linear layer is targeted, its adapter width per rank
((fan_in + fan_out) x copies), and its module's last name (what named targets match)."""

Totals = tuple[int, int, int, int, int, int, int]
"""Of one group of facts: the numels summed, the quantised ones' numels summed, the least
numel, the adapter widths of the all-linear LoRA targets summed, the least of those (0 for
an empty group), how many all-linear LoRA targets there are, and the greatest common divisor
of the quantised numels (0 for none: what says whether their bytes at a fractional width
per parameter are whole)."""


def facts(params: Sequence[Param]) -> tuple[Fact, ...]:
    """Each parameter's `Fact`, in order (the order the memory terms add them in)."""
    out = []
    for p in params:
        linear = p.fan_in > 0
        out.append(
            (
                p.numel,
                linear and p.kind not in NOT_QUANTISED,  # memory.quantised
                linear and p.kind not in NOT_ADAPTED,  # training._lora_target, all-linear
                (p.fan_in + p.fan_out) * p.copies,
                p.module.rsplit(".", 1)[-1],
            )
        )
    return tuple(out)


def _tower(tower: Tower) -> tuple[Fact, ...]:
    """The facts of `tower.all_params()`, each distinct layer's made once."""
    walked = stack(tower.layers)
    made = _layer_facts(walked)
    out = list(facts(tower.before))
    for at in walked.index:
        out += made[at]
    out += facts(tower.after)
    return tuple(out)


def _layer_facts(walked: Stack) -> list[tuple[Fact, ...]]:
    """The facts of each of `walked.layers`, each distinct tuple of parameters' made once."""
    made: dict[int, tuple[Fact, ...]] = {}
    out = []
    for layer in walked.layers:
        found = made.get(id(layer.params))
        if found is None:
            found = made[id(layer.params)] = facts(layer.params)
        out.append(found)
    return out


class Walk:
    """What every workload of one model reads: the towers beside the text tower, the text
    tower's distinct layers (layers alike are one Layer object) with their repeats and where
    each stands, and the facts of each parameter group."""

    __slots__ = (
        "model",
        "others",
        "before",
        "layers",
        "repeats",
        "index",
        "after",
        "after_params",
        "largest_linear",
        "told",
        "_totals",
    )

    def __init__(self, model: Model) -> None:
        self.model = model
        text = model.text
        self.others = tuple((t.name, _tower(t)) for t in model.towers if t is not text)
        """(name, facts) of each tower but the text one, in order."""
        self.before = facts(text.before)
        walked = stack(text.layers)
        self.layers = tuple(zip(walked.layers, _layer_facts(walked), strict=True))
        """(layer, facts) of each distinct layer, in the order they first appear."""
        self.repeats = walked.repeats
        self.index = walked.index
        """For each layer of the text tower, its distinct layer's place in `layers`."""
        self.after_params = model.resident_after
        self.after = facts(self.after_params)
        self.largest_linear = max(
            (p.numel for params, _ in walked.groups for p in params if p.fan_in > 0), default=0
        )  # fan_in > 0: `Param.is_linear`, without a property call per parameter
        """The largest linear module of any layer (QLoRA dequantises one at a time)."""
        computes = model.computes
        self.told = None if computes is None else "; ".join(computes.told)
        """What the model computes, in words, as every workload's assumptions say it."""
        self._totals: dict[int, tuple[tuple[Fact, ...], Totals]] = {}

    def totals(self, params: tuple[Fact, ...]) -> Totals:
        """`Totals` of one of this walk's groups of facts, made once for all the workloads
        (kept by the group's identity, the group held beside)."""
        found = self._totals.get(id(params))
        if found is None or found[0] is not params:
            # NOTE: one loop: groups are small (a layer's or a tower's end), and a loop over a
            # few facts beats building lists to sum several times over
            numel = quantised = width = targets = common = 0
            least = narrowest = None
            for n, quant, target, w, _ in params:
                numel += n
                if least is None or n < least:
                    least = n
                if quant:
                    quantised += n
                    common = math.gcd(common, n)
                if target:
                    width += w
                    targets += 1
                    if narrowest is None or w < narrowest:
                        narrowest = w
            made: Totals = (numel, quantised, least or 0, width, narrowest or 0, targets, common)
            found = self._totals[id(params)] = (params, made)
        return found[1]


_last: tuple[Model, Walk] | None = None


def walk(model: Model) -> Walk:
    """`model`'s walk; the last one is kept, since a sizing reads one model for every
    workload in a row (by identity: a Model is never changed once made, and the one kept
    is held)."""
    global _last
    last = _last
    if last is not None and last[0] is model:
        return last[1]
    found = Walk(model)
    _last = (model, found)
    return found


_NAMES: list[str] = []


def layer_names(n: int) -> list[str]:
    """ "layer 0" … "layer n-1", made once for every model."""
    if len(_NAMES) < n:
        _NAMES.extend(f"layer {i}" for i in range(len(_NAMES), n))
    return _NAMES[:n]
