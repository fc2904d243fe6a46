"""GGUF vocabularies: tokens removed, re-numbered or appended, token types, merges, and the
tokenizer model and pre-tokenizer.

A GGUF token's id is its position in `tokenizer.ggml.tokens`. Lists of 150k+ tokens are compared
whole first (one C-level equality); when they differ, the positions that moved are found with
C-level passes (`map`, `compress`) and Python only sees the tokens that moved.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import compress
from operator import ne
from typing import Any

from hubwatch.diff.gguf.pairs import ModelPair, paired
from hubwatch.diff.sections import digest, listing, show
from hubwatch.diff.tokenizer.merges import merges_changes
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, Severity

TOKENS, TYPES, SCORES, MERGES = (
    "tokenizer.ggml.tokens",
    "tokenizer.ggml.token_type",
    "tokenizer.ggml.scores",
    "tokenizer.ggml.merges",
)
PIPELINE = (
    "tokenizer.ggml.model",
    "tokenizer.ggml.pre",
    "tokenizer.ggml.add_space_prefix",
    "tokenizer.ggml.remove_extra_whitespaces",
    "tokenizer.ggml.precompiled_charsmap",
)
"""The keys that choose how text is split before the vocabulary is looked up."""
OWNED = frozenset({TOKENS, TYPES, SCORES, MERGES, "tokenizer.ggml.token_type_count", *PIPELINE})
"""The metadata keys this differ reports."""
_EXAMPLES = 20  # tokens kept in before/after (counts are always exact)
_LONGEST = 200  # characters of one token kept in before/after (an upload may hold huge ones)


def clip(token: str) -> str:
    """A token short enough to keep in before/after."""
    return token if len(token) <= _LONGEST else token[: _LONGEST - 1] + "…"


def diff_gguf_vocabulary(old: RevisionView, new: RevisionView) -> list[Change]:
    """Vocabulary, merges and tokenizer pipeline changes of every GGUF model in both revisions."""
    changes: list[Change] = []
    for pair in paired(old, new):
        changes += _vocabulary(pair) + _merges(pair) + _pipeline(pair)
    return changes


def strings(value: Any) -> list[str]:
    """A metadata array as a list of strings (an untrusted file may hold anything there)."""
    if not isinstance(value, list):
        return []
    if set(map(type, value)) <= {str}:  # the usual case, checked in C
        return value
    return [v if isinstance(v, str) else show(v) for v in value]


def _vocabulary(pair: ModelPair) -> list[Change]:
    tokens_b, tokens_a = (strings(v) for v in pair.metadata(TOKENS))
    types_b, types_a = pair.metadata(TYPES)
    scores_b, scores_a = pair.metadata(SCORES)
    if tokens_b == tokens_a and types_b == types_a and scores_b == scores_a:
        return []
    moved = _moved(tokens_b, tokens_a)
    before: dict[str, Any] = {"size": len(tokens_b)}
    after: dict[str, Any] = {"size": len(tokens_a)}
    parts, breaking = [], False
    if moved or len(tokens_a) < len(tokens_b):
        kept = set(tokens_a)
        gone = moved + list(range(len(tokens_a), len(tokens_b)))
        removed = [tokens_b[i] for i in gone if tokens_b[i] not in kept]
        renumbered = [i for i in gone if tokens_b[i] in kept]
        breaking = True
        if removed:
            parts.append(f"{len(removed)} removed ({listing((show(t) for t in removed), 3)})")
            before["removed"] = [clip(t) for t in removed[:_EXAMPLES]]
        if renumbered:
            examples = [
                f"{show(tokens_b[i])} {i}→{tokens_a.index(tokens_b[i])}" for i in renumbered[:3]
            ]
            parts.append(f"{len(renumbered)} re-numbered ({listing(examples, 3)})")
            before["renumbered"] = {clip(tokens_b[i]): i for i in renumbered[:_EXAMPLES]}
            after["renumbered"] = {
                clip(tokens_b[i]): tokens_a.index(tokens_b[i]) for i in renumbered[:_EXAMPLES]
            }
    appended = tokens_a[len(tokens_b) :]
    if appended:
        new_ids = range(len(tokens_b), len(tokens_a))
        parts.append(f"{len(appended)} at new ids ({listing((show(t) for t in appended), 3)})")
        after["added"] = dict(zip(map(clip, appended[:_EXAMPLES]), new_ids, strict=False))
    parts += _types(tokens_a, types_b, types_a, before, after)
    if scores_b != scores_a:
        parts.append("token scores changed")
        before["scores"], after["scores"] = digest(scores_b), digest(scores_a)
    return [
        Change(
            "gguf.vocabulary",
            Severity.BREAKING if breaking else Severity.BEHAVIOR,
            f"{pair.label}: vocabulary {len(tokens_b)} → {len(tokens_a)} tokens: "
            f"{'; '.join(parts)}.",
            pair.name,
            before,
            after,
        )
    ]


def _moved(before: list[str], after: list[str]) -> list[int]:
    """The ids (below both lengths) that hold another token after."""
    if before[: len(after)] == after[: len(before)]:  # the usual case: a C-level comparison
        return []
    return list(compress(range(len(before)), map(ne, before, after)))


def _types(
    tokens: list[str], types_b: Any, types_a: Any, before: dict[str, Any], after: dict[str, Any]
) -> list[str]:
    """Token types (normal, control, user-defined…) that changed, in words and in `before` and
    `after`."""
    if types_b == types_a:
        return []
    changed: list[int] = []
    if isinstance(types_b, list) and isinstance(types_a, list):
        changed = list(compress(range(len(types_b)), map(ne, types_b, types_a)))
    if not changed:
        before["token_types"], after["token_types"] = digest(types_b), digest(types_a)
        return ["token types changed"]

    def name(i: int) -> str:
        return clip(tokens[i]) if i < len(tokens) else str(i)

    before["token_types"] = {name(i): types_b[i] for i in changed[:_EXAMPLES]}
    after["token_types"] = {name(i): types_a[i] for i in changed[:_EXAMPLES]}
    examples = (f"{show(name(i))} {types_b[i]}→{types_a[i]}" for i in changed[:3])
    return [f"{len(changed)} token type(s) changed ({listing(examples, 3)})"]


def _merges(pair: ModelPair) -> list[Change]:
    merges_b, merges_a = pair.metadata(MERGES)
    if merges_b == merges_a:
        return []
    return [
        replace(change, kind="gguf.merges", path=pair.name)
        for change in merges_changes(strings(merges_b), strings(merges_a), pair.label)
    ]


def _pipeline(pair: ModelPair) -> list[Change]:
    changed = [key for key in PIPELINE if pair.metadata(key)[0] != pair.metadata(key)[1]]
    if not changed:
        return []
    before = {key: pair.metadata(key)[0] for key in changed}
    after = {key: pair.metadata(key)[1] for key in changed}
    moves = (
        f"{key.removeprefix('tokenizer.ggml.')} {show(before[key], 40)} → {show(after[key], 40)}"
        for key in changed
    )
    return [
        Change(
            "gguf.tokenizer",
            Severity.BEHAVIOR,
            f"{pair.label}: tokenizer pipeline changed: {listing(moves, 3)}.",
            pair.name,
            before,
            after,
        )
    ]
