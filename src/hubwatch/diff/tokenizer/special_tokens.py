"""tokenizer_config.json and special_tokens_map.json: special tokens and tokenizer settings."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from typing import Any

from hubwatch.diff.code.repo import id_offsets, tokenizer_parameters
from hubwatch.diff.config import auto_map_changes
from hubwatch.diff.sections import arrow, changed_keys, other_settings, pair, show
from hubwatch.diff.tokenizer.vocabulary import added_tokens_changes
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, Severity

SPECIAL = (
    "bos_token", "eos_token", "pad_token", "unk_token", "sep_token", "cls_token", "mask_token",
    "additional_special_tokens",
)  # fmt: skip
_CONFIG_GROUPS: tuple[tuple[str, Severity, str, tuple[str, ...]], ...] = (
    ("tokenizer.special_tokens", Severity.BEHAVIOR, "special tokens", SPECIAL),
    (
        "tokenizer.add_special_tokens",
        Severity.BEHAVIOR,
        "automatic special tokens",
        ("add_bos_token", "add_eos_token"),
    ),
    ("tokenizer.model_max_length", Severity.INFO, "model_max_length", ("model_max_length",)),
    ("tokenizer.padding", Severity.BEHAVIOR, "padding", ("padding_side", "truncation_side")),
    ("tokenizer.class", Severity.BEHAVIOR, "tokenizer class", ("tokenizer_class",)),
)
_CONFIG_SKIP = frozenset({"chat_template", "added_tokens_decoder", "auto_map"})


def tokenizer_config_changes(old: RevisionView, new: RevisionView, path: str) -> list[Change]:
    """Changes to a tokenizer_config.json: special tokens, settings, added tokens, auto_map."""
    before, after = pair(old, new, path)
    keys = changed_keys(before, after)
    changes = _grouped(before, after, keys, path)
    if "added_tokens_decoder" in keys:
        changes += added_tokens_changes(
            _decoder(before.get("added_tokens_decoder")),
            _decoder(after.get("added_tokens_decoder")),
            path,
        )
    if "auto_map" in keys:
        changes += auto_map_changes(before.get("auto_map"), after.get("auto_map"), path, old, new)
    claimed = {k for _, _, _, group in _CONFIG_GROUPS for k in group} | _CONFIG_SKIP
    claimed |= {k for k in keys if _custom_special(k, before, after)}
    rest = [k for k in keys if k not in claimed]
    taken = tokenizer_parameters(new)
    moving = [k for k in rest if k in taken and k in id_offsets(new)]
    if moving:
        changes.append(_ids_moved(before, after, {k: taken[k] for k in moving}, path))
    kept = {k: taken[k] for k in rest if k in taken and k not in moving}
    if kept:
        changes.append(_taken(before, after, kept, path))
    rest = [k for k in rest if k not in taken]
    if rest:
        changes.append(
            Change(
                "tokenizer.other",
                Severity.INFO,
                other_settings(path, rest, before, after),
                path,
                {k: before.get(k) for k in rest},
                {k: after.get(k) for k in rest},
            )
        )
    return changes


def _custom_special(key: str, before: dict[str, Any], after: dict[str, Any]) -> bool:
    """A custom tokenizer's own special token (`eop_token`, `gmask_token`): text or AddedToken."""
    values = [v for v in (before.get(key), after.get(key)) if v is not None]
    return key.endswith("_token") and all(isinstance(v, str | dict) for v in values)


def _ids_moved(
    before: dict[str, Any], after: dict[str, Any], keys: dict[str, str | None], path: str
) -> Change:
    """Settings the repo's own tokenizer adds to or takes from every token id it computes
    (`num_image_tokens`): changed, each id means other text."""
    what = ", ".join(f"{k} {_side(before, k, keys[k])} → {_side(after, k, keys[k])}" for k in keys)
    return Change(
        "tokenizer.vocab",
        Severity.BREAKING,
        f"{path}: {what}: the repo's tokenizer adds it to every token id, so each id now means "
        "other text (stored ids and hard-coded ones no longer match).",
        path,
        {k: before.get(k) for k in keys},
        {k: after.get(k) for k in keys},
    )


def _side(values: dict[str, Any], key: str, default: str | None) -> str:
    unset = key not in values and default is not None
    return f"unset (default {default})" if unset else show(values.get(key))


def _taken(
    before: dict[str, Any], after: dict[str, Any], keys: dict[str, str | None], path: str
) -> Change:
    """Settings the repo's own tokenizer class takes (its __init__ parameters; `keys`: each
    with its default, as code)."""

    what = ", ".join(f"{k} {_side(before, k, keys[k])} → {_side(after, k, keys[k])}" for k in keys)
    return Change(
        "tokenizer.custom",
        Severity.BEHAVIOR,
        f"{path}: settings the repo's own tokenizer class takes changed: {what}.",
        path,
        {k: before.get(k) for k in keys},
        {k: after.get(k) for k in keys},
    )


def special_tokens_map_changes(old: RevisionView, new: RevisionView, path: str) -> list[Change]:
    """Changes to a special_tokens_map.json. A token it gains or loses that the
    tokenizer_config.json beside it sets is compared with that value (transformers reads both):
    a map added with the tokens the config has already changes nothing."""
    before, after = pair(old, new, path)
    config = posixpath.join(posixpath.dirname(path), "tokenizer_config.json")
    config_b, config_a = old.json(config), new.json(config)
    for key in set(before) ^ set(after):
        if key not in before and isinstance(config_b, dict) and key in config_b:
            before = {**before, key: config_b[key]}
        if key not in after and isinstance(config_a, dict) and key in config_a:
            after = {**after, key: config_a[key]}
    return _grouped(before, after, changed_keys(before, after), path)


def _decoder(value: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(value, dict):
        return {}
    tokens = {}
    for token_id, token in value.items():
        if isinstance(token, dict):
            entry = dict(token)
            entry["id"] = int(token_id) if str(token_id).isdigit() else token_id
            tokens[str(token.get("content"))] = entry
    return tokens


def _grouped(
    before: dict[str, Any], after: dict[str, Any], keys: Iterable[str], path: str
) -> list[Change]:
    keys = list(keys)
    changes = []
    for kind, severity, label, group in _CONFIG_GROUPS:
        moved = [k for k in keys if k in group]
        if kind == "tokenizer.special_tokens":
            moved += [k for k in keys if k not in group and _custom_special(k, before, after)]
            moved = [k for k in moved if _content(before.get(k)) != _content(after.get(k))]
        if moved:
            what = ", ".join(
                f"{k} {arrow(_content(before.get(k)), _content(after.get(k)))}" for k in moved
            )
            changes.append(
                Change(
                    kind,
                    severity,
                    f"{path}: {label} changed: {what}.",
                    path,
                    {k: before.get(k) for k in moved},
                    {k: after.get(k) for k in moved},
                )
            )
    return changes


def _content(token: Any) -> Any:
    """A special token is a string or an AddedToken dict; show its text."""
    if isinstance(token, dict) and "content" in token:
        return token["content"]
    if isinstance(token, list):
        return [_content(t) for t in token]
    return token
