"""What a revision's config implies (parameters, memory, batch per card), as stored and compared."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

TRAIN_SEQ_LEN = 2048
"""Sequence length of the stored training figures (one sequence per step)."""


@dataclass(slots=True)
class Estimate:
    """What a config (or, without one, the GGUF headers) implies, or why it cannot be estimated.
    JSON-able as stored.

    Not frozen, though never changed once made (`dataclasses.replace` makes another): a
    frozen dataclass's `__init__` sets each of these fields through `object.__setattr__`, a
    call each, and a backfill makes one per revision."""

    ok: bool
    error: str | None = None
    """"cannot estimate: …" when ok is False."""
    family: str = ""
    architecture: str = ""
    exact: bool = True
    notes: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    """total, active, embedding, non_embedding, by_kind, by_tower, by_module."""
    context: int = 0
    kv_bytes_per_token: int = 0
    serving: dict[str, Any] = field(default_factory=dict)
    """bf16 weights + KV cache for one sequence of 4,096 tokens (the model's context when
    shorter; the full context in estimates stored before): total, parts, assumptions."""
    training: dict[str, dict[str, Any]] = field(default_factory=dict)
    """full, lora, qlora at TRAIN_SEQ_LEN, batch 1, no gradient checkpointing."""
    max_batch: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    """workload -> GPU -> {cards, max_batch, split}."""
    reconciliation: dict[str, Any] | None = None
    gguf: dict[str, dict[str, Any]] = field(default_factory=dict)
    """GGUF model name -> its estimate (`estimator.gguf.estimate_model`): quantization, exact
    parameters, weights at their real bits per weight, KV cache, cards that fit. Empty without
    GGUF files (and in estimates stored before GGUF was read)."""

    computes: dict[str, Any] = field(default_factory=dict)
    """head, attention, cache, logits and the choices in words (`told`); empty in estimates
    stored before the estimator decided them."""
    table: dict[str, Any] = field(default_factory=dict)
    """The reservation table (`estimator.table.as_json`): rows = workloads, columns = cards,
    each cell the GB, largest batch and verdict; the serving context, conservative-peak factor,
    headroom and priced job with where they come from. Empty in estimates stored before."""

    def to_json(self) -> dict[str, Any]:
        """The fields as plain data, copied (what `dataclasses.asdict` gives, without its
        per-value dispatch: a backfill stores one per revision, of thousands of values)."""
        return {name: _copied(getattr(self, name)) for name in self.__dataclass_fields__}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Estimate:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


_LEAVES = (str, int, float, bool, type(None))
_LEAF_TYPES = frozenset(_LEAVES)
"""The same, for a lookup by exact type: most values are leaves, taken without a call."""


def _copied(value: Any) -> Any:
    """`value` copied as `dataclasses.asdict` copies a field's value."""
    if isinstance(value, _LEAVES):
        return value  # immutable: asdict's deepcopy returns it as is
    leaf = _LEAF_TYPES
    if type(value) is dict:
        return {
            k if type(k) in leaf else _copied(k): v if type(v) in leaf else _copied(v)
            for k, v in value.items()
        }
    if type(value) is list:
        return [v if type(v) in leaf else _copied(v) for v in value]
    if type(value) is tuple:
        return tuple(_copied(v) for v in value)
    return asdict(_Holder(value)).get("value")  # anything else, as asdict copies it


@dataclass(frozen=True, slots=True)
class _Holder:
    value: Any
