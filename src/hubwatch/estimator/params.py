"""Parameter counts of a Model: total, active per token, embedding and non-embedding, by part."""

from __future__ import annotations

from dataclasses import dataclass

from hubwatch.estimator.structure import Model, stack


@dataclass(slots=True)
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
    by_kind: dict[str, int] = {}
    by_tower: dict[str, int] = {}
    by_module: dict[str, int] = {}
    total = inactive = 0
    for tower in model.towers:
        # NOTE: layers alike share one tuple of parameters; count each once, times its repeats.
        shared = stack(tower.layers).groups
        prefix, summed = f"{tower.name}.", 0
        for params, times in ((tower.before, 1), (tower.after, 1), *shared):
            for p in params:
                n = p.numel * times
                summed += n
                if p.active is not None:  # experts: those a token skips are not active
                    inactive += (p.numel - p.active) * times
                by_kind[p.kind] = by_kind.get(p.kind, 0) + n
                module = prefix + p.module
                by_module[module] = by_module.get(module, 0) + n
        if tower.before or tower.after or any(params for params, _ in shared):
            # the tower's parameters, as one entry per tower
            by_tower[tower.name] = by_tower.get(tower.name, 0) + summed
        total += summed
    embedding = by_kind.get("embedding", 0)
    return ParamCount(
        total, total - inactive, embedding, total - embedding, by_kind, by_tower, by_module
    )
