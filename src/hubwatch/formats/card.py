"""The model card (README.md): its front matter, its body, and the bases it declares."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hubwatch.caching import Memo, Slot
from hubwatch.errors import InvalidRepoId, UnsafeContent
from hubwatch.formats.yaml import load_bounded, split_front_matter
from hubwatch.models.lineage import Relation
from hubwatch.models.repo import validate_repo_id

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


@dataclass(frozen=True, slots=True)
class CardText:
    """A README read once: its front matter (the known keys as stored, the rest) and its body."""

    known: dict[str, Any]
    """The CARD_KEYS found, as the stored card holds them ({} when `error`)."""
    error: str | None
    """Why the front matter could not be read (not YAML, over a limit, not a mapping)."""
    others: dict[str, Any]
    """Every other front matter key, as JSON-able data."""
    body: str
    """The text after the front matter (all of it when there is none)."""


def read_card(text: str, memo: Memo | None = None) -> CardText:
    """A README's front matter and body, parsed once per distinct README in `memo` (most
    revisions of a history keep the one before, and the snapshot and the card differ both read
    it). The result is shared with other callers given the same memo: never mutate it."""
    if memo is None:
        return _read(text)
    cards = memo[CARDS]
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    found = cards.get(key)
    if found is None:
        found = _read(text)
        cards.put(key, found)
    return found


def parse_front_matter(text: str, memo: Memo | None = None) -> dict[str, Any]:
    """The CARD_KEYS found in a README's YAML front matter; UnsafeContent saying why if unread."""
    card = read_card(text, memo)
    if card.error is not None:
        raise UnsafeContent(card.error)
    return card.known


CARDS: Slot[CardText] = Slot("cards", 8)
"""Cards by the sha256 of their README."""


def _read(text: str) -> CardText:
    data: Any = None
    body, error = text, None
    try:
        parts = split_front_matter(text)
        if parts is not None:
            body = parts[1]  # the body follows a closed front matter, read or not
            data = load_bounded(parts[0])
    except UnsafeContent as exc:
        error = str(exc)
    if error is None and data is not None and not isinstance(data, dict):
        error = "not a mapping"
    known: dict[str, Any] = {}
    others: dict[str, Any] = {}
    if error is None and isinstance(data, dict):
        # Keep only JSON-able scalars and lists, so the stored record is plain data.
        known = {key: _plain(data[key], mappings=False) for key in CARD_KEYS if key in data}
    if isinstance(data, dict):
        front = {str(k): _plain(v) for k, v in data.items()}
        others = {k: v for k, v in front.items() if k not in CARD_KEYS}
    return CardText(known, error, others, body)


def _plain(value: Any, mappings: bool = True) -> Any:
    """JSON-able data: scalars and lists as they are, mappings too (or, for a stored card key,
    as text), anything else as text."""
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [_plain(v, mappings) for v in value]
    if mappings and isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
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
