"""Count every golden config's parameters with transformers on the meta device; write golden.json.

The golden set is (1) the config-class defaults of every model type in golden/types.json (the
model type and the architecture class built from it), and (2) the real published configs in
golden/configs and tests/data/configs.

Run: `python tests/estimator/make_golden.py` (needs torch and transformers; tests do not).
`live_counts()` and `live_default_counts()` are what the `live` test calls to compare without
the file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO_CONFIGS = HERE / "golden" / "configs"
# Real published configs, vendored from ../shared with their .source.txt notes.
PUBLISHED_CONFIGS = HERE.parents[1] / "tests" / "data" / "configs"
GOLDEN = HERE / "golden" / "golden.json"
TYPES = HERE / "golden" / "types.json"


def default_types() -> dict[str, str]:
    """Every model type whose config-class defaults are golden, with the class built from them."""
    types: dict[str, str] = json.loads(TYPES.read_text())
    return types


def golden_configs() -> dict[str, Path]:
    """Every golden config by name: the repo's and the published ones in tests/data/configs."""
    found = {p.stem: p for p in sorted(REPO_CONFIGS.glob("*.json"))}
    found.update({p.stem: p for p in sorted(PUBLISHED_CONFIGS.glob("*.json"))})
    return found


def count_with_transformers(raw: dict[str, Any]) -> int:
    """Parameters of the model transformers builds from `raw`, tied weights once."""
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    raw = dict(raw)
    architecture = (raw.get("architectures") or [""])[0]
    if architecture == "DFlashDraftModel":
        return _dflash(raw)
    if "thinker_config" in raw:
        # NOTE: transformers' Qwen3ASRConfig reads audio_config/text_config at the top (the -hf
        # layout) and silently ignores thinker_config, building its defaults instead; convert.
        thinker = raw.pop("thinker_config")
        raw.update({k: v for k, v in thinker.items() if k in ("audio_config", "text_config")})
    model_type = raw.pop("model_type")
    config = AutoConfig.for_model(model_type, **raw)
    cls = getattr(transformers, architecture, None) or AutoModelForCausalLM
    with torch.device("meta"):
        model = cls(config) if architecture else AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


def _dflash(raw: dict[str, Any]) -> int:
    """The DFlash reference drafter (z-lab/dflash model.py) is Qwen3 decoder layers (q/k norms
    included), a final norm, fc over the tapped target layers and hidden_norm: no embeddings,
    no head. Build those same modules."""
    import torch
    from transformers import AutoConfig
    from transformers.models.qwen3.modeling_qwen3 import Qwen3DecoderLayer, Qwen3RMSNorm

    raw = dict(raw)
    raw.pop("model_type")
    taps = raw.get("dflash_config", {}).get("target_layer_ids")
    config = AutoConfig.for_model("qwen3", **raw)
    hidden = config.hidden_size
    with torch.device("meta"):
        model = torch.nn.ModuleDict(
            {
                "layers": torch.nn.ModuleList(
                    Qwen3DecoderLayer(config, i) for i in range(config.num_hidden_layers)
                ),
                "norm": Qwen3RMSNorm(hidden),
                "fc": torch.nn.Linear(len(taps) * hidden, hidden, bias=False),
                "hidden_norm": Qwen3RMSNorm(hidden),
            }
        )
    return sum(p.numel() for p in model.parameters())


def live_counts() -> dict[str, int]:
    return {
        name: count_with_transformers(json.loads(path.read_text()))
        for name, path in golden_configs().items()
    }


def count_defaults(model_type: str, architecture: str) -> int:
    """Parameters of `architecture` built from `model_type`'s config-class defaults."""
    import torch
    import transformers
    from transformers import AutoConfig

    config = AutoConfig.for_model(model_type)
    with torch.device("meta"):
        model = getattr(transformers, architecture)(config)
    return sum(p.numel() for p in model.parameters())


def live_default_counts() -> dict[str, int]:
    return {name: count_defaults(name, arch) for name, arch in default_types().items()}


def main() -> None:
    import transformers
    from transformers.utils import logging

    logging.set_verbosity_error()  # the config classes' own token-id warnings
    counts = live_counts()
    GOLDEN.write_text(
        json.dumps(
            {
                "transformers": transformers.__version__,
                "parameters": counts,
                "defaults": live_default_counts(),
            },
            indent=2,
            sort_keys=True,
        )
        + "\n"
    )
    print(f"{len(counts)} configs, {len(default_types())} types -> {GOLDEN}", file=sys.stderr)


if __name__ == "__main__":
    main()
