"""Config-class defaults (transformers 5.24) of the families that keep them in defaults.json.

`tests/estimator/make_defaults.py` writes the file: for each family, exactly the keys (nested
ones included) its builder reads, as the transformers config class sets them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib.resources import files
from typing import Any

from hubwatch.estimator.registry import Builder, Family

_DEFAULTS: dict[str, dict[str, Any]] = json.loads(
    files("hubwatch.estimator.families").joinpath("defaults.json").read_text()
)


def defaults(model_type: str) -> Mapping[str, Any]:
    """The config-class defaults a family's builder reads; empty until generated."""
    return _DEFAULTS.get(model_type, {})


def family(model_type: str, architecture: str, builder: Builder) -> Family:
    """A family answering to `model_type` and `architecture`, with its generated defaults."""
    return Family(model_type, (architecture,), defaults(model_type), builder)
