"""Checkpoint reconciliation: the scalars in safetensors headers against the derived count."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from hubwatch.estimator.params import ParamCount
from hubwatch.estimator.structure import Model

# Quantisation side tensors: scales, zeros, group indices, bitsandbytes quant states.
_AUX = re.compile(
    r"\.(scales|qzeros|g_idx|weight_scale(_inv)?|input_scale|weight_zero_point|weight_shape|"
    r"weight_global_scale|absmax|quant_map|nested_absmax|nested_quant_map|"
    r"SCB|weight_format)$|\.quant_state\."
)
# Tensors that pack several low-bit values into one stored element: name suffix -> factor by dtype.
_PACKED = re.compile(r"\.(qweight|weight_packed)$")
_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.")
_TOWERS = re.compile(r"(vision|visual|audio|image|mm_projector|multi_modal_projector)")
_BITS = {"I32": 32, "U32": 32, "I64": 64, "U8": 8, "I8": 8, "I16": 16, "U16": 16}


@dataclass(frozen=True, slots=True)
class Reconciliation:
    """What the checkpoint holds against what the config implies, and why they differ."""

    stored: int
    """Parameters in the headers (packed low-bit tensors unpacked, side tensors left out)."""
    of_record: int
    """The parameter count of record: the headers' sum (exact for any architecture, what the
    checkpoint holds); the config-derived count is its cross-check."""
    by_dtype: dict[str, int]
    """Stored scalars per safetensors dtype (as stored: packed elements, not unpacked)."""
    derived: int | None
    """The count derived from the config; None when the config could not be counted."""
    difference: int | None
    """stored - derived."""
    quantized: bool
    explanations: tuple[str, ...]
    files: int


_MAX_DIMS = 64
"""Shapes with more dimensions (a hostile header) are not counted."""


def reconcile(
    model: Model, params: ParamCount, headers: Mapping[str, Mapping[str, object]]
) -> Reconciliation:
    """Compare the tensors of every safetensors header with the derived count, in words."""
    stored, by_dtype, quantized, names = _scan(headers)
    derived = params.total
    return Reconciliation(
        stored=stored,
        of_record=stored,
        by_dtype=by_dtype,
        derived=derived,
        difference=stored - derived,
        quantized=quantized,
        explanations=tuple(_explain(model, names, stored - derived)),
        files=len(headers),
    )


def headers_only(headers: Mapping[str, Mapping[str, object]], why: str) -> Reconciliation:
    """The headers' count when the config could not be counted (`why`): still the count of
    record, with nothing to cross-check it against."""
    stored, by_dtype, quantized, _names = _scan(headers)
    return Reconciliation(
        stored=stored,
        of_record=stored,
        by_dtype=by_dtype,
        derived=None,
        difference=None,
        quantized=quantized,
        explanations=(f"the checkpoint's own count; no config-derived cross-check ({why})",),
        files=len(headers),
    )


def tensors(headers: Mapping[str, Mapping[str, object]]) -> tuple[int, dict[str, int]]:
    """(parameters stored, parameters per tensor name) of the headers, side tensors left out."""
    stored, _by_dtype, _quantized, names = _scan(headers)
    return stored, names


def _entries(
    headers: Mapping[str, Mapping[str, object]],
) -> Iterator[tuple[Mapping[str, object], str, str, tuple[int, ...]]]:
    """(header, tensor name, dtype, shape) of every tensor whose shape is a shape."""
    for header in headers.values():
        for name, info in header.items():
            if name == "__metadata__" or not isinstance(info, Mapping):
                continue
            dtype = str(info.get("dtype", "?"))[:12]
            shape = info.get("shape")
            # NOTE: a hostile header's many or huge dimensions would make math.prod take minutes
            if (
                not isinstance(shape, list)
                or len(shape) > _MAX_DIMS
                or not all(
                    isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**64 for d in shape
                )
            ):
                continue
            yield header, name, dtype, tuple(shape)


def _unpacked(header: Mapping[str, object], name: str, dtype: str, numel: int) -> int | None:
    """Parameters a stored tensor holds (packed low-bit values unpacked); None for a
    quantisation side tensor."""
    if _AUX.search(name):
        return None
    if _PACKED.search(name) and dtype in _BITS:
        return numel * (_BITS[dtype] // 4)
    if dtype == "U8" and name.endswith(".weight") and _has_quant_state(header, name):
        return numel * 2  # bitsandbytes 4-bit: two values per byte
    return numel


def stored_tensors(headers: Mapping[str, Mapping[str, object]]) -> dict[str, tuple[int, ...]]:
    """The shape of every parameter tensor the headers hold (quantisation side tensors and
    packed low-bit tensors left out: their shapes are not the layer's)."""
    return {
        name: shape
        for header, name, dtype, shape in _entries(headers)
        if _unpacked(header, name, dtype, 1) == 1
    }


def _scan(
    headers: Mapping[str, Mapping[str, object]],
) -> tuple[int, dict[str, int], bool, dict[str, int]]:
    """(stored parameters, scalars per dtype, quantised?, parameters per tensor name)."""
    by_dtype: dict[str, int] = defaultdict(int)
    stored = 0
    quantized = False
    names: dict[str, int] = {}
    for header, name, dtype, shape in _entries(headers):
        numel = math.prod(shape)
        by_dtype[dtype] += numel
        count = _unpacked(header, name, dtype, numel)
        if count != numel:
            quantized = True
        if count is None:
            continue
        names[name] = count
        stored += count
    return stored, dict(by_dtype), quantized, names


def _has_quant_state(header: Mapping[str, object], name: str) -> bool:
    return any(k.startswith(name + ".") for k in header)


def _explain(model: Model, names: dict[str, int], difference: int) -> list[str]:
    if difference == 0:
        return ["the checkpoint holds exactly the derived parameters"]
    out: list[str] = []
    left = difference
    text = model.text
    tied = text.vocab and not any(p.kind == "head" and p.is_linear for p in text.after)
    head = sum(
        n
        for name, n in names.items()
        if name.split(".")[-2:-1] == ["lm_head"] or name.startswith("lm_head.")
    )
    if tied and head:
        out.append(f"the tied embedding is stored twice: lm_head holds {head:,} more")
        left -= head
    layers = len(text.layers)
    extra_layers: dict[int, int] = defaultdict(int)
    for name, n in names.items():
        match = _LAYER.search(name)
        if match and int(match.group(1)) >= layers and not _TOWERS.search(name):
            extra_layers[int(match.group(1))] += n
    if extra_layers:
        count = sum(extra_layers.values())
        ids = ", ".join(str(i) for i in sorted(extra_layers)[:5])
        out.append(
            f"layers beyond num_hidden_layers={layers} (index {ids}: {count:,} "
            "parameters; e.g. multi-token-prediction layers transformers does not build)"
        )
        left -= count
    tower_names = {t.name for t in model.towers}
    towers = sum(n for name, n in names.items() if _TOWERS.search(name))
    if towers and not ({"vision", "audio"} & tower_names):
        out.append(f"extra towers or projectors the config does not describe: {towers:,}")
        left -= towers
    if not tied and text.vocab and not head and any(p.kind == "head" for p in text.after):
        lm = text.vocab * text.hidden
        out.append(
            f"lm_head is missing from the checkpoint ({lm:,} parameters): untied in the "
            "config, absent in the files"
        )
        left += lm
    found = model.computes.weights_only if model.computes else ()
    if found and left > 0:
        n = sum(p.numel for p in found)
        shown = ", ".join(p.module for p in found[:4])
        out.append(f"a head the config does not name ({shown}): {n:,}, counted in memory")
        left -= n
    if left > 0:
        out.append(f"{left:,} more parameters stored than derived: extra heads or projections")
    elif left < 0:
        out.append(f"{-left:,} fewer parameters stored than derived: missing tensors")
    return out
