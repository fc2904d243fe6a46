"""The families the estimator counts: one `Family` record each, built-ins and extensions alike.

A family is one record (the names it answers to, its config-class defaults, its builder) and one
call to `register()`; the built-ins in `hubwatch.estimator.families` register exactly so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from hubwatch.estimator.config import Reader
from hubwatch.estimator.structure import Tower


@dataclass(frozen=True, slots=True)
class Built:
    """What a builder makes of a config: the towers transformers would build from it."""

    towers: tuple[Tower, ...]
    context: int
    """The longest context the config declares."""
    generates: bool = True
    """Whether it decodes token by token with a KV cache; False for encoders."""
    notes: tuple[str, ...] = ()
    """What the builder read or assumed beyond the family's defaults, in words."""


Builder = Callable[[Reader, str], Built]
"""(the config, read with the family's defaults; `architectures[0]` or "") -> the model."""


@dataclass(frozen=True, slots=True)
class Family:
    """One family of models: the names it answers to, its defaults, and how to count it."""

    model_type: str
    """The config `model_type` it answers to, and its name in the registry."""
    architectures: tuple[str, ...]
    """`architectures[0]` class names it answers to when a config states no model_type."""
    defaults: Mapping[str, Any]
    """Its transformers config class's defaults (transformers 5.24) for the keys the builder
    reads: a key missing from a config means this, not a generic guess."""
    builder: Builder
    by_architecture: bool = False
    """Found by `architectures[0]` alone, whatever model_type the config states, and never by
    its own model_type: a DFlash drafter states its target's (qwen3)."""


_FAMILIES: dict[str, Family] = {}
_BY_ARCHITECTURE: dict[str, Family] = {}
"""The architectures of the families found by architecture alone (no two families share one:
`register` refuses it), so that `find` need not go through every family."""


def register(family: Family) -> None:
    """Count configs of `family.model_type` (or of one of its architectures) with `family`."""
    if family.model_type in _FAMILIES:
        raise ValueError(f"a family {family.model_type!r} is already registered")
    for other in _FAMILIES.values():
        if taken := set(family.architectures) & set(other.architectures):
            raise ValueError(f"{sorted(taken)} already answer to family {other.model_type!r}")
    _FAMILIES[family.model_type] = family
    if family.by_architecture:
        _BY_ARCHITECTURE.update(dict.fromkeys(family.architectures, family))


def unregister(model_type: str) -> Family:
    """Stop counting `model_type` with its family; the family removed."""
    family = _FAMILIES.pop(model_type)
    for architecture in family.architectures:
        if _BY_ARCHITECTURE.get(architecture) is family:
            del _BY_ARCHITECTURE[architecture]
    return family


def families() -> Mapping[str, Family]:
    """Every registered family by model_type, in registration order (read-only)."""
    return MappingProxyType(_FAMILIES)


def model_type_of(architecture: str) -> str:
    """The model_type of the family answering to `architecture`; "" when none does."""
    for family in _FAMILIES.values():
        if not family.by_architecture and architecture in family.architectures:
            return family.model_type
    return ""


def find(model_type: str, architecture: str = "") -> Family | None:
    """The family that counts a config stating `model_type` and `architectures[0]`."""
    family = _BY_ARCHITECTURE.get(architecture)
    if family is not None:
        return family
    found = _FAMILIES.get(model_type)
    return None if found is None or found.by_architecture else found
