"""Write src/hubwatch/estimator/families/defaults.json from the transformers config classes.

Run: `python tests/estimator/make_defaults.py [model_type ...]` (needs transformers). It refreshes
every family already in the file, and adds the model types named. For each, it runs the family's
builder on an empty config whose defaults are the config class's whole `to_dict()`, and keeps
exactly the keys the builder read (nested sub-configs included).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hubwatch.estimator.config import Reader
from hubwatch.estimator.registry import find

DEFAULTS = (
    Path(__file__).resolve().parents[2]
    / "src"
    / "hubwatch"
    / "estimator"
    / "families"
    / "defaults.json"
)


def read_keys(model_type: str) -> dict[str, Any]:
    """The config class defaults of `model_type` that its family's builder reads."""
    from transformers import AutoConfig

    config = AutoConfig.for_model(model_type)
    full = _as_declared(config, config.to_dict())
    family = find(model_type)
    if family is None:
        raise SystemExit(f"no family answers to {model_type!r}")
    reader = Reader({}, full)
    family.builder(reader, family.architectures[0] if family.architectures else "")
    # A given sub-config's missing keys come from its class's defaults: read those too, from
    # a config that gives each sub-config read above as an empty object.
    subs = {path.split(".")[1] for path in reader.defaulted if path.count(".") > 1}
    for key in subs:
        full[f"{key}@class"] = _as_declared(
            getattr(config, key), type(getattr(config, key))().to_dict()
        )
    given = Reader({key: {} for key in subs}, full)
    family.builder(given, family.architectures[0] if family.architectures else "")
    reader.defaulted.extend(
        path.replace(f"config.{path.split('.')[1]}.", f"config.{path.split('.')[1]}@class.", 1)
        for path in given.defaulted
        if path.count(".") > 1
    )
    kept: dict[str, Any] = {}
    for path in reader.defaulted:
        keys = path.split(".")[1:]  # "config.text_config.hidden_size"
        source, target = full, kept
        for key in keys[:-1]:
            source = source[key]
            target = target.setdefault(key, {})
        target[keys[-1]] = source[keys[-1]]
    return kept


def _as_declared(owner: object, values: dict[str, Any]) -> dict[str, Any]:
    """`values` with null where the config class declares null and computes the value from
    others (head_dim from hidden_size, num_key_value_heads from num_attention_heads), so a
    builder given them computes it the same way."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if not isinstance(key, str):
            out[key] = value
        elif isinstance(value, dict) and hasattr(owner, key):
            out[key] = _as_declared(getattr(owner, key), value)
        elif getattr(type(owner), key, value) is None and _computed(owner, values, key) == value:
            # NOTE: a wrapper that builds its sub-config with an explicit value (Mistral 3's
            # text head_dim 128) keeps it: only the class's own computed value becomes null.
            out[key] = None
        else:
            out[key] = value
    return out


def _computed(owner: object, values: dict[str, Any], key: str) -> object:
    """What `owner`'s class computes for `key` from the other `values` (a unique object when
    it cannot be built so)."""
    if not hasattr(owner, "to_dict"):
        return _UNKNOWN
    given = {k: v for k, v in values.items() if k != key and not isinstance(v, dict)}
    try:
        return getattr(type(owner)(**given), key, _UNKNOWN)
    except (TypeError, ValueError, AttributeError):
        return _UNKNOWN


_UNKNOWN = object()


def main(added: list[str]) -> None:
    current = json.loads(DEFAULTS.read_text())
    names = sorted(set(current) | set(added))
    out = {name: read_keys(name) for name in names}
    DEFAULTS.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"{len(out)} families -> {DEFAULTS}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
