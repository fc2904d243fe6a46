"""From a parsed config.json to a Model: which family counts it, and what was assumed."""

from __future__ import annotations

from collections.abc import Mapping

import hubwatch.estimator.families  # noqa: F401  # importing it registers the built-in families
from hubwatch.estimator.checkpoint import custom_class, from_headers
from hubwatch.estimator.config import MAX_PARAMS, CannotEstimate, Reader
from hubwatch.estimator.families.refused import NOT_COUNTED
from hubwatch.estimator.registry import Built, find, model_type_of
from hubwatch.estimator.semantics import decide
from hubwatch.estimator.structure import Model, numel


def read_model(config: object, headers: Mapping[str, Mapping[str, object]] | None = None) -> Model:
    """The model a config describes; CannotEstimate (with the reason) when it cannot be read.

    A config no family counts whose `auto_map` names a class in the repo (custom code) is read
    from its safetensors `headers` when there are any.
    """
    if not isinstance(config, Mapping):
        raise CannotEstimate(f"config is {type(config).__name__}, not a JSON object")
    architectures = config.get("architectures")
    architecture = ""
    if isinstance(architectures, list) and architectures and isinstance(architectures[0], str):
        architecture = architectures[0][:100]
    name = config.get("model_type")
    if not isinstance(name, str) or not name:
        name = model_type_of(architecture)
    name = name[:60]
    family = find(name, architecture)
    if family is None:
        named = custom_class(config)
        if named is not None and headers:
            return from_headers(config, headers, named)
        raise _refused(name, architecture, named)
    reader = Reader(config, family.defaults)
    built = family.builder(reader, architecture)
    return decide(_model(name, architecture, built, True, reader), config)


def _refused(name: str, architecture: str, named: str | None = None) -> CannotEstimate:
    # NOTE: an unknown structure is refused, never counted as another family's shape: a
    # llama-shaped guess was off by -98% (MoE counted dense) to +1520% (albert's shared layer).
    what = name or architecture or "no model_type and no architectures"
    if named is not None:
        return CannotEstimate(
            f"custom code {named!r} ({what!r}) is counted from its safetensors headers, and "
            "this revision has none"
        )
    if name in NOT_COUNTED:
        return CannotEstimate(f"{name!r} is not counted yet: {NOT_COUNTED[name]}")
    return CannotEstimate(
        f"unknown architecture {what!r}: its structure is not one this estimator counts, "
        "and a count guessed from another family's shape would be wrong"
    )


def _model(family: str, architecture: str, built: Built, exact: bool, reader: Reader) -> Model:
    total = sum(numel(tower) for tower in built.towers)
    if total > MAX_PARAMS:
        raise CannotEstimate(f"the config describes {total:.3g} parameters, beyond any real model")
    notes = list(built.notes)
    if reader.defaulted:
        shown = ", ".join(reader.defaulted[:8]) + (" …" if len(reader.defaulted) > 8 else "")
        notes.append(f"{family} defaults taken for {shown}")
    return Model(
        family, architecture, built.towers, built.context, built.generates, exact, tuple(notes)
    )
