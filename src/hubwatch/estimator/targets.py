"""LoRA targets: the names LoRA adapts, short or in full, and the check that a model has them."""

from __future__ import annotations

from collections.abc import Iterable

from hubwatch.estimator.config import CannotEstimate
from hubwatch.estimator.structure import NOT_ADAPTED, Model, Param

# Short LoRA target names and the module names (across families) each stands for.
TARGET_ALIASES: dict[str, frozenset[str]] = {
    "q": frozenset({"q_proj", "query", "q_lin", "q", "q_a_proj", "q_b_proj"}),
    "k": frozenset({"k_proj", "key", "k_lin", "k"}),
    "v": frozenset({"v_proj", "value", "v_lin", "v"}),
    "o": frozenset({"o_proj", "out_proj", "out_lin", "o", "dense"}),
    "qkv": frozenset({"qkv_proj", "query_key_value", "c_attn", "Wqkv"}),
    "gate": frozenset({"gate_proj", "gate_up_proj"}),
    "up": frozenset({"up_proj", "fc1", "c_fc", "fc_in", "dense_h_to_4h", "gate_up_proj"}),
    "down": frozenset({"down_proj", "fc2", "fc_out", "dense_4h_to_h"}),
}
ALL_LINEAR = "all-linear"


def lora_targets(spec: str | Iterable[str] | None) -> frozenset[str] | None:
    """Module names LoRA adapts: "q,v" (short names or module names), or "all-linear" / None
    for every linear layer but the head, routers and routed experts."""
    if spec is None:
        return None
    names = [n.strip() for n in (spec.split(",") if isinstance(spec, str) else spec)]
    names = [n for n in names if n]
    if not names or names == [ALL_LINEAR]:
        return None
    if ALL_LINEAR in names:
        raise CannotEstimate(f"LoRA targets: {ALL_LINEAR!r} cannot be combined with names")
    out: set[str] = set()
    for name in names:
        if len(name) > 60:
            raise CannotEstimate("LoRA targets: a module name is longer than 60 characters")
        out |= TARGET_ALIASES.get(name, frozenset({name}))
    return frozenset(out)


class UnknownTarget(CannotEstimate, ValueError):
    """A LoRA target names no linear module the model has; the message lists the ones it has."""


def check_targets(model: Model, targets: frozenset[str] | None) -> None:
    """UnknownTarget unless every target (a short name, or a module name) is a linear module
    LoRA can adapt in `model`: a name it lacks would add no adapter, silently."""
    if targets is None:
        return
    have = {
        p.module.rsplit(".", 1)[-1]
        for tower in model.towers
        for p in tower.all_params()
        if _lora_target(p, None)
    }
    # NOTE: `lora_targets` expanded each short name into every family's spelling of it: a
    # short name is known when any of its spellings is, a module name when it is itself.
    short = {k: v for k, v in TARGET_ALIASES.items() if v <= targets}
    spelled = set().union(*short.values()) if short else set()
    missing = sorted(k for k, v in short.items() if not v & have)
    missing += sorted(n for n in targets - spelled if n not in have)
    if missing:
        known = sorted(k for k, v in TARGET_ALIASES.items() if v & have)
        raise UnknownTarget(
            f"LoRA targets: {', '.join(repr(n) for n in missing)} "
            f"{'is not a linear module' if len(missing) == 1 else 'are not linear modules'} of "
            f"{model.family}; its modules are {', '.join(sorted(have)) or 'none'}"
            + (f" (short names: {', '.join(known)})" if known else "")
        )


def _lora_target(p: Param, targets: frozenset[str] | None) -> bool:
    if not p.is_linear or p.kind in NOT_ADAPTED:
        return False
    if targets is None:
        return True
    return p.module.rsplit(".", 1)[-1] in targets
