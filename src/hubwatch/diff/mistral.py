"""Mistral-native files (what vLLM's mistral mode and mistral-common read): params.json,
tekken.json and SYSTEM_PROMPT.txt. consolidated*.safetensors headers go through the weights
differ like any other safetensors file."""

from __future__ import annotations

import posixpath
import re
from typing import Any

from hubwatch.diff.files import unified
from hubwatch.diff.sections import (
    arrow,
    changed_keys,
    digest,
    first_upload,
    listing,
    same_blob,
    show,
)
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, Severity

MISTRAL_FILES = frozenset({"params.json", "tekken.json", "SYSTEM_PROMPT.txt"})
"""The file names (in any folder) this differ claims."""
# (severity, what it is called, params.json keys), most severe first, like config.json's groups.
PARAMS_GROUPS: tuple[tuple[Severity, str, tuple[str, ...]], ...] = (
    (
        Severity.BREAKING,
        "dimensions",
        ("dim", "n_layers", "n_heads", "n_kv_heads", "head_dim", "hidden_dim", "moe"),
    ),
    (Severity.BREAKING, "vocabulary size", ("vocab_size",)),
    (Severity.BREAKING, "vision encoder", ("vision_encoder",)),
    (Severity.BREAKING, "quantization", ("quantization",)),
    (
        Severity.BEHAVIOR,
        "context",
        (
            "max_seq_len",
            "max_position_embeddings",
            "rope_theta",
            "yarn",
            "rope_scaling",
            "sliding_window",
        ),
    ),  # fmt: skip
)
_SEVERITY_ORDER = (Severity.BREAKING, Severity.SECURITY, Severity.BEHAVIOR, Severity.INFO)


def diff_mistral(old: RevisionView, new: RevisionView) -> list[Change]:
    """Changes to every Mistral-native file, in any folder."""
    changes: list[Change] = []
    for path in sorted(old.files.keys() | new.files.keys()):
        name = posixpath.basename(path)
        if name not in MISTRAL_FILES or same_blob(old, new, path) or first_upload(old, path):
            continue
        if name == "SYSTEM_PROMPT.txt":
            change = _system_prompt_change(old, new, path)
        elif path not in old.files or path not in new.files:
            change = _presence(path in old.files, path, name)
        elif name == "params.json":
            change = params_change(old.json(path), new.json(path), path)
        else:
            change = tekken_change(old.json(path), new.json(path), path)
        if change is not None:
            changes.append(change)
    return changes


def _worst(severities: list[Severity]) -> Severity:
    return min(severities, key=_SEVERITY_ORDER.index, default=Severity.INFO)


def params_change(before: Any, after: Any, path: str) -> Change | None:
    """One change for everything that moved in params.json, as severe as its worst group;
    None when either side could not be read."""
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return None
    b, a = before, after
    keys = changed_keys(b, a)
    if not keys:
        return None
    severities, parts = [], []
    for severity, label, group in PARAMS_GROUPS:
        moved = [key for key in keys if key in group]
        if moved:
            severities.append(severity)
            parts.append(
                f"{label} ({', '.join(f'{k} {arrow(b.get(k), a.get(k))}' for k in moved)})"
            )
    rest = [key for key in keys if not any(key in group for _, _, group in PARAMS_GROUPS)]
    if rest:
        parts.append(f"other ({listing(rest, 3)})")
    return Change(
        "mistral.params",
        _worst(severities),
        f"{path}: {'; '.join(parts)}.",
        path,
        {key: b.get(key) for key in keys},
        {key: a.get(key) for key in keys},
        "\n".join(f"{key}: {arrow(b.get(key), a.get(key))}" for key in keys),
    )


def _presence(removed: bool, path: str, name: str) -> Change:
    """params.json or tekken.json added to a model, or removed from it."""
    kind = "mistral.params" if name == "params.json" else "mistral.tekken"
    if removed:
        return Change(
            kind,
            Severity.BREAKING,
            f"{path} removed: the Mistral-native format (vLLM mistral mode, mistral-common) "
            "no longer loads.",
            path,
            "present",
            None,
        )
    return Change(
        kind,
        Severity.INFO,
        f"{path} added: the model can now be loaded in the Mistral-native format.",
        path,
        None,
        "present",
    )


def _tekken_summary(tekken: Any) -> dict[str, Any] | None:
    """What matters of a tekken.json without its vocabulary: config and special tokens."""
    if not isinstance(tekken, dict):
        return None
    config = tekken.get("config")
    specials = tekken.get("special_tokens")
    return {
        "config": config if isinstance(config, dict) else {},
        "special_tokens": {
            str(t.get("rank")): t.get("token_str")
            for t in (specials if isinstance(specials, list) else [])
            if isinstance(t, dict)
        },
    }


def _token_bytes(tekken: dict[str, Any]) -> list[Any]:
    vocab = tekken.get("vocab")
    if not isinstance(vocab, list):
        return []
    return [t.get("token_bytes") if isinstance(t, dict) else t for t in vocab]


def tekken_change(before: Any, after: Any, path: str) -> Change | None:
    """One change for tekken.json: its config (vocabulary size, pattern, version), its special
    tokens, and how many vocabulary ranks hold other bytes; each vocabulary is walked once.
    Before/after hold what moved, and the vocabulary as its size and a digest."""
    b, a = _tekken_summary(before), _tekken_summary(after)
    if b is None or a is None:
        return None
    parts, severities = [], []
    keys = changed_keys(b["config"], a["config"])
    for key in keys:
        parts.append(f"{key} {arrow(b['config'].get(key), a['config'].get(key))}")
        severities.append(Severity.BEHAVIOR if key == "version" else Severity.BREAKING)
    sb, sa = b["special_tokens"], a["special_tokens"]
    moved = sorted((r for r in sb.keys() | sa.keys() if sb.get(r) != sa.get(r)), key=_rank)
    if moved:
        shown = listing((f"{r}: {show(sb.get(r))} → {show(sa.get(r))}" for r in moved), 3)
        parts.append(f"{len(moved)} special token(s) changed ({shown})")
        # Filling an unused rank (absent, or a `<SPECIAL_N>` placeholder) adds a token; changing
        # or removing one that was in use re-means existing ids.
        filled = all(_unused(sb.get(r)) for r in moved)
        severities.append(Severity.BEHAVIOR if filled else Severity.BREAKING)
    tb, ta = _token_bytes(before), _token_bytes(after)
    renumbered = sum(1 for x, y in zip(tb, ta, strict=False) if x != y)
    if renumbered or len(tb) != len(ta):
        parts.append(f"vocabulary {len(tb)} → {len(ta)} tokens, {renumbered} rank(s) re-numbered")
        severities.append(
            Severity.BEHAVIOR if not renumbered and len(ta) > len(tb) else Severity.BREAKING
        )
    if not parts:
        return None

    def side(summary: dict[str, Any], tokens: list[Any]) -> dict[str, Any]:
        return {
            "config": {key: summary["config"].get(key) for key in keys},
            "special_tokens": {r: summary["special_tokens"].get(r) for r in moved},
            "vocab": {"tokens": len(tokens), "digest": digest(tokens)},
        }

    return Change(
        "mistral.tekken",
        _worst(severities),
        f"{path}: {'; '.join(parts)}.",
        path,
        side(b, tb),
        side(a, ta),
        "\n".join(parts),
    )


_PLACEHOLDER = re.compile(r"^<SPECIAL_\d+>$")


def _unused(token: Any) -> bool:
    """Whether a special-token slot held nothing a model could have been trained to emit."""
    text = token.get("token_str") if isinstance(token, dict) else token
    return text is None or (isinstance(text, str) and bool(_PLACEHOLDER.match(text)))


def _rank(rank: str) -> tuple[int, str]:
    return (int(rank), "") if rank.isdigit() else (1 << 62, rank)


def _system_prompt_change(old: RevisionView, new: RevisionView, path: str) -> Change | None:
    before = old.text(path) if path in old.files else None
    after = new.text(path) if path in new.files else None
    if before == after:
        return None
    state = "added" if before is None else "removed" if after is None else "changed"
    diff = unified(old, new, path)
    plus = sum(1 for line in diff.splitlines() if line.startswith("+") and line[:3] != "+++")
    minus = sum(1 for line in diff.splitlines() if line.startswith("-") and line[:3] != "---")
    return Change(
        "mistral.system_prompt",
        Severity.BEHAVIOR,
        f"{path} {state} (+{plus} -{minus} lines): the default system prompt changed.",
        path,
        old.files[path].blob_id if path in old.files else None,
        new.files[path].blob_id if path in new.files else None,
        diff,
    )
