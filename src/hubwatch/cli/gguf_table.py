"""The per-quantization table of `hubwatch estimate` for GGUF models."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hubwatch.cli.base import out, shown
from hubwatch.cli.render import folding

GiB = 1024**3


def _gib(n: int | None) -> str:
    return "?" if n is None else f"{n / GiB:,.2f}"


def _cards(names: list[str]) -> str:
    """The cards that fit, shortly: they come in the GPU table's order (by memory), and what fits
    on a card fits on every bigger one."""
    if not names:
        return "none"
    return names[0] if len(names) == 1 else f"{names[0]} and up ({len(names)} cards)"


def render_gguf(models: Mapping[str, Mapping[str, Any]], kv_type: str) -> None:
    """One row per GGUF model: quantization, parameters, bits per weight, weights and KV cache
    in GiB at the full context and at 8k, and the cards that hold one sequence alone."""
    table = folding(
        "file",
        "quant",
        "parameters",
        "bits/weight",
        "weights GiB",
        f"KV GiB ({kv_type}) @ context",
        "fits @ context",
        "KV GiB @ 8k",
        "fits @ 8k",
        title="GGUF models (one card, batch 1, no CPU offload)",
    )
    for name, model in models.items():
        quant = shown(model.get("quantization") or "?")
        if not model.get("ok"):
            table.add_row(shown(name, 80), quant, shown(model.get("error"), 120), *[""] * 6)
            continue
        kv = model.get("kv_cache") or {}
        fits_on = model.get("fits_on") or {}
        context = model.get("context") or 0
        table.add_row(
            shown(name, 80),
            quant,
            f"{model['params']['total']:,}",
            f"{model['weights']['bits_per_weight']:.2f}",
            _gib(model["weights"]["bytes"]),
            f"{_gib(kv.get('bytes_at_context', {}).get(kv_type))} @ {context:,}" if kv else "?",
            _cards(fits_on.get("context", [])) if kv else "?",
            f"{_gib(kv.get('bytes_at_short'))} @ {model.get('short_context', 0):,}" if kv else "?",
            _cards(fits_on.get("short", [])) if kv else "?",
        )
    out.print(table)
    notes = {note for model in models.values() for note in model.get("notes", [])}
    for note in sorted(notes):
        out.print(f"  note: {shown(note)}", highlight=False)
