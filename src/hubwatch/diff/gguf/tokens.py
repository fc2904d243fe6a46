"""GGUF special tokens: bos/eos/eot/eom/pad/unk… by id and by the string at that id, and whether
bos/eos are added to inputs. A stop token (eos, eot, eom) that changed stops generation
elsewhere, or never."""

from __future__ import annotations

from typing import Any

from hubwatch.diff.gguf.pairs import ModelPair, paired
from hubwatch.diff.gguf.template import token_text
from hubwatch.diff.gguf.vocabulary import clip
from hubwatch.diff.sections import show
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, Severity

_PREFIX = "tokenizer.ggml."
SPECIAL_IDS = {
    "bos": "bos_token_id",
    "eos": "eos_token_id",
    "eot": "eot_token_id",
    "eom": "eom_token_id",
    "pad": "padding_token_id",
    "unk": "unknown_token_id",
    "sep": "seperator_token_id",  # sic: llama.cpp's spelling
    "cls": "cls_token_id",
    "mask": "mask_token_id",
}
"""Short name → the id's key under `tokenizer.ggml.`."""
STOP_TOKENS = ("eos", "eot", "eom")
"""The tokens llama.cpp stops generating at."""
FLAGS = ("add_bos_token", "add_eos_token", "add_sep_token")
"""Whether the tokenizer adds bos/eos/sep to every input, under `tokenizer.ggml.`."""

OWNED = frozenset(_PREFIX + key for key in (*SPECIAL_IDS.values(), *FLAGS))
"""The metadata keys this differ reports."""


def diff_gguf_special_tokens(old: RevisionView, new: RevisionView) -> list[Change]:
    """One change per GGUF model whose special tokens or bos/eos flags changed."""
    return [change for pair in paired(old, new) for change in _model_changes(pair)]


def _token(metadata: Any, name: str) -> dict[str, Any] | None:
    key = _PREFIX + SPECIAL_IDS[name]
    token_id = metadata.get(key)
    if token_id is None:
        return None
    text = token_text(metadata, key)
    return {
        "id": token_id if isinstance(token_id, int) else show(token_id),  # untrusted: any value
        "token": clip(text) if text is not None else None,
    }


def _words(token: dict[str, Any] | None) -> str:
    return "unset" if token is None else f"{show(token['token'])} ({show(token['id'])})"


def _model_changes(pair: ModelPair) -> list[Change]:
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    parts = []
    for name in SPECIAL_IDS:
        b, a = _token(pair.before.metadata, name), _token(pair.after.metadata, name)
        if b != a:
            before[name], after[name] = b, a
            parts.append(f"{name} {_words(b)} → {_words(a)}")
    for flag in FLAGS:
        b, a = pair.metadata(_PREFIX + flag)
        if b != a:
            before[flag], after[flag] = b, a
            parts.append(f"{flag} {show(b)} → {show(a)}")
    if not parts:
        return []
    stops = [name for name in STOP_TOKENS if name in before]
    why = "; generation stops elsewhere, or never" if stops else ""
    return [
        Change(
            "gguf.special_tokens",
            Severity.BREAKING if stops else Severity.BEHAVIOR,
            f"{pair.label}: special tokens changed: {'; '.join(parts)}{why}.",
            pair.name,
            before,
            after,
        )
    ]
