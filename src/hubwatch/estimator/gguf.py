"""Parameters, weights memory, KV cache and per-card fit of GGUF models, from their headers.

Pure functions over `models.gguf.GGUFModel`: parameters are exact (the tensor shapes), weights
are the tensors' real bytes at their ggml types, the KV cache is what llama.cpp allocates from
the metadata (`gguf_cache`). Never imports `gguf` or numpy: the headers are plain data already.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from hubwatch.errors import UnsafeContent
from hubwatch.estimator.cards import fits
from hubwatch.estimator.gguf_cache import (
    DEFAULT_KV,
    KV_TYPES,
    MAX_COUNT,
    CacheLayout,
    NoCache,
    layout,
)
from hubwatch.estimator.memory import OVERHEAD_TOLD, Layout, Memory, Unit, overhead
from hubwatch.formats.json import loads_bounded
from hubwatch.models.estimate import Estimate
from hubwatch.models.gguf import GGUFHeader, GGUFModel, GGUFTensor, group_models, is_gguf

SHORT_CONTEXT = 8192
"""The second context of the fit table: what most local runs use (llama.cpp's -c 8192)."""

# ggml types: (elements per block, bytes per block), as ggml.c's type traits (and the gguf
# package's GGML_QUANT_SIZES, which a test compares) define them; the tensors' stored nbytes are
# checked against them where the type is known here.
GGML_BLOCKS: dict[str, tuple[int, int]] = {
    "F32": (1, 4),
    "F16": (1, 2),
    "BF16": (1, 2),
    "F64": (1, 8),
    "I8": (1, 1),
    "I16": (1, 2),
    "I32": (1, 4),
    "I64": (1, 8),
    "Q4_0": (32, 18),
    "Q4_1": (32, 20),
    "Q5_0": (32, 22),
    "Q5_1": (32, 24),
    "Q8_0": (32, 34),
    "Q8_1": (32, 40),
    "Q2_K": (256, 84),
    "Q3_K": (256, 110),
    "Q4_K": (256, 144),
    "Q5_K": (256, 176),
    "Q6_K": (256, 210),
    "Q8_K": (256, 292),
    "IQ1_S": (256, 50),
    "IQ1_M": (256, 56),
    "IQ2_XXS": (256, 66),
    "IQ2_XS": (256, 74),
    "IQ2_S": (256, 82),
    "IQ3_XXS": (256, 98),
    "IQ3_S": (256, 110),
    "IQ4_NL": (32, 18),
    "IQ4_XS": (256, 136),
    "TQ1_0": (256, 54),
    "TQ2_0": (256, 66),
    "MXFP4": (32, 17),
}

# Tensors llama.cpp stores that transformers computes instead (buffers, not parameters): llama
# 3.1's rope scaling factors, phi-3's long/short rope factors.
_NOT_PARAMETERS = re.compile(r"^(rope_freqs|rope_factors_long|rope_factors_short)(\.\w+)?$")
_EMBEDDING = re.compile(r"^(token_embd|position_embd|token_types)\.weight$")
_HEAD = re.compile(r"^output\.(weight|bias)$")
_EXPERTS = re.compile(r"^blk\.\d+\.ffn_(gate|up|down|gate_up)_exps\.")
_LAYER = re.compile(r"^blk\.(\d+)\.")
MAX_DIMS = 8
"""ggml tensors have at most 4 dimensions; more (a lying header) is refused."""
MAX_INT64 = 2**63 - 1
"""ggml counts elements and bytes in int64: a dimension, count or size past it is a lie."""


def count(model: GGUFModel) -> dict[str, Any]:
    """Exact parameters: total, active per token (MoE), embedding, head, non-embedding."""
    total = embedding = head = experts = 0
    not_parameters: dict[str, int] = {}
    for tensor in model.tensors:
        if _NOT_PARAMETERS.match(tensor.name):
            not_parameters[tensor.name] = tensor.elements
            continue
        total += tensor.elements
        if _EMBEDDING.match(tensor.name):
            embedding += tensor.elements
        elif _HEAD.match(tensor.name):
            head += tensor.elements
        elif _EXPERTS.match(tensor.name):
            experts += tensor.elements
    active, routed = total, _routing(model)
    if experts and routed is not None:
        used, of = routed
        active = total - experts + experts * used // of
    return {
        "total": total,
        "active": active,
        "embedding": embedding,
        "non_embedding": total - embedding,
        "head": head,
        "experts": experts,
        "not_parameters": not_parameters,
        "tensor_elements": total + sum(not_parameters.values()),
    }


def _routing(model: GGUFModel) -> tuple[int, int] | None:
    used, of = model.arch_value("expert_used_count"), model.arch_value("expert_count")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (used, of)):
        return None
    if not 0 < used <= of:
        return None
    return used, of


def weights(model: GGUFModel) -> dict[str, Any]:
    """The tensors' real bytes: total, bits per weight overall and per ggml type."""
    by_type: dict[str, dict[str, int]] = defaultdict(
        lambda: {"tensors": 0, "elements": 0, "bytes": 0}
    )
    for tensor in model.tensors:
        row = by_type[tensor.type]
        row["tensors"] += 1
        row["elements"] += tensor.elements
        row["bytes"] += tensor.nbytes
    total, elements = model.nbytes, model.elements
    return {
        "bytes": total,
        "bits_per_weight": _bpw(total, elements),
        "by_type": {
            name: row | {"bits_per_weight": _bpw(row["bytes"], row["elements"])}
            for name, row in sorted(by_type.items(), key=lambda kv: -kv[1]["bytes"])
        },
    }


def _bpw(nbytes: int, elements: int) -> float:
    return round(8 * nbytes / elements, 4) if elements else 0.0


def check(tensors: Sequence[GGUFTensor]) -> list[str]:
    """Why the tensor infos cannot be trusted (a lying header): shapes, counts, byte sizes."""
    problems = []
    for t in tensors:
        if len(t.shape) > MAX_DIMS or any(not 0 <= d <= MAX_INT64 for d in t.shape):
            problems.append(f"{t.name[:80]}: shape {_short(t.shape)} is not a shape")
        elif not (0 <= t.elements <= MAX_INT64 and 0 <= t.nbytes <= MAX_INT64):
            problems.append(f"{t.name[:80]}: {_short((t.elements, t.nbytes))} are not sizes")
        elif math.prod(t.shape) != t.elements:
            problems.append(f"{t.name[:80]}: {t.elements} elements for shape {list(t.shape)}")
        elif (block := GGML_BLOCKS.get(t.type)) and t.nbytes != _nbytes(t.elements, *block):
            problems.append(f"{t.name[:80]}: {t.nbytes} bytes for {t.elements} {t.type} weights")
        if len(problems) >= 5:
            break
    return problems


def _short(values: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(v)[:24] for v in values[:MAX_DIMS]) + "]"


def _nbytes(elements: int, block: int, size: int) -> int:
    return math.ceil(elements / block) * size


def serving_memory(
    model: GGUFModel, cache: CacheLayout, context: int, kv_type: str = DEFAULT_KV
) -> Memory:
    """Weights plus one sequence's KV cache at `context`, split into placement units (what is
    not in a block, each block with its cache) for the per-card fit."""
    layers: dict[int, int] = defaultdict(int)
    outside = 0
    for tensor in model.tensors:
        match = _LAYER.match(tensor.name)
        if match:
            layers[int(match[1])] += tensor.nbytes
        else:
            outside += tensor.nbytes
    blocks = len(cache.k)
    sizes = tuple((layers.pop(i, 0), cache.layer_bytes(i, context, kv_type)) for i in range(blocks))
    # blocks past block_count: counted, with no cache
    rest = (Unit("other blocks", sum(layers.values()), 0),) if layers else ()
    placed = Layout(
        (Unit("embeddings and head", outside, 0),), sizes, tuple(range(blocks)), (1,) * blocks, rest
    )
    weights_bytes, kv = placed.totals()
    extra = overhead(weights_bytes + kv)
    parts = {"weights": weights_bytes, "kv_cache": kv, "overhead": extra}
    assumptions: dict[str, str | int | bool] = {
        "weights": "the tensors' bytes at their ggml types, all on the GPU (no CPU offload)",
        "kv cache dtype": kv_type,
        "context tokens": context,
        "batch": 1,
        "overhead": OVERHEAD_TOLD + "; llama.cpp's compute buffers are not counted",
    }
    return Memory("serving", sum(parts.values()), parts, assumptions, placed, 0, extra)


def fit_table(memory: Memory) -> dict[str, dict[str, int]]:
    """GPU -> {cards, max_batch}: the sequences of that context each card (or two) holds."""
    return {f.gpu: {"cards": f.cards, "max_batch": f.max_batch} for f in fits(memory)}


def fitting(table: Mapping[str, Mapping[str, int]]) -> list[str]:
    """The cards that hold one sequence alone."""
    return [gpu for gpu, f in table.items() if f["cards"] == 1 and f["max_batch"] >= 1]


def estimate_model(model: GGUFModel, kv_type: str = DEFAULT_KV) -> dict[str, Any]:
    """One GGUF model's estimate, JSON-able; `ok` False with the reason when its parts or tensor
    infos cannot be read or trusted."""
    base: dict[str, Any] = {
        "quantization": model.quantization,
        "architecture": model.architecture or "",
        "parts": list(model.parts),
    }
    if model.missing:
        shown = ", ".join(p[:120] for p in model.missing[:5])
        return base | {"ok": False, "error": f"cannot estimate: header not read for {shown}"}
    if not model.tensors:
        return base | {"ok": False, "error": "cannot estimate: the header lists no tensors"}
    if problems := check(model.tensors):
        return base | {"ok": False, "error": "cannot estimate: " + "; ".join(problems)}
    params = count(model)
    notes = _param_notes(model, params)
    result = base | {"ok": True, "params": params, "weights": weights(model)}
    try:
        cache = layout(model.architecture, model.metadata)
        context = _context(model)
    except NoCache as exc:
        notes.append(f"no KV cache or fit table: {exc}")
        return result | {"context": 0, "kv_cache": None, "fits": {}, "notes": notes}
    notes += cache.notes
    short = min(context, SHORT_CONTEXT)
    full_memory = serving_memory(model, cache, context, kv_type)
    short_memory = serving_memory(model, cache, short, kv_type)
    full_fits, short_fits = fit_table(full_memory), fit_table(short_memory)
    return result | {
        "context": context,
        "kv_cache": {
            "type": kv_type,
            "bytes_per_token": {t: cache.per_token(t) for t in KV_TYPES if t != "bf16"},
            "bytes_at_context": {t: cache.bytes(context, t) for t in ("f16", "q8_0", "q4_0")},
            "bytes_at_short": cache.bytes(short, kv_type),
        },
        "serving": {
            "total": full_memory.total,
            "parts": full_memory.parts,
            "assumptions": full_memory.assumptions,
        },
        "short_context": short,
        "fits": {"context": full_fits, "short": short_fits},
        "fits_on": {"context": fitting(full_fits), "short": fitting(short_fits)},
        "notes": notes,
    }


def _context(model: GGUFModel) -> int:
    value = model.arch_value("context_length")
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_COUNT:
        raise NoCache(f"{model.architecture}.context_length is {str(value)[:40]!r}")
    return value


def _param_notes(model: GGUFModel, params: Mapping[str, Any]) -> list[str]:
    notes = []
    for name, n in params["not_parameters"].items():
        notes.append(
            f"{name} ({n:,} values) is stored in the GGUF but is not a parameter in "
            "transformers' count (it computes it); left out of the parameters, kept in the bytes"
        )
    if params["experts"] and params["active"] == params["total"]:
        notes.append("expert tensors without usable expert_count/expert_used_count: active = total")
    if params["head"] == 0 and params["embedding"]:
        notes.append("no output tensor: the head is tied to token_embd (counted once)")
    return notes


def estimate_headers(
    paths: Sequence[str], headers: Mapping[str, bytes], kv_type: str = DEFAULT_KV
) -> dict[str, dict[str, Any]]:
    """Every GGUF model of a revision, estimated: `paths` its files, `headers` the stored header
    bytes (`GGUFHeader.to_json`) by path, the fit table at a `kv_type` cache. A header that is
    not a GGUF header reads as unread."""
    parsed: dict[str, GGUFHeader | None] = {}
    for path in paths:
        if is_gguf(path) and path in headers:
            try:
                parsed[path] = GGUFHeader.from_json(loads_bounded(headers[path]))
            except UnsafeContent:
                parsed[path] = None
    models = group_models(paths, parsed)
    return {name: estimate_model(model, kv_type) for name, model in models.items()}


def summary(models: Mapping[str, Mapping[str, Any]]) -> dict[str, Any] | None:
    """The model every estimated quantization describes (parameters, context, KV per token), for
    a revision that has no config.json; None when none could be estimated. A vision projector
    (`clip`, mmproj files) speaks for the model only when nothing else could be estimated."""
    ok = [(name, m) for name, m in sorted(models.items()) if m.get("ok")]
    ok.sort(key=lambda nm: nm[1].get("architecture") == "clip")
    if not ok:
        return None
    name, first = ok[0]
    kv = first.get("kv_cache") or {}
    return {
        "name": name,
        "architecture": first["architecture"],
        "params": first["params"],
        "context": first.get("context", 0),
        "kv_bytes_per_token": kv.get("bytes_per_token", {}).get(DEFAULT_KV, 0),
        "notes": first.get("notes", []),
    }


FAMILY = "gguf"
"""`Estimate.family` of an estimate made from GGUF headers alone (no config.json)."""


def with_gguf(estimate: Estimate | None, models: Mapping[str, dict[str, Any]]) -> Estimate | None:
    """`estimate` (the config's) with the GGUF models' estimates added; without a config, the
    estimate the GGUF headers give (None when the revision has no GGUF model either)."""
    if estimate is not None:
        return replace(estimate, gguf=dict(models)) if models else estimate
    if not models:
        return None
    found = summary(models)
    if found is None:
        first = next(iter(models.values()))
        error = first.get("error") or "cannot estimate: no GGUF model could be read"
        return Estimate(ok=False, error=error, family=FAMILY, gguf=dict(models))
    return Estimate(
        ok=True,
        family=FAMILY,
        architecture=found["architecture"],
        notes=[f"from the GGUF header of {found['name'][:200]} (no config.json)", *found["notes"]],
        params=found["params"],
        context=found["context"],
        kv_bytes_per_token=found["kv_bytes_per_token"],
        gguf=dict(models),
    )
