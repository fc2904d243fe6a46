"""The conditions of the severity policy (`policy.RULES`): named predicates on a change, each
reading only the change's own fields (kind, before, after, summary, the differ's severity)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hubwatch.models import Change, Severity

BREAKING, SECURITY, BEHAVIOR, INFO = (
    Severity.BREAKING,
    Severity.SECURITY,
    Severity.BEHAVIOR,
    Severity.INFO,
)


@dataclass(frozen=True, slots=True)
class Condition:
    """A named predicate on a change."""

    name: str
    """What it says, for people: "license restored (before empty)"."""
    test: Callable[[Change], bool]


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def _side(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else None


def _keys(change: Change) -> set[str]:
    return {
        str(k) for side in (change.before, change.after) if isinstance(side, Mapping) for k in side
    }


ANY = Condition("any", lambda change: True)
DIFFER_BREAKING = Condition(
    "tokens removed or re-numbered (the differ's finding)",
    lambda change: change.severity is BREAKING,
)
DIFFER_SECURITY = Condition(
    "a sandbox violation (the differ's finding)", lambda change: change.severity is SECURITY
)
RESTORED = Condition(
    "license restored (before empty)",
    lambda change: _empty(change.before) and not _empty(change.after),
)
EOS_FORM = Condition(
    "eos list → int (or int → list)",
    lambda change: (
        "eos_token_id" in _keys(change)
        and isinstance(_side(change.before, "eos_token_id"), list)
        != isinstance(_side(change.after, "eos_token_id"), list)
        and not _empty(_side(change.before, "eos_token_id"))
        and not _empty(_side(change.after, "eos_token_id"))
    ),
)


def _removed(*keys: str) -> Callable[[Change], bool]:
    def test(change: Change) -> bool:
        return any(
            not _empty(_side(change.before, k)) and _empty(_side(change.after, k)) for k in keys
        )

    return test


PAD_ID_REMOVED = Condition("pad or eos id removed", _removed("pad_token_id", "eos_token_id"))
SPECIAL_REMOVED = Condition(
    "a special token removed",
    _removed("pad_token", "eos_token", "bos_token", "unk_token", "additional_special_tokens"),
)
PARAMS_GREW = Condition(
    "total parameters moved by 1% or more",
    lambda change: _relative(_side(change.before, "total"), _side(change.after, "total")) >= 0.01,
)
MEMORY_GREW = Condition(
    "serving memory moved by 10% or more",
    lambda change: _relative(change.before, change.after) >= 0.1,
)
WEIGHTS_GREW = Condition(
    "weights memory moved by 10% or more",
    lambda change: _relative(change.before, change.after) >= 0.1,
)
BATCH_LOST = Condition(
    "a card that fitted no longer does",
    lambda change: any(
        _batch(b) >= 1 and _batch(_side(change.after, gpu)) == 0
        for gpu, b in (change.before.items() if isinstance(change.before, Mapping) else ())
    ),
)


def _batch(fit: Any) -> int:
    """A largest batch as estimate.max_batch stores it ({"max_batch", "cards"}), or -1."""
    value = _side(fit, "max_batch") if isinstance(fit, Mapping) else fit
    return value if isinstance(value, int) else -1


ADVISORY_ADDED = Condition(
    "an advisory now applies",
    lambda change: bool(set(change.after or ()) - set(change.before or ())),
)


def _missed(severity: Severity) -> Condition:
    """The lineage step sets a `lineage.stale` (or `derivatives_stale`) change's severity to the
    most severe base change it stands for; the policy keeps it."""
    return Condition(
        f"the worst missed base change is {severity.value} (the lineage step's finding)",
        lambda change: change.severity is severity,
    )


MISSED_BREAKING, MISSED_SECURITY, MISSED_BEHAVIOR = map(_missed, (BREAKING, SECURITY, BEHAVIOR))
IN_TOKENIZER_JSON = Condition(
    "in tokenizer.json (its padding settings)",
    lambda change: (change.path or "").endswith("tokenizer.json"),
)
_MISTRAL_SHAPE = frozenset(
    {"dim", "n_layers", "head_dim", "hidden_dim", "n_heads", "n_kv_heads", "vocab_size", "moe"}
    | {"vision_encoder", "tied_embeddings", "norm_eps", "quantization"}
)
_MISTRAL_CONTEXT = frozenset({"max_seq_len", "max_position_embeddings", "rope_theta", "yarn"})
MISTRAL_SHAPE = Condition(
    "dimensions, vocabulary, MoE or vision changed",
    lambda change: bool(_keys(change) & _MISTRAL_SHAPE),
)
MISTRAL_CONTEXT = Condition(
    "context or rope changed", lambda change: bool(_keys(change) & _MISTRAL_CONTEXT)
)
STOP_TOKEN_CHANGED = Condition(
    "a stop token (eos, eot, eom) changed",
    lambda change: bool(_keys(change) & {"eos", "eot", "eom"}),
)
# GGUF metadata keys (`<arch>.<suffix>`) that fix the model's shape, as config.json's dimensions.
_GGUF_SHAPE = re.compile(
    r"^(general\.architecture|[^.]+\.(block_count|embedding_length|feed_forward_length"
    r"|attention\.head_count(_kv)?|attention\.key_length|attention\.value_length"
    r"|expert_count|vocab_size))$"
)
GGUF_SHAPE = Condition(
    "architecture, dimensions or expert count changed",
    lambda change: any(_GGUF_SHAPE.match(key) for key in _keys(change)),
)
_HEALTHY = re.compile(r"\b(again|now (complete|consistent|loadable)|healthy)\b", re.I)
HEALTHY_AGAIN = Condition(
    "healthy again (after ok)",
    lambda change: (
        _side(change.after, "healthy") is True
        or _side(change.after, "ok") is True
        or change.after is True
        or (not isinstance(change.after, Mapping | bool) and bool(_HEALTHY.search(change.summary)))
    ),
)


def _relative(before: Any, after: Any) -> float:
    if not isinstance(before, int | float) or not isinstance(after, int | float):
        return 0.0
    return abs(after - before) / before if before else float("inf")


# -- config.json --------------------------------------------------------------------------------


def _filled_in(change: Change) -> bool:
    """Only model_type set where it was missing, or the same architectures in another order."""
    before = change.before if isinstance(change.before, Mapping) else {}
    after = change.after if isinstance(change.after, Mapping) else {}
    if not before.keys() | after.keys():
        return False
    for key in before.keys() | after.keys():
        b, a = before.get(key), after.get(key)
        if key.endswith("model_type") and _empty(b):
            continue
        if key.endswith("architectures") and isinstance(b, list) and isinstance(a, list):
            if sorted(map(str, b)) == sorted(map(str, a)):
                continue
        return False
    return True


ARCHITECTURE_FILLED_IN = Condition(
    "model_type filled in where missing, or the same architectures reordered", _filled_in
)


def _moved(*keys: str) -> Callable[[Change], bool]:
    def test(change: Change) -> bool:
        for key in keys:
            b, a = _side(change.before, key), _side(change.after, key)
            if not _empty(b) and not _empty(a) and b != a and type(b) is type(a):
                return True
        return False

    return test


EOS_MOVED = Condition("eos id moved to another id", _moved("eos_token_id"))


# -- tokenizer settings -------------------------------------------------------------------------

USE_FAST = Condition("use_fast set, changed or removed", lambda change: "use_fast" in _keys(change))
NO_LIMIT = 1e29
"""transformers' "no limit" model_max_length is int(1e30) (VERY_LARGE_INTEGER)."""


def _limit_lost(change: Change) -> bool:
    b, a = _side(change.before, "model_max_length"), _side(change.after, "model_max_length")
    real = isinstance(b, int | float) and b < NO_LIMIT
    return real and (a is None or (isinstance(a, int | float) and a >= NO_LIMIT))


LIMIT_LOST = Condition("model_max_length lifted to the no-limit value or removed", _limit_lost)
EOS_TOKEN_MOVED = Condition("eos_token moved to another token", _moved("eos_token"))


# -- weights, code, licences: the differ's findings ---------------------------------------------


def _resized(change: Change) -> bool:
    """A file that held weights (over 1 KiB) before and after moved in size by 1% or more."""
    before = _side(change.before, "sizes") or {}
    after = _side(change.after, "sizes") or {}
    return any(
        isinstance(b, int) and isinstance(after.get(p), int) and min(b, after[p]) > 1024
        and abs(after[p] - b) >= 0.01 * b
        for p, b in before.items()
    )  # fmt: skip


RESIZED = Condition("a weight file's size moved by 1% or more (headers unavailable)", _resized)


def _tensor_counts(change: Change) -> tuple[int, int, int] | None:
    """(changed, possibly changed, all) tensors, where the tensor diff (Xet chunks, or the
    bytes of two git blobs) told them."""
    found = _side(change.after, "tensor_diff")
    if not isinstance(found, dict):
        return None
    changed, possibly, total = (
        found.get(k) for k in ("changed_count", "possibly_count", "tensors")
    )
    if isinstance(changed, int) and isinstance(possibly, int) and isinstance(total, int):
        return changed, possibly, total
    return None


TENSORS_IDENTICAL = Condition(
    "the tensor diff shows every tensor byte-identical",
    lambda change: (n := _tensor_counts(change)) is not None and n[0] == n[1] == 0,
)
MOST_TENSORS_CHANGED = Condition(
    "the tensor diff shows most tensors changed",
    lambda change: (n := _tensor_counts(change)) is not None and 2 * n[0] > n[2],
)
TENSORS_CHANGED = Condition(
    "the tensor diff shows tensors changed",
    lambda change: (n := _tensor_counts(change)) is not None and n[0] + n[1] > 0,
)


def _found(key: str) -> Callable[[Change], bool]:
    def test(change: Change) -> bool:
        findings = _side(change.after, "findings")
        return bool(_side(findings, key))

    return test


CODE_BREAKS = Condition(
    "a name the loader or the code uses is gone, a signature broke, it no longer parses",
    _found("breaks"),
)
CODE_RISKY = Condition(
    "newly reaches network, processes, dynamic code, deserialisation or native code",
    _found("risky"),
)
CODE_FIRST = Condition("the repo's first custom code", _found("first"))
CODE_UNREACHED = Condition(
    "no loader imports it (auto_map reaches none of it)",
    lambda change: _side(_side(change.after, "findings"), "reachable") is False,
)
CODE_UNREAD = Condition("not read as Python (too large, not stored)", _found("unread"))
CODE_RUNS = Condition(
    "functions or classes changed, added or removed, a default moved, a new package",
    lambda change: any(_found(k)(change) for k in ("changed", "added", "removed", "notes")),
)


def _restrictions(value: Any) -> set[str] | None:
    terms = _side(value, "restrictions")
    return {str(t) for t in terms} if isinstance(terms, list) else None


def _more_restrictive(change: Change) -> bool:
    if change.after is None:
        return change.before is not None  # the licence is gone: all rights reserved
    before, after = _restrictions(change.before), _restrictions(change.after)
    return before is not None and after is not None and bool(after - before)


def _less_restrictive(change: Change) -> bool:
    if change.before is None:  # none before: all rights were reserved
        return _restrictions(change.after) is not None
    before, after = _restrictions(change.before), _restrictions(change.after)
    return before is not None and after is not None and bool(before - after)


LICENSE_MORE = Condition(
    "a restriction added (non-commercial, attribution, redistribution, acceptable use) or the "
    "licence removed",
    _more_restrictive,
)
LICENSE_LESS = Condition(
    "a restriction lifted, or a licence where there was none", _less_restrictive
)


def _auto_map(status: str) -> Callable[[Change], bool]:
    return lambda change: (
        _side(change.after, "moves") is not None
        and status in (_side(change.after, "moves") or {}).values()
    )


AUTO_MAP_GONE = Condition("an Auto class no longer mapped", _auto_map("removed"))
AUTO_MAP_NEW_CODE = Condition(
    "an Auto class now loads a class the repo did not have", _auto_map("new code")
)
AUTO_MAP_RETARGETED = Condition(
    "an Auto class now loads another class the repo already had", _auto_map("retargeted")
)
AUTO_MAP_KNOWN = Condition(
    "an Auto class added for a class the repo already had", _auto_map("existing")
)


DEPENDENCY_RISKY = Condition(
    "the dependency's own changes include a security or breaking one",
    lambda change: _side(change.after, "worst") in ("security", "breaking"),
)
