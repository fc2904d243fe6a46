"""The chat templates embedded in GGUF models, rendered on the canonical conversations.

The same comparison as `chat_template.py` (same sandbox, budget and render cache), with the
template read from `tokenizer.chat_template` (and `tokenizer.chat_template.<name>`) and the
bos/eos strings the template is given looked up by id in the model's own token list, as llama.cpp
does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from hubwatch.caching import BoundedCache
from hubwatch.diff.chat_template import template_change
from hubwatch.diff.gguf.pairs import ModelPair, paired
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, Severity
from hubwatch.sandbox import DEFAULT_BUDGET_S, RENDERS, RenderBudget, Rendered, RenderLimits

TEMPLATE_KEY = "tokenizer.chat_template"
# The special tokens transformers (and llama.cpp's jinja) pass to a template, by GGUF id key.
SPECIAL_IDS = {
    "bos_token": "tokenizer.ggml.bos_token_id",
    "eos_token": "tokenizer.ggml.eos_token_id",
    "unk_token": "tokenizer.ggml.unknown_token_id",
    "pad_token": "tokenizer.ggml.padding_token_id",
    "sep_token": "tokenizer.ggml.seperator_token_id",  # sic: llama.cpp's spelling
    "cls_token": "tokenizer.ggml.cls_token_id",
}


def is_template_key(key: str) -> bool:
    """Whether a metadata key holds a chat template (or the list of named ones)."""
    return key == TEMPLATE_KEY or key.startswith(TEMPLATE_KEY + ".") or key == TEMPLATE_KEY + "s"


def templates(metadata: Mapping[str, Any]) -> dict[str, str]:
    """Every chat template of a model: "default", and each named one."""
    found = {}
    for key, value in metadata.items():
        if isinstance(value, str) and (key == TEMPLATE_KEY or key.startswith(TEMPLATE_KEY + ".")):
            found[key.removeprefix(TEMPLATE_KEY).removeprefix(".") or "default"] = value
    return found


def token_text(metadata: Mapping[str, Any], id_key: str) -> str | None:
    """The token whose id `id_key` holds, from the model's token list; None when out of range."""
    token_id, tokens = metadata.get(id_key), metadata.get("tokenizer.ggml.tokens")
    if isinstance(token_id, bool) or not isinstance(token_id, int) or not isinstance(tokens, list):
        return None
    text = tokens[token_id] if 0 <= token_id < len(tokens) else None
    return text if isinstance(text, str) else None


def special_tokens(metadata: Mapping[str, Any]) -> dict[str, str]:
    """The special tokens a template is given (bos_token, eos_token…), as strings."""
    found = {name: token_text(metadata, key) for name, key in SPECIAL_IDS.items()}
    return {name: text for name, text in found.items() if text is not None}


def diff_gguf_chat_template(old: RevisionView, new: RevisionView) -> list[Change]:
    """Changes to every GGUF model's chat templates, under the default limits and budget."""
    return compare_gguf_templates(old, new, RenderLimits(), RenderBudget())


def gguf_chat_template_differ(
    budget_s: float = DEFAULT_BUDGET_S, limits: RenderLimits | None = None
) -> Callable[[RevisionView, RevisionView], list[Change]]:
    """The GGUF chat-template differ with a rendering budget of `budget_s` seconds per revision."""
    fixed = limits or RenderLimits()

    def diff_gguf_chat_template(old: RevisionView, new: RevisionView) -> list[Change]:
        return compare_gguf_templates(old, new, fixed, RenderBudget(budget_s))

    return diff_gguf_chat_template


def compare_gguf_templates(
    old: RevisionView, new: RevisionView, limits: RenderLimits, budget: RenderBudget
) -> list[Change]:
    """Every changed template of every GGUF model in both revisions; renders share `budget`.

    A template shared by several quantizations of one repo is rendered once (the render cache).
    """
    changes: list[Change] = []
    renders = new.memo[RENDERS]
    for pair in paired(old, new):
        changes += _model_changes(pair, limits, budget, renders)
    return changes


def _model_changes(
    pair: ModelPair, limits: RenderLimits, budget: RenderBudget, renders: BoundedCache[Rendered]
) -> list[Change]:
    before, after = templates(pair.before.metadata), templates(pair.after.metadata)
    specials = (special_tokens(pair.before.metadata), special_tokens(pair.after.metadata))
    changes = []
    for name in sorted(before.keys() | after.keys()):
        b, a = before.get(name), after.get(name)
        if b == a:
            continue
        if a is None:
            changes.append(_removed(pair, name, b))
            continue
        change = template_change(name, pair.label, b, a, specials, limits, budget, renders)
        changes.append(replace(change, kind=f"gguf.{change.kind}", path=pair.name))
    return changes


def _removed(pair: ModelPair, name: str, before: str | None) -> Change:
    what = "chat template" if name == "default" else f"{name!r} chat template"
    return Change(
        "gguf.chat_template.removed",
        Severity.BREAKING,
        f"{pair.label}: the embedded {what} was removed; runtimes fall back to a built-in "
        "template or refuse chat.",
        pair.name,
        before,
        None,
    )
