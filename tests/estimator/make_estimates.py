"""Record the whole estimate of every golden config: write golden/estimates.json.

The whole estimate is what a revision stores (`estimate()`: parameters, serving, full, LoRA and
QLoRA training, the largest batch on every card, the table, the priced job) and what
`hubwatch estimate` sizes under settings of its own (`size()` with a `Run`, a context, a dtype,
a job). Each case is kept as the sha256 of its canonical JSON, so that any change to any figure,
word or card shows; `test_whole_estimate.py` recomputes them.

Run: `python -m tests.estimator.make_estimates` (only when a change of the figures is meant).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from hubwatch.estimator import CannotEstimate, Job, Run, estimate, lora_targets, size
from tests.estimator.make_golden import default_types, golden_configs

ESTIMATES = Path(__file__).resolve().parent / "golden" / "estimates.json"
CUSTOM = Path(__file__).resolve().parent / "custom" / "THUDM__chatglm3-6b.json"

# The settings `hubwatch estimate` takes, away from their defaults, so that every path of the
# sizing (checkpointing, eager attention, pure bf16 and fp32, chosen LoRA targets, single NF4
# quantisation, fp32 embeddings, another card's job) is recorded too.
SETTINGS: dict[str, Callable[[object], Any]] = {
    "int4, 32k context, batch 4; eager, checkpointed, bf16, q,v rank 8, no double quant": (
        lambda config: size(
            config,
            context=32_768,
            dtype="int4",
            job=Job(5_000, 2.0, "A100-80GB"),
            run=Run(
                seq_len=4096,
                batch=4,
                gradient_checkpointing=True,
                attention="eager",
                precision="bf16",
                lora_rank=8,
                lora_targets=lora_targets("q,v"),
                double_quant=False,
                fp32_io=True,
            ),
        )
    ),
    "fp8, fp32 training, checkpointed, sdpa, no job": (
        lambda config: size(
            config,
            dtype="fp8",
            run=Run(seq_len=512, gradient_checkpointing=True, attention="sdpa", precision="fp32"),
        )
    ),
}


def cases() -> Iterator[tuple[str, Callable[[], Any]]]:
    """Every case by name, with what computes it (an estimate, a sizing, or a refusal)."""
    configs: dict[str, object] = {
        name: json.loads(path.read_text()) for name, path in golden_configs().items()
    }
    configs |= {
        f"defaults:{t}": {"model_type": t, "architectures": [a]} for t, a in default_types().items()
    }
    for name, config in configs.items():
        yield name, lambda config=config: estimate(config).to_json()
        for label, sized in SETTINGS.items():
            yield f"{name} | {label}", lambda config=config, sized=sized: _sizing(sized, config)
    from tests.estimator.test_custom_code import _chatglm3_headers

    custom = json.loads(CUSTOM.read_text())
    yield "custom:chatglm3 with headers", lambda: estimate(custom, _chatglm3_headers()).to_json()


def _sizing(sized: Callable[[object], Any], config: object) -> Any:
    try:
        sizing = sized(config)
    except CannotEstimate as exc:
        return {"cannot estimate": str(exc)}
    found = asdict(sizing)
    del found["model"]  # its figures are the estimate's; its shape is the structure's own
    # NOTE: recorded as a unit per layer, whichever way a Memory keeps its layout
    found["memory"] = [
        {("units" if k == "layout" else k): v for k, v in kept.items()} for kept in found["memory"]
    ]
    for kept, memory in zip(found["memory"], sizing.memory, strict=True):
        kept["units"] = [asdict(unit) for unit in memory.units]
    return found


def digest(value: Any) -> str:
    """The sha256 of `value`'s JSON, keys in their order (the order the assumptions are
    printed in), enums as their values."""
    text = json.dumps(value, default=str, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def recorded() -> dict[str, str]:
    """Every case's digest, computed now."""
    return {name: digest(compute()) for name, compute in cases()}


def main() -> None:
    found = recorded()
    ESTIMATES.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    print(f"{len(found)} cases -> {ESTIMATES}", file=sys.stderr)


if __name__ == "__main__":
    main()
