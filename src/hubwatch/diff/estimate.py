"""The estimate differ: parameters, serving memory, KV cache and largest batch, old vs new."""

from __future__ import annotations

from typing import Any

from hubwatch.diff.deltas import parameters_change, relative
from hubwatch.diff.gguf.estimate import gguf_changes
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, Estimate, Severity

CONFIG = "config.json"
GGUF_FAMILY = "gguf"
"""`Estimate.family` of an estimate from GGUF headers alone (`estimator.gguf.FAMILY`)."""


def _gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB"


def _gb_pair(before: float, after: float) -> str:
    """`before → after` in GB, in MB where GB to two places would show the same figure twice."""
    if _gb(before) != _gb(after):
        return f"{_gb(before)} → {_gb(after)}"
    return f"{before / 1e6:,.1f} MB → {after / 1e6:,.1f} MB"


def estimate_changes(old: Estimate | None, new: Estimate | None) -> list[Change]:
    """Deltas in parameters, serving memory, KV bytes per token and largest batch per card.

    A differ `(old, new) -> list[Change]` like the others; a revision without a config has no
    estimate (None) and yields no change.
    """
    if old is None or new is None:
        return []
    if old.ok != new.ok:
        summary = (
            f"the estimate is no longer possible: {new.error}"
            if old.ok
            else f"the config can be estimated again ({new.params.get('total', 0):,} parameters)"
        )
        return [Change("estimate.parameters", Severity.INFO, summary, CONFIG, old.error, new.error)]
    gguf = gguf_changes(old.gguf, new.gguf)
    if not new.ok or GGUF_FAMILY in (old.family, new.family):
        # NOTE: an estimate from GGUF headers alone repeats one quantization's figures (the
        # per-quantization changes say them, once per file), and has no bf16 serving or batch
        # figures to set against a config's: a config added or removed is the files differ's.
        return gguf
    if bool(old.table) != bool(new.table):
        # NOTE: an estimate stored before the reservation table (an earlier hubwatch) sized
        # serving at the model's maximum context: its memory and batches moved because the
        # sizing rules did, not the model. Only what the model itself fixes is compared.
        return [*_parameters(old, new), *_kv_bytes(old, new), *gguf]
    return [
        *_parameters(old, new),
        *_serving_memory(old, new),
        *_kv_bytes(old, new),
        *_max_batch(old, new),
        *gguf,
    ]


def _parameters(old: Estimate, new: Estimate) -> list[Change]:
    if old.params.get("total", 0) == new.params.get("total", 0):
        return []
    return [parameters_change("estimate.parameters", CONFIG, old.params, new.params)]


def _serving_memory(old: Estimate, new: Estimate) -> list[Change]:
    sb, sa = old.serving.get("total", 0), new.serving.get("total", 0)
    if sb == sa:
        return []
    context = new.serving.get("assumptions", {}).get("context tokens")
    # NOTE: serving is sized at 4,096 tokens per sequence (or the model's maximum when
    # shorter), not at the maximum: say the context it was sized at.
    was = old.serving.get("assumptions", {}).get("context tokens", old.context)
    return [
        Change(
            "estimate.serving_memory",
            Severity.BEHAVIOR if relative(sb, sa) >= 0.1 else Severity.INFO,
            f"serving memory {_gb_pair(sb, sa)} (bf16 weights + KV cache, batch 1, "
            f"{was:,} → {context or new.context:,} tokens of context)",
            CONFIG,
            sb,
            sa,
            detail=f"assumptions: {new.serving.get('assumptions')}; context now {context}",
        )
    ]


def _kv_bytes(old: Estimate, new: Estimate) -> list[Change]:
    if old.kv_bytes_per_token == new.kv_bytes_per_token:
        return []
    return [
        Change(
            "estimate.kv_bytes_per_token",
            Severity.BEHAVIOR,
            f"KV cache per token {old.kv_bytes_per_token:,} → {new.kv_bytes_per_token:,} "
            "bytes (bf16)",
            CONFIG,
            old.kv_bytes_per_token,
            new.kv_bytes_per_token,
        )
    ]


def _max_batch(old: Estimate, new: Estimate) -> list[Change]:
    """One change per workload whose largest batch (or card count) moved on some GPU."""
    out: list[Change] = []
    for workload, cards in new.max_batch.items():
        was = old.max_batch.get(workload, {})
        moved = {
            gpu: (_fit(was[gpu]), _fit(fit))
            for gpu, fit in cards.items()
            if gpu in was
            and (was[gpu]["max_batch"], was[gpu]["cards"]) != (fit["max_batch"], fit["cards"])
        }
        if not moved:
            continue
        lost = any(b[0] >= 1 and a[0] == 0 for b, a in moved.values())
        shown = ", ".join(f"{gpu} {_batch(*b)} → {_batch(*a)}" for gpu, (b, a) in moved.items())
        out.append(
            Change(
                "estimate.max_batch",
                Severity.BEHAVIOR if lost else Severity.INFO,
                f"largest {workload} batch per card: {shown}",
                CONFIG,
                {gpu: {"max_batch": b[0], "cards": b[1]} for gpu, (b, _) in moved.items()},
                {gpu: {"max_batch": a[0], "cards": a[1]} for gpu, (_, a) in moved.items()},
                detail=f"workload {workload}",
            )
        )
    return out


def _fit(fit: dict[str, Any]) -> tuple[int, int]:
    return fit["max_batch"], fit.get("cards", 1)


_CARDS = {2: "two", 3: "three", 4: "four"}


def _batch(batch: int, cards: int) -> str:
    """A largest batch, with the cards it needs when one is not enough: `7 ×2 (two cards)`."""
    return f"{batch} ×{cards} ({_CARDS.get(cards, cards)} cards)" if cards > 1 else str(batch)


def diff_estimate(old: RevisionView, new: RevisionView) -> list[Change]:
    """What the config change means in parameters, memory and batch per card."""
    return estimate_changes(old.estimate, new.estimate)
