"""Semantic diffs between two revisions: one differ per kind of file, all in one registry.

A differ is a plain callable `(old, new) -> list[Change]` over two read-only `RevisionView`s.
The built-ins register in `DIFFERS` exactly as an extension would:

    from hubwatch.diff import DIFFERS
    DIFFERS["my_kind"] = my_differ

Installed packages add differs through the `hubwatch.differs` entry-point group, which
`hubwatch.diff.plugins.load_differs()` reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import structlog

from hubwatch.diff.chat_template import diff_chat_template
from hubwatch.diff.config import diff_config
from hubwatch.diff.estimate import diff_estimate
from hubwatch.diff.files import diff_card, diff_code, diff_files
from hubwatch.diff.generation import diff_generation
from hubwatch.diff.health import diff_health
from hubwatch.diff.mistral import diff_mistral
from hubwatch.diff.policy import apply_policy
from hubwatch.diff.tokenizer import diff_tokenizer
from hubwatch.diff.view import RevisionView
from hubwatch.diff.weights import diff_weights
from hubwatch.models import Change, Severity

log = structlog.get_logger(__name__)

Differ = Callable[[RevisionView, RevisionView], list[Change]]
"""Compares two revisions and returns what changed, classified."""

DIFFERS: dict[str, Differ] = {}
"""Every differ run on each new revision, by name; built-ins and extensions alike."""

DIFFERS.update(
    {
        "files": diff_files,
        "config": diff_config,
        "generation": diff_generation,
        "tokenizer": diff_tokenizer,
        "chat_template": diff_chat_template,
        "weights": diff_weights,
        "code": diff_code,
        "card": diff_card,
        "mistral": diff_mistral,
        "health": diff_health,
        "estimate": diff_estimate,
    }
)

__all__ = ["DIFFERS", "Differ", "RevisionView", "diff_revisions"]


def diff_revisions(
    old: RevisionView, new: RevisionView, differs: Mapping[str, Differ] | None = None
) -> list[Change]:
    """Every change from `old` to `new`, most severe first; a failing differ is recorded.

    The severity policy (`hubwatch.diff.policy`) has the last word on each change's severity,
    drops no-ops and cuts summaries to one line.
    """
    changes: list[Change] = []
    for name, differ in (DIFFERS if differs is None else differs).items():
        try:
            changes += differ(old, new)
        except Exception as exc:  # untrusted input must never stop a poll
            log.warning("differ_failed", differ=name, error=f"{type(exc).__name__}: {exc}")
            changes.append(
                Change(
                    "diff.failed",
                    Severity.INFO,
                    f"The {name} differ failed: {type(exc).__name__}: {str(exc)[:200]}",
                )
            )
    return sorted(apply_policy(changes), key=lambda change: -change.severity.rank)
