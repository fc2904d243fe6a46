"""What a revision's config implies (parameters, memory, batch per card), as stored and compared."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

TRAIN_SEQ_LEN = 2048
"""Sequence length of the stored training figures (one sequence per step)."""


@dataclass(frozen=True, slots=True)
class Estimate:
    """What a config (or, without one, the GGUF headers) implies, or why it cannot be estimated.
    JSON-able as stored."""

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
    """bf16 weights + KV cache for one sequence at the full context: total, parts, assumptions."""
    training: dict[str, dict[str, Any]] = field(default_factory=dict)
    """full, lora, qlora at TRAIN_SEQ_LEN, batch 1, no gradient checkpointing."""
    max_batch: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    """workload -> GPU -> {cards, max_batch, split}."""
    reconciliation: dict[str, Any] | None = None
    gguf: dict[str, dict[str, Any]] = field(default_factory=dict)
    """GGUF model name -> its estimate (`estimator.gguf.estimate_model`): quantization, exact
    parameters, weights at their real bits per weight, KV cache, cards that fit. Empty without
    GGUF files (and in estimates stored before GGUF was read)."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Estimate:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)
