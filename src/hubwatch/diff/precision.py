"""What a config's precision settings do to memory: torch_dtype, and the bf16 / fp16 / fp32
switches some custom code reads (Qwen-1: `fp32: true` loads twice the memory of bf16)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PRECISION = ("bf16", "fp16", "fp32")
"""Boolean precision switches of custom-code configs, read by the repo's own modeling code."""
BYTES = {
    "float32": 4, "float": 4, "fp32": 4, "float16": 2, "half": 2, "fp16": 2, "bfloat16": 2,
    "bf16": 2, "float64": 8, "int8": 1, "uint8": 1, "float8_e4m3fn": 1, "float8_e5m2": 1,
}  # fmt: skip
_WORDS = {0.5: "half", 2.0: "twice", 4.0: "four times", 0.25: "a quarter of"}


def precision(config: Mapping[str, Any]) -> str | None:
    """The precision the weights load in, as far as the config says: the first switch set
    (fp32, then bf16, fp16), else torch_dtype; None when it says nothing (automatic)."""
    for switch in ("fp32", "bf16", "fp16"):
        if config.get(switch) is True:
            return switch
    dtype = config.get("torch_dtype", config.get("dtype"))
    return dtype if isinstance(dtype, str) and dtype in BYTES else None


def memory_note(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """ "; the weights take twice the memory (2 → 4 bytes per parameter)", or "" when the
    precision is unknown on a side or the bytes are the same."""
    was, now = precision(before), precision(after)
    if was is None or now is None or BYTES[was] == BYTES[now]:
        if was != now and now is not None and was is None:
            return f"; the weights now load in {now} ({BYTES[now]} bytes per parameter)"
        return ""
    ratio = BYTES[now] / BYTES[was]
    words = _WORDS.get(ratio, f"{ratio:g}×")
    return (
        f"; the weights take {words} the memory ({BYTES[was]} → {BYTES[now]} bytes per parameter)"
    )
