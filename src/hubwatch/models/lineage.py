"""Lineage: which base a derivative (quantization, fine-tune, adapter, merge) was built from, and
whether it is stale."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from hubwatch.models.ids import CommitSha


class Relation(StrEnum):
    """How a derivative relates to its base: the model card's `base_model_relation`, which the
    Hub also writes into the tags it derives from cards (`base_model:quantized:ORG/NAME`)."""

    QUANTIZED = "quantized"
    FINETUNE = "finetune"
    ADAPTER = "adapter"
    MERGE = "merge"
    UNKNOWN = "unknown"
    """The card names a base but no relation (the Hub then infers one; hubwatch does not)."""


class LineageStatus(StrEnum):
    """Where a derivative stands against its base's history."""

    CURRENT = "current"
    """Matches the base's newest revision in every compared aspect."""
    STALE = "stale"
    """Matches an older base revision; the base changed since in ways the derivative lacks."""
    UNMATCHED = "unmatched"
    """No stored base revision matches the derivative."""
    BASE_UNTRACKED = "base_untracked"
    """The declared base is not tracked, so nothing can be compared."""


@dataclass(frozen=True, slots=True)
class Lineage:
    """What is known of one tracked derivative's base, as of its newest stored revision."""

    repo_id: str
    """The derivative."""
    sha: CommitSha
    """The derivative's revision this was worked out for."""
    base_repo_id: str
    relation: Relation
    status: LineageStatus
    base_sha: CommitSha | None = None
    """The base revision the derivative was built from (the newest that matches), if any."""
    missed: tuple[dict[str, Any], ...] = ()
    """The base's changes since `base_sha` that the derivative did not take, JSON-able:
    {"sha", "kind", "severity", "summary", "path"}, oldest first."""
    aspects: tuple[str, ...] = ()
    """What was compared (chat_template, special_tokens, tokenizer, generation)."""
    checked_at: datetime | None = None
    detail: str | None = None
    """Why the status is what it is, in one line (which aspects differ, what is missing)."""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Derivative:
    """One model the source lists as derived from a base (the Hub: by its card's base_model)."""

    repo_id: str
    relation: Relation
    """The relation the listing gives, UNKNOWN when it gives none."""
    last_modified: datetime | None = None
