"""The model card's front matter: the few keys that matter to people who depend on a model."""

from __future__ import annotations

import hashlib
from typing import Any

from hubwatch.caching import BoundedCache
from hubwatch.errors import UnsafeContent
from hubwatch.parsing.yaml import load_front_matter

CARD_KEYS = ("license", "base_model", "gated", "pipeline_tag", "library_name")


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
