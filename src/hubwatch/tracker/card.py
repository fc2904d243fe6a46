"""The model card's front matter: the few keys that matter to people who depend on a model."""

from __future__ import annotations

from typing import Any

import yaml

CARD_KEYS = ("license", "base_model", "gated", "pipeline_tag", "library_name")


def parse_front_matter(text: str) -> dict[str, Any]:
    """The CARD_KEYS found in a README's YAML front matter; ValueError if it is malformed."""
    if not text.startswith("---"):
        return {}
    lines = text.splitlines()
    try:
        end = next(i for i, line in enumerate(lines[1:], 1) if line.strip() == "---")
    except StopIteration:
        raise ValueError("model card front matter is not closed by '---'") from None
    try:
        data = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        raise ValueError(f"model card front matter is not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError("model card front matter is not a mapping")
    # Keep only JSON-able scalars and lists, so the stored record is plain data.
    return {key: _plain(data[key]) for key in CARD_KEYS if key in data}


def _plain(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return str(value)
