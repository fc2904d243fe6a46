"""Lineage's pure core: which base revision a derivative matches, what base changes it missed,
and the `lineage.*` changes that say so. The store reads and writes are `judge.py`'s."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hubwatch.diff import listing
from hubwatch.lineage.fingerprint import (
    ASPECTS,
    CHAT_TEMPLATE,
    GENERATION,
    SPECIAL_TOKENS,
    TOKENIZER,
    Fingerprint,
)
from hubwatch.models import Change, CommitSha, Severity
from hubwatch.models.lineage import Lineage, LineageStatus

STALE, CAUGHT_UP, DERIVATIVES_STALE = (
    "lineage.stale",
    "lineage.caught_up",
    "lineage.derivatives_stale",
)
# The change kinds (diff/*.py) that concern each aspect. GGUF differs name their kinds after
# the same things (`…chat_template…`, `…special_tokens…`, `…stop_tokens…`, `…vocab…`).
_KINDS: Mapping[str, tuple[str, ...]] = {
    CHAT_TEMPLATE: ("chat_template.",),
    SPECIAL_TOKENS: (
        "tokenizer.special_tokens",
        "config.special_token_ids",
        "generation.special_token_ids",
    ),
    TOKENIZER: ("tokenizer.vocab", "tokenizer.added_tokens", "tokenizer.merges", "tokenizer.model"),
    GENERATION: ("generation.stop_tokens", "config.special_token_ids"),
}
_WORDS: Mapping[str, tuple[str, ...]] = {
    CHAT_TEMPLATE: ("chat_template",),
    SPECIAL_TOKENS: ("special_tokens", "special_token_ids"),
    TOKENIZER: ("vocab", "merges", "tokens.", "tokenizer"),
    GENERATION: ("stop_tokens", "eos"),
}


FingerprintOf = Callable[[CommitSha], Fingerprint]
"""The fingerprint of one base revision, by sha (read and cached at the edge)."""


@dataclass(frozen=True, slots=True)
class Assessment:
    """Where one derivative revision stands against its base's history."""

    status: LineageStatus
    base_sha: CommitSha | None
    aspects: tuple[str, ...]
    """The aspects compared (both sides have them)."""
    moved: tuple[tuple[CommitSha, tuple[str, ...]], ...] = ()
    """Base revisions after `base_sha` that changed compared aspects, and which; oldest first."""
    detail: str | None = None


def assess(
    derivative: Fingerprint, history: Sequence[CommitSha], fingerprint_of: FingerprintOf
) -> Assessment:
    """Match `derivative` against the base's `history` (shas, oldest first): the newest revision
    equal on every aspect both have (at least one) is its base; later changes to those aspects
    are what it missed. Older revisions than the match are never fingerprinted."""
    if not derivative.values:
        return Assessment(
            LineageStatus.UNMATCHED,
            None,
            (),
            detail="nothing to compare: no chat template, special tokens, tokenizer or stops",
        )
    nearest: tuple[CommitSha, tuple[str, ...]] | None = None
    for index in range(len(history) - 1, -1, -1):
        both, differ = derivative.compared(fingerprint_of(history[index]))
        if both and not differ:
            return _matched(history[index:], fingerprint_of, both)
        if both and (nearest is None or len(differ) < len(nearest[1])):
            nearest = (history[index], differ)
    if nearest is None:
        return Assessment(
            LineageStatus.UNMATCHED,
            None,
            (),
            detail="no base revision has any aspect the derivative has",
        )
    sha, differ = nearest
    return Assessment(
        LineageStatus.UNMATCHED,
        None,
        tuple(a for a in ASPECTS if a in derivative.values),
        detail=f"no base revision matches; the nearest ({sha[:12]}) differs in {', '.join(differ)}",
    )


def _matched(
    since: Sequence[CommitSha], fingerprint_of: FingerprintOf, both: tuple[str, ...]
) -> Assessment:
    """The match `since[0]`, and which later revisions moved which of the `both` aspects."""
    base = since[0]
    moved = []
    for before, after in zip(since, since[1:], strict=False):
        _, differ = fingerprint_of(before).compared(fingerprint_of(after))
        changed = tuple(a for a in differ if a in both)
        if changed:
            moved.append((after, changed))
    if not moved:
        return Assessment(LineageStatus.CURRENT, base, both)
    aspects = sorted({a for _, changed in moved for a in changed}, key=ASPECTS.index)
    return Assessment(
        LineageStatus.STALE,
        base,
        both,
        tuple(moved),
        f"the base changed {', '.join(aspects)} since {base[:12]}",
    )


def concerns(kind: str, aspect: str) -> bool:
    """Whether a change of `kind` is about `aspect` (chat_template, special_tokens…)."""
    if any(kind == k or (k.endswith(".") and kind.startswith(k)) for k in _KINDS[aspect]):
        return True
    return kind.startswith("gguf.") and any(word in kind for word in _WORDS[aspect])


def missed_of(
    moved: Iterable[tuple[CommitSha, tuple[str, ...]]],
    changes_by_sha: Mapping[CommitSha, Sequence[Change]],
) -> tuple[dict[str, Any], ...]:
    """The base's stored changes behind each move, of the kinds concerning what moved; a move
    no stored change explains (its differ failed, say) is one entry saying which aspects."""
    missed: list[dict[str, Any]] = []
    for sha, aspects in moved:
        found = [
            c
            for c in changes_by_sha.get(sha, ())
            if any(concerns(c.kind, aspect) for aspect in aspects)
        ]
        missed += [_entry(sha, c.kind, c.severity, c.summary, c.path) for c in found]
        if not found:
            what = ", ".join(aspects)
            summary = f"the base's {what} changed (no stored change says how)"
            missed.append(_entry(sha, f"lineage.{aspects[0]}", Severity.BEHAVIOR, summary, None))
    return tuple(missed)


def _entry(
    sha: str, kind: str, severity: Severity, summary: str, path: str | None
) -> dict[str, Any]:
    return {"sha": sha, "kind": kind, "severity": severity.value, "summary": summary, "path": path}


def worst(missed: Iterable[Mapping[str, Any]]) -> Severity:
    """The most severe of the missed changes (INFO when none)."""
    found = Severity.INFO
    for entry in missed:
        try:
            severity = Severity(str(entry.get("severity")))
        except ValueError:
            continue
        if severity.rank > found.rank:
            found = severity
    return found


def stale_change(lineage: Lineage) -> Change:
    """`lineage.stale`: which base revision the derivative was built from and what it missed."""
    assert lineage.base_sha is not None  # only a matched derivative is stale
    missed = lineage.missed
    kinds = listing(dict.fromkeys(str(m["kind"]) for m in missed), 3)
    return Change(
        STALE,
        worst(missed),
        f"Stale: built from {lineage.base_repo_id} @ {lineage.base_sha[:12]}; missed "
        f"{len(missed)} base change{'' if len(missed) == 1 else 's'} ({kinds}).",
        None,
        None,
        {
            "base": lineage.base_repo_id,
            "base_sha": lineage.base_sha,
            "relation": lineage.relation.value,
            "missed": list(missed),
        },
        "\n".join(f"{m['sha'][:12]} {m['severity']} {m['kind']}: {m['summary']}" for m in missed),
    )


def caught_up_change(previous: Lineage, current: Lineage) -> Change:
    """`lineage.caught_up`: a derivative that was stale now matches its base's newest revision."""
    assert current.base_sha is not None
    return Change(
        CAUGHT_UP,
        Severity.INFO,
        f"Caught up with {current.base_repo_id} @ {current.base_sha[:12]}: took the "
        f"{len(previous.missed)} base change(s) it had missed.",
        None,
        {"base_sha": previous.base_sha, "missed": list(previous.missed)},
        {"base": current.base_repo_id, "base_sha": current.base_sha},
    )


def derivatives_stale_change(base_repo_id: str, sha: str, stale: Sequence[Lineage]) -> Change:
    """`lineage.derivatives_stale` on a base revision: the tracked derivatives it made stale
    (`after`: their ids), as severe as the worst of its changes they missed."""
    ids = sorted(lineage.repo_id for lineage in stale)
    here = [m for lineage in stale for m in lineage.missed if m.get("sha") == sha]
    return Change(
        DERIVATIVES_STALE,
        worst(here),
        f"{len(ids)} tracked derivative{'' if len(ids) == 1 else 's'} of {base_repo_id} "
        f"now stale: {listing(ids, 3)}.",
        None,
        None,
        ids,
        "\n".join(f"{lineage.repo_id}: {lineage.detail}" for lineage in stale),
    )
