"""The model card's front matter: the few keys that matter to people who depend on a model."""

from __future__ import annotations

from typing import Any

from hubwatch.errors import UnsafeContent
from hubwatch.parsing.yaml import load_front_matter

CARD_KEYS = ("license", "base_model", "gated", "pipeline_tag", "library_name")


def parse_front_matter(text: str) -> dict[str, Any]:
    """The CARD_KEYS found in a README's YAML front matter; UnsafeContent saying why if unread."""
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
