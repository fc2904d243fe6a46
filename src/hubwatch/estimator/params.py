"""Parameter counts of a Model: total, active per token, embedding and non-embedding, by part."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from hubwatch.estimator.structure import Model, stack


@dataclass(frozen=True, slots=True)
class ParamCount:
    """Exact parameter counts, tied weights counted once."""

    total: int
    active: int
    """Parameters one token passes through: all but the experts a router does not pick."""
    embedding: int
    """Input embeddings (token, position, token type); a tied head is not counted again."""
    non_embedding: int
    by_kind: dict[str, int]
    """embedding, head, attention, mlp, experts, router, norm, conv, projector."""
    by_tower: dict[str, int]
    """text, vision, audio, projector, drafter."""
    by_module: dict[str, int]
    """Dotted module names (layer index left out), summed over layers."""


def count_params(model: Model) -> ParamCount:
    """Count every parameter of `model` as transformers would build it."""
    by_kind: dict[str, int] = defaultdict(int)
    by_tower: dict[str, int] = defaultdict(int)
    by_module: dict[str, int] = defaultdict(int)
    total = active = 0
    for tower in model.towers:
        # NOTE: layers alike share one tuple of parameters; count each once, times its repeats.
        groups = [(tower.before, 1), (tower.after, 1), *stack(tower.layers).groups]
        name, prefix, summed = tower.name, f"{tower.name}.", 0
        for params, times in groups:
            for p in params:
                n = p.numel * times
                summed += n
                active += (p.numel if p.active is None else p.active) * times
                by_kind[p.kind] += n
                by_module[prefix + p.module] += n
        if any(group for group, _ in groups):
            by_tower[name] += summed  # the tower's parameters, as one entry per tower
        total += summed
    embedding = by_kind.get("embedding", 0)
    return ParamCount(
        total=total,
        active=active,
        embedding=embedding,
        non_embedding=total - embedding,
        by_kind=dict(by_kind),
        by_tower=dict(by_tower),
        by_module=dict(by_module),
    )
