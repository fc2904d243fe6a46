"""The GGUF estimate differ: per quantization file, parameters, weights memory, KV cache, cards."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hubwatch.diff.deltas import parameters_change, relative
from hubwatch.models import Change, Severity

GiB = 1024**3


def _gib(n: float) -> str:
    return f"{n / GiB:.2f} GiB"


def _label(name: str, model: Mapping[str, Any]) -> str:
    return str(model.get("quantization") or name)[:120]


def gguf_changes(
    old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]]
) -> list[Change]:
    """What moved in the estimate of each GGUF model present, and estimated, on both sides
    (files added or removed are the files differ's to report)."""
    out: list[Change] = []
    for name in sorted(set(old) & set(new)):
        before, after = old[name], new[name]
        if not (before.get("ok") and after.get("ok")):
            continue
        label = _label(name, after)
        out += _parameters(name, label, before, after)
        out += _weights(name, label, before, after)
        out += _kv(name, label, before, after)
        out += _fits(name, label, before, after)
    return out


Side = Mapping[str, Any]
"""One GGUF model's stored estimate (`Estimate.gguf[name]`)."""


def _parameters(name: str, label: str, old: Side, new: Side) -> list[Change]:
    was, now = old.get("params", {}), new.get("params", {})
    if (was.get("total", 0), was.get("active")) == (now.get("total", 0), now.get("active")):
        return []
    return [parameters_change("estimate.gguf_parameters", name, was, now, label)]


def _weights(name: str, label: str, old: Side, new: Side) -> list[Change]:
    was, now = old.get("weights", {}), new.get("weights", {})
    b, a = was.get("bytes", 0), now.get("bytes", 0)
    if b == a:
        return []
    verb = "grew" if a > b else "shrank"
    return [
        Change(
            "estimate.gguf_weights",
            Severity.BEHAVIOR if relative(b, a) >= 0.1 else Severity.INFO,
            f"{label}: weights memory {verb} by {_gib(abs(a - b))}, {_gib(b)} → {_gib(a)} "
            f"({was.get('bits_per_weight')} → {now.get('bits_per_weight')} bits per weight)",
            name,
            b,
            a,
            detail=f"by ggml type: {_types(was)} → {_types(now)}",
        )
    ]


def _types(weights: Mapping[str, Any]) -> str:
    by_type = weights.get("by_type", {})
    return ", ".join(f"{t} {row.get('bits_per_weight')}" for t, row in by_type.items()) or "none"


def _kv(name: str, label: str, old: Side, new: Side) -> list[Change]:
    b, a = _kv_per_token(old), _kv_per_token(new)
    if b == a:
        return []
    return [
        Change(
            "estimate.gguf_kv_cache",
            Severity.BEHAVIOR,
            f"{label}: KV cache per token {b:,} → {a:,} bytes (f16)",
            name,
            b,
            a,
        )
    ]


def _kv_per_token(model: Mapping[str, Any]) -> int:
    kv = model.get("kv_cache") or {}
    value = kv.get("bytes_per_token", {}).get("f16", 0)
    return value if isinstance(value, int) else 0


def _fits(name: str, label: str, old: Side, new: Side) -> list[Change]:
    """Cards whose largest batch at the full context moved; `BATCH_LOST` reads before/after."""
    was = old.get("fits", {}).get("context", {})
    now = new.get("fits", {}).get("context", {})
    moved = {
        gpu: (was[gpu], fit)
        for gpu, fit in now.items()
        if gpu in was
        and (was[gpu].get("max_batch"), was[gpu].get("cards"))
        != (
            fit.get("max_batch"),
            fit.get("cards"),
        )
    }
    if not moved:
        return []
    lost = [g for g, (b, a) in moved.items() if b.get("max_batch", 0) >= 1 > a.get("max_batch", 0)]
    shown = ", ".join(
        f"{gpu} {b.get('max_batch')} → {a.get('max_batch')}" for gpu, (b, a) in moved.items()
    )
    summary = f"{label}: sequences at the full context per card: {shown}"
    if lost:
        summary = f"{label}: no longer fits at the full context on {', '.join(lost)}; {shown}"
    return [
        Change(
            "estimate.gguf_fit",
            Severity.BEHAVIOR if lost else Severity.INFO,
            summary,
            name,
            {gpu: b for gpu, (b, _) in moved.items()},
            {gpu: a for gpu, (_, a) in moved.items()},
            detail=f"context {new.get('context')} tokens, KV cache f16",
        )
    ]
