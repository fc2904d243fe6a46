"""Two JSON-like documents (a config, a card's front matter) compared key by key, nested keys
dotted: the rows of a key table."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

UNSET = "unset"
"""What a key table shows for a key one side does not have."""
MAX_DEPTH = 8
"""Mappings nested deeper than this are compared whole, as one value."""


@dataclass(frozen=True, slots=True)
class KeyRow:
    """One key whose value differs: each side's value as JSON text, or `UNSET`."""

    key: str
    before: str
    after: str


def key_rows(before: Any, after: Any) -> list[KeyRow]:
    """The keys whose values differ between two documents, sorted; a side that is not a mapping
    has no keys."""
    old, new = flatten(before), flatten(after)
    rows = []
    for key in sorted(old.keys() | new.keys()):
        if key in old and key in new and old[key] == new[key]:
            continue
        rows.append(KeyRow(key, _shown(old, key), _shown(new, key)))
    return rows


def flatten(value: Any, prefix: str = "", depth: int = 0) -> dict[str, Any]:
    """A mapping's leaves by dotted key (`rope_scaling.factor`); lists are leaves."""
    if not isinstance(value, Mapping):
        return {}
    out: dict[str, Any] = {}
    for key, item in value.items():
        dotted = f"{prefix}{key}"
        if isinstance(item, Mapping) and item and depth < MAX_DEPTH:
            out.update(flatten(item, dotted + ".", depth + 1))
        else:
            out[dotted] = item
    return out


def _shown(values: dict[str, Any], key: str) -> str:
    if key not in values:
        return UNSET
    return json.dumps(values[key], ensure_ascii=False, default=str)
