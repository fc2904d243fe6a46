"""generation_config.json: stop tokens first (the Llama-3 incident), then sampling and length."""

from __future__ import annotations

from typing import Any

from hubwatch.diff.sections import arrow, changed_keys, listing, pair, same_blob
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, Severity

PATH = "generation_config.json"
SAMPLING = (
    "temperature", "top_p", "top_k", "min_p", "typical_p", "do_sample",
    "repetition_penalty", "no_repeat_ngram_size", "num_beams",
)  # fmt: skip
LENGTH = ("max_length", "max_new_tokens", "min_length", "min_new_tokens")
STOPS = ("eos_token_id", "stop_strings")
TOKEN_IDS = ("bos_token_id", "pad_token_id", "decoder_start_token_id")
_QUIET = frozenset({"transformers_version", "_from_model_config"})


def diff_generation(old: RevisionView, new: RevisionView) -> list[Change]:
    """Changes to the generation defaults that `model.generate()` applies."""
    if same_blob(old, new, PATH):
        return []
    before, after = pair(old, new, PATH)
    keys = changed_keys(before, after)
    changes: list[Change] = []
    stops = [k for k in keys if k in STOPS]
    if stops:
        changes.append(_stop_tokens(before, after, stops))
    sampling = [k for k in keys if k in SAMPLING]
    if sampling:
        changes.append(_sampling(before, after, sampling))
    for kind, group, label in (
        ("generation.length", LENGTH, "length limits"),
        ("generation.special_token_ids", TOKEN_IDS, "special token ids"),
    ):
        moved = [k for k in keys if k in group]
        if moved:
            changes.append(_group(kind, Severity.BEHAVIOR, label, before, after, moved))
    known = set(SAMPLING) | set(LENGTH) | set(STOPS) | set(TOKEN_IDS) | _QUIET
    rest = [k for k in keys if k not in known]
    if rest:
        changes.append(_group("generation.other", Severity.INFO, "other", before, after, rest))
    return changes


def _ids(value: Any) -> set[Any]:
    if value is None:
        return set()
    return {repr(v) for v in value} if isinstance(value, list) else {repr(value)}


def _stop_tokens(before: dict[str, Any], after: dict[str, Any], keys: list[str]) -> Change:
    what = "; ".join(f"{k} {arrow(before.get(k), after.get(k))}" for k in keys)
    b, a = before.get("eos_token_id"), after.get("eos_token_id")
    if "eos_token_id" in keys and _ids(b) == _ids(a):
        note = "the same tokens in another form (int vs list): code reading it as one int breaks"
    elif "eos_token_id" in keys and _ids(b) < _ids(a):
        note = "generation now also stops on the added tokens"
    elif "eos_token_id" in keys and _ids(a) < _ids(b):
        note = "generation no longer stops on the removed tokens and may run on"
    else:
        note = "generation may stop at other places, or never"
    return Change(
        "generation.stop_tokens",
        Severity.BREAKING,
        f"Stop tokens changed: {what}; {note}.",
        PATH,
        {k: before.get(k) for k in keys},
        {k: after.get(k) for k in keys},
    )


def _sampling(before: dict[str, Any], after: dict[str, Any], keys: list[str]) -> Change:
    b_t, b_p = before.get("temperature"), before.get("top_p")
    a_t, a_p = after.get("temperature"), after.get("top_p")
    if {"temperature", "top_p"} <= set(keys) and (b_t, b_p) == (a_p, a_t):
        what = (
            f"temperature and top_p swapped (temperature {arrow(b_t, a_t)}, "
            f"top_p {arrow(b_p, a_p)})"
        )
        others = [k for k in keys if k not in ("temperature", "top_p")]
        if others:
            what += "; " + ", ".join(f"{k} {arrow(before.get(k), after.get(k))}" for k in others)
    else:
        what = ", ".join(f"{k} {arrow(before.get(k), after.get(k))}" for k in keys)
    return Change(
        "generation.sampling",
        Severity.BEHAVIOR,
        f"Sampling defaults changed: {what}.",
        PATH,
        {k: before.get(k) for k in keys},
        {k: after.get(k) for k in keys},
    )


def _group(
    kind: str,
    severity: Severity,
    label: str,
    before: dict[str, Any],
    after: dict[str, Any],
    keys: list[str],
) -> Change:
    what = ", ".join(f"{k} {arrow(before.get(k), after.get(k))}" for k in keys[:5])
    if len(keys) > 5:
        what = f"{listing(keys)}"
    return Change(
        kind,
        severity,
        f"Generation {label} changed: {what}.",
        PATH,
        {k: before.get(k) for k in keys},
        {k: after.get(k) for k in keys},
    )
