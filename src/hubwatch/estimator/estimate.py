"""One revision's estimate: parameters, memory, largest batch per card, checkpoint check."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, replace
from typing import Any

from hubwatch.errors import UnsafeContent
from hubwatch.estimator.checkpoint import COUNTED_FROM_HEADERS
from hubwatch.estimator.config import CannotEstimate
from hubwatch.estimator.memory import Memory, kv_bytes_per_token
from hubwatch.estimator.params import ParamCount
from hubwatch.estimator.reconcile import headers_only, reconcile
from hubwatch.estimator.sizing import DEFAULT_JOB, size, stored
from hubwatch.estimator.structure import Model
from hubwatch.estimator.table import as_json
from hubwatch.estimator.training import Run
from hubwatch.formats.json import loads_bounded
from hubwatch.models.estimate import Estimate
from hubwatch.models.gguf import FORMAT as GGUF_FORMAT


def failed(reason: str) -> Estimate:
    return Estimate(ok=False, error=f"cannot estimate: {reason}")


def estimate_json(raw: bytes | str, headers: Mapping[str, bytes] | None = None) -> Estimate:
    """Estimate from config.json bytes (and raw safetensors header bytes by path)."""
    try:
        config = loads_bounded(raw)
    except UnsafeContent as exc:  # not JSON, NaN, nesting or a number over its limit
        return failed(f"config.json: {exc}")
    return estimate(config, parse_headers(headers))


def parse_headers(headers: Mapping[str, bytes] | None) -> dict[str, Mapping[str, object]] | None:
    """Safetensors headers by path, parsed within the JSON limits; GGUF and unreadable ones
    left out; None when none is left."""
    parsed: dict[str, Mapping[str, object]] = {}
    for path, data in (headers or {}).items():
        try:
            header = loads_bounded(data)
        except UnsafeContent:
            continue
        # NOTE: a GGUF header (`models.gguf`) is no safetensors header: its tensors are not
        # this config's checkpoint (a quantization beside the weights, counted on its own).
        if isinstance(header, dict) and header.get("format") != GGUF_FORMAT:
            parsed[path] = header
    return parsed or None


def estimate(config: object, headers: Mapping[str, Mapping[str, object]] | None = None) -> Estimate:
    """Everything the estimator derives from a parsed config; never raises."""
    try:
        return _estimate(config, headers)
    except CannotEstimate as exc:
        result = failed(str(exc))
        if headers:
            # NOTE: the headers' sum is exact for any architecture, counted or refused.
            counted = asdict(headers_only(headers, "the config cannot be estimated"))
            result = replace(result, reconciliation=counted)
        return result
    except (TypeError, ValueError, KeyError, OverflowError, RecursionError) as exc:
        # NOTE: upstream input is untrusted; a shape we did not foresee is a result, not a crash.
        return failed(f"unreadable config ({type(exc).__name__}: {str(exc)[:120]})")


def retrained(
    raw: bytes | str, run: Run, headers: Mapping[str, bytes] | None = None
) -> dict[str, Any]:
    """Training memory, largest batches and the table (serving at its defaults) of the config in
    `raw` under `run`'s settings (its method aside: full, LoRA and QLoRA all), a custom-code
    model's from its raw safetensors `headers`; CannotEstimate when the config or a setting is
    bad."""
    try:
        config = loads_bounded(raw)
    except UnsafeContent as exc:
        raise CannotEstimate(f"config.json: {exc}") from None
    sized = size(config, run=run, job=DEFAULT_JOB, headers=parse_headers(headers))
    return {
        "training": {m.workload: _memory(m) for m in sized.memory[1:]},
        "max_batch": {
            m.workload: {
                f.gpu: {"cards": f.cards, "max_batch": f.max_batch, "split": f.split}
                for f in sized.max_batch[m.workload]
            }
            for m in sized.memory[1:]
        },
        "table": as_json(sized.table) if sized.table else {},
    }


def _memory(m: Memory) -> dict[str, Any]:
    return {"total": m.total, "parts": m.parts, "assumptions": m.assumptions}


def _estimate(config: object, headers: Mapping[str, Mapping[str, object]] | None) -> Estimate:
    model, params, memory, table, max_batch = stored(config, headers)
    serve, *trains = memory
    checked = None
    if model.notes and model.notes[0].startswith(COUNTED_FROM_HEADERS):
        checked = asdict(headers_only(headers or {}, "custom code: counted from the headers"))
    elif headers:
        checked = asdict(reconcile(model, params, headers))
    return Estimate(
        ok=True,
        family=model.family,
        architecture=model.architecture,
        exact=model.exact,
        notes=list(model.notes),
        params=_params(params),
        context=model.context,
        kv_bytes_per_token=kv_bytes_per_token(model),
        serving=_memory(serve),
        training={m.workload: _memory(m) for m in trains},
        max_batch=max_batch,
        reconciliation=checked,
        computes=_computes(model),
        table=table,
    )


def _params(params: ParamCount) -> dict[str, Any]:
    """`asdict(params)`, field by field: its dicts (of str -> int) copied, nothing deeper."""
    return {
        "total": params.total,
        "active": params.active,
        "embedding": params.embedding,
        "non_embedding": params.non_embedding,
        "by_kind": dict(params.by_kind),
        "by_tower": dict(params.by_tower),
        "by_module": dict(params.by_module),
    }


def _computes(model: Model) -> dict[str, Any]:
    c = model.computes
    if c is None:
        return {}
    return {
        "head": c.head.value,
        "attention": c.attention.value,
        "cache": c.cache,
        "logits": c.logits,
        "borrowed": sum(p.numel for p in c.borrowed),
        "weights_only": {p.module: p.numel for p in c.weights_only},
        "told": list(c.told),
    }
