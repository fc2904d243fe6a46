"""The model card's front matter: the few keys that matter to people who depend on a model."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hubwatch.caching import BoundedCache
from hubwatch.errors import InvalidRepoId, UnsafeContent
from hubwatch.models.lineage import Relation
from hubwatch.models.repo import validate_repo_id
from hubwatch.parsing.yaml import load_front_matter

CARD_KEYS = (
    "license",
    "base_model",
    "base_model_relation",
    "gated",
    "pipeline_tag",
    "library_name",
)
MAX_BASES = 16
"""Bases read from one card: a merge names a few, a card naming hundreds is junk."""


def parse_front_matter(text: str) -> dict[str, Any]:
    """The CARD_KEYS found in a README's YAML front matter; UnsafeContent saying why if unread.

    Parsed once per distinct README (most revisions of a history keep the one before); the
    dict is shared with other callers given the same README: never mutate it."""
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    found = _PARSED.get(key)
    if found is None:
        try:
            found = (_parse(text), None)
        except UnsafeContent as exc:
            found = ({}, str(exc))
        _PARSED.put(key, found)
    card, error = found
    if error is not None:
        raise UnsafeContent(error)
    return card


_PARSED: BoundedCache[tuple[dict[str, Any], str | None]] = BoundedCache(8)
"""Cards by the sha256 of their README, or why its front matter could not be read."""


def _parse(text: str) -> dict[str, Any]:
    data = load_front_matter(text)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UnsafeContent("not a mapping")
    # Keep only JSON-able scalars and lists, so the stored record is plain data.
    return {key: _plain(data[key]) for key in CARD_KEYS if key in data}


def _plain(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return str(value)


@dataclass(frozen=True, slots=True)
class DeclaredBases:
    """What a card says a model derives from: `base_model` and `base_model_relation`."""

    bases: tuple[str, ...]
    """Valid repo ids, in the card's order, each once."""
    relation: Relation
    ignored: tuple[str, ...] = ()
    """Why each value that was not taken was ignored (one line each)."""


def declared_bases(card: Mapping[str, object] | None) -> DeclaredBases:
    """The bases a card declares (a string, or a list for a merge), validated like repo ids:
    junk (`../x`, HTML, URLs, non-strings) is ignored with a reason, never followed."""
    card = card or {}
    value = card.get("base_model")
    values = value if isinstance(value, list) else [] if value is None else [value]
    bases: list[str] = []
    ignored: list[str] = []
    for item in values[:MAX_BASES]:
        if not isinstance(item, str):
            ignored.append(f"base_model entry {_shown(item)} is not a repo id")
            continue
        try:
            repo_id = validate_repo_id(item.strip())
        except InvalidRepoId as exc:
            ignored.append(f"base_model {exc}")
            continue
        if repo_id not in bases:
            bases.append(repo_id)
    if len(values) > MAX_BASES:
        ignored.append(f"base_model names {len(values)} models; only the first {MAX_BASES} read")
    return DeclaredBases(tuple(bases), _relation(card.get("base_model_relation")), tuple(ignored))


def _relation(value: object) -> Relation:
    if isinstance(value, str):
        try:
            return Relation(value.strip().lower())
        except ValueError:
            pass
    return Relation.UNKNOWN


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
