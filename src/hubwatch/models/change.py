"""Classified changes between two revisions and how severe they are."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Severity(StrEnum):
    """How much a change matters to someone who depends on the model."""

    BREAKING = "breaking"
    """Code or outputs break: stop tokens, architecture, vocabulary re-numbered."""
    SECURITY = "security"
    """Riskier to load: pickle weights added, custom code added or changed."""
    BEHAVIOR = "behavior"
    """Outputs change: a chat template that renders differently, new sampling defaults."""
    INFO = "info"
    """Worth knowing, changes nothing for users: a cosmetic template edit, a README."""

    @property
    def rank(self) -> int:
        """Higher is more severe; `severity.rank >= Severity.BEHAVIOR.rank` filters."""
        return _SEVERITY_RANK[self]


_SEVERITY_RANK = {
    Severity.INFO: 0,
    Severity.BEHAVIOR: 1,
    Severity.SECURITY: 2,
    Severity.BREAKING: 3,
}


@dataclass(frozen=True, slots=True)
class Change:
    """One typed, classified difference between two revisions."""

    kind: str
    """Dotted kind, e.g. `generation.stop_tokens`, `chat_template.rendered`."""
    severity: Severity
    summary: str
    """One sentence a person can read."""
    path: str | None = None
    """The file the change concerns, when there is one."""
    before: Any = None
    """Machine-readable value before (JSON-able)."""
    after: Any = None
    """Machine-readable value after (JSON-able)."""
    detail: str | None = None
    """Longer text: a unified diff, the first differing span of a rendered template."""
