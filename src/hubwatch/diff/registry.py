"""The registry of differs: every differ run on each new revision, built-ins and extensions
alike, and `diff_revisions`, which runs them and applies the severity policy."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from functools import partial

import structlog

from hubwatch.diff.chat_template import diff_chat_template
from hubwatch.diff.code import diff_code
from hubwatch.diff.config import diff_config
from hubwatch.diff.estimate import diff_estimate
from hubwatch.diff.files import diff_card, diff_files
from hubwatch.diff.generation import diff_generation
from hubwatch.diff.generic import diff_generic
from hubwatch.diff.gguf.files import diff_gguf_files
from hubwatch.diff.gguf.metadata import diff_gguf_context, diff_gguf_metadata
from hubwatch.diff.gguf.template import diff_gguf_chat_template
from hubwatch.diff.gguf.tensors import diff_gguf_quantization, diff_gguf_tensors
from hubwatch.diff.gguf.tokens import diff_gguf_special_tokens
from hubwatch.diff.gguf.vocabulary import diff_gguf_vocabulary
from hubwatch.diff.health import diff_health
from hubwatch.diff.license import diff_license
from hubwatch.diff.mistral import diff_mistral
from hubwatch.diff.policy import apply_policy
from hubwatch.diff.tokenizer.differ import diff_tokenizer
from hubwatch.diff.vocab_files import diff_vocab_files
from hubwatch.diff.weights import diff_weights
from hubwatch.formats.view import RevisionView
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
        "vocab_files": diff_vocab_files,
        "chat_template": diff_chat_template,
        "weights": diff_weights,
        "code": diff_code,
        "card": diff_card,
        "license": diff_license,
        "mistral": diff_mistral,
        "health": diff_health,
        # GGUF models (llama.cpp's files), paired by name across the two revisions
        "gguf_files": diff_gguf_files,
        "gguf_chat_template": diff_gguf_chat_template,
        "gguf_special_tokens": diff_gguf_special_tokens,
        "gguf_vocabulary": diff_gguf_vocabulary,
        "gguf_context": diff_gguf_context,
        "gguf_quantization": diff_gguf_quantization,
        "gguf_tensors": diff_gguf_tensors,
        "gguf_metadata": diff_gguf_metadata,
        "estimate": diff_estimate,
        "generic": diff_generic,  # last: what the others left unsaid (diff.generic.CLAIMS)
    }
)


DEFAULT_BUDGET_S = 120.0
"""Seconds all differs of one revision may take together (HUBWATCH_DIFF_BUDGET_S)."""


def diff_revisions(
    old: RevisionView,
    new: RevisionView,
    differs: Mapping[str, Differ] | None = None,
    budget_s: float = DEFAULT_BUDGET_S,
) -> list[Change]:
    """Every change from `old` to `new`, most severe first; a failing differ is recorded.

    The severity policy (`hubwatch.diff.policy`) has the last word on each change's severity,
    drops no-ops and cuts summaries to one line. The generic differ runs last and is told what the
    others reported, so a file its owner said nothing about is still reported once
    (`diff.generic.CLAIMS`). Once the differs have taken `budget_s` together, the rest are not
    run, and a `diff.budget` change names them: no revision holds its repo (or any other) back
    for long, whatever its files (every differ's own work is bounded by what it reads).
    """
    chosen = DIFFERS if differs is None else differs
    deadline = time.monotonic() + budget_s
    reported: dict[str, list[Change]] = {}
    skipped: list[str] = []
    last = [name for name, differ in chosen.items() if differ is diff_generic]
    for name, differ in chosen.items():
        if time.monotonic() > deadline:
            skipped.append(name)
        elif differ is not diff_generic:
            reported[name] = _run(name, differ, old, new)
    for name in last:
        if name not in skipped:
            generic = partial(diff_generic, reported=dict(reported))
            reported[name] = _run(name, generic, old, new)
    changes = [change for said in reported.values() for change in said]
    if skipped:
        changes.append(_over_budget(budget_s, skipped))
    return sorted(apply_policy(changes), key=lambda change: -change.severity.rank)


def _generic(
    old: RevisionView, new: RevisionView, reported: dict[str, list[Change]]
) -> list[Change]:
    return diff_generic(old, new, reported)


def _over_budget(budget_s: float, skipped: list[str]) -> Change:
    log.warning("diff_budget_spent", budget_s=budget_s, skipped=skipped)
    return Change(
        "diff.budget",
        Severity.INFO,
        f"The revision's {budget_s:g} s diff budget was spent; not run: {', '.join(skipped)}.",
        None,
        None,
        skipped,
    )


def _run(name: str, differ: Differ, old: RevisionView, new: RevisionView) -> list[Change]:
    try:
        return differ(old, new)
    except Exception as exc:  # untrusted input must never stop a poll
        log.warning("differ_failed", differ=name, error=f"{type(exc).__name__}: {exc}")
        return [
            Change(
                "diff.failed",
                Severity.INFO,
                f"The {name} differ failed: {type(exc).__name__}: {str(exc)[:200]}",
            )
        ]
