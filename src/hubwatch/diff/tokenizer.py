"""Tokenizer files: vocabulary, merges, added and special tokens, the tokenization pipeline.

Real tokenizer.json files hold 100k-250k tokens; sections are compared whole first (one C-level
equality per section) and only the sections that differ are taken apart: model.merges as bytes
(merges.py), model.vocab parsed and compared in C.
"""

from __future__ import annotations

import gc
import posixpath
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import compress, filterfalse, repeat
from operator import eq, ne
from typing import Any

from hubwatch.diff.config import auto_map_changes
from hubwatch.diff.merges import merges_bytes_changes, merges_changes
from hubwatch.diff.sections import arrow, changed_keys, first_upload, listing, pair, show
from hubwatch.diff.view import RevisionView, parse_json
from hubwatch.models import Change, Severity

PIPELINE = ("normalizer", "pre_tokenizer", "post_processor", "decoder")
SPECIAL = (
    "bos_token", "eos_token", "pad_token", "unk_token", "sep_token", "cls_token", "mask_token",
    "additional_special_tokens",
)  # fmt: skip
_TOKEN_ATTRS = ("id", "special", "normalized", "lstrip", "rstrip", "single_word")
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
_MISSING = object()


def diff_tokenizer(old: RevisionView, new: RevisionView) -> list[Change]:
    """Changes to every tokenizer file, in any folder."""
    handlers: dict[str, Callable[[RevisionView, RevisionView, str], list[Change]]] = {
        "tokenizer.json": _tokenizer_json,
        "tokenizer_config.json": _tokenizer_config,
        "special_tokens_map.json": _special_tokens_map,
        "added_tokens.json": _added_tokens_json,
        "vocab.json": _vocab_json,
        "vocab.txt": _vocab_txt,
        "merges.txt": _merges_txt,
    }
    changes: list[Change] = []
    for path in sorted(old.files.keys() | new.files.keys()):
        handler = handlers.get(posixpath.basename(path))
        if handler is None:
            continue
        a, b = old.files.get(path), new.files.get(path)
        if a is not None and b is not None and a.blob_id == b.blob_id:
            continue  # the same bytes: nothing to parse
        changes += handler(old, new, path)
    return changes


# -- tokenizer.json ----------------------------------------------------------------------------


def _tokenizer_json(old: RevisionView, new: RevisionView, path: str) -> list[Change]:
    if first_upload(old, path):
        return []
    with _paused_gc():
        return _tokenizer_json_changes(old, new, path)


@contextmanager
def _paused_gc() -> Iterator[None]:
    """No cyclic garbage collection while a 150k-token vocabulary is parsed and compared.

    Parsing model.merges (when it cannot be compared as bytes) allocates ~150k lists; each 700
    allocations start a collection that walks every young container, which took half of
    orjson's time. Nothing built here is cyclic: nothing is left for the collector to find.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _tokenizer_json_changes(old: RevisionView, new: RevisionView, path: str) -> list[Change]:
    split_b = split_tokenizer_json(old.raw(path)) if path in old.files else None
    split_a = split_tokenizer_json(new.raw(path)) if path in new.files else None
    merges: list[Change] | None = None  # the merges' changes, when compared as bytes
    if split_b is not None and split_a is not None:
        before, after = split_b.skeleton, split_a.skeleton
        differ = [key for key in ("vocab", "merges") if split_b.raw[key] != split_a.raw[key]]
        if "merges" in differ:
            merges = merges_bytes_changes(split_b.raw["merges"], split_a.raw["merges"], path)
        big = {  # the same bytes, or merges compared as bytes: not even parsed
            key: (split_b.load(key), split_a.load(key))
            for key in differ
            if key == "vocab" or merges is None
        }
    else:  # not in the usual layout: parse everything
        before, after = pair(old, new, path)
        models = (before.get("model"), after.get("model"))
        b, a = (m if isinstance(m, dict) else {} for m in models)
        big = {key: (b.get(key), a.get(key)) for key in ("vocab", "merges")}
    changes: list[Change] = []
    for key in [k for k in (*PIPELINE, "truncation", "padding") if before.get(k) != after.get(k)]:
        severity = Severity.BEHAVIOR if key in PIPELINE else Severity.INFO
        changes.append(
            Change(
                f"tokenizer.{key}",
                severity,
                f"{path}: the {key.replace('_', '-')} changed "
                f"({_kind_of(before.get(key))} → {_kind_of(after.get(key))}).",
                path,
                before.get(key),
                after.get(key),
            )
        )
    if before.get("added_tokens") != after.get("added_tokens"):
        changes += added_tokens_changes(
            _by_content(before.get("added_tokens")), _by_content(after.get("added_tokens")), path
        )
    b_model, a_model = before.get("model"), after.get("model")
    b_model = b_model if isinstance(b_model, dict) else {}
    a_model = a_model if isinstance(a_model, dict) else {}
    if "vocab" in big and big["vocab"][0] != big["vocab"][1]:
        changes += vocab_changes(_vocab(big["vocab"][0]), _vocab(big["vocab"][1]), path)
    if merges is not None:
        changes += merges
    elif "merges" in big and big["merges"][0] != big["merges"][1]:
        changes += merges_changes(_merges(big["merges"][0]), _merges(big["merges"][1]), path)
    rest = [k for k in changed_keys(b_model, a_model) if k not in ("vocab", "merges")]
    if rest:
        changes.append(
            Change(
                "tokenizer.model",
                Severity.BEHAVIOR,
                f"{path}: tokenizer model settings changed: "
                + ", ".join(f"{k} {arrow(b_model.get(k), a_model.get(k))}" for k in rest[:5])
                + ".",
                path,
                {k: b_model.get(k) for k in rest},
                {k: a_model.get(k) for k in rest},
            )
        )
    return changes


class SplitTokenizer:
    """A tokenizer.json with its two big sections (model.vocab, model.merges) kept as bytes."""

    __slots__ = ("raw", "skeleton")

    def __init__(self, skeleton: dict[str, Any], raw: dict[str, bytes]) -> None:
        self.skeleton = skeleton
        """Everything else, parsed; model.vocab and model.merges are None in it."""
        self.raw = raw

    def load(self, key: str) -> Any:
        return parse_json(self.raw[key])


def split_tokenizer_json(data: bytes | None) -> SplitTokenizer | None:
    """Cut model.vocab and model.merges out of a tokenizer.json without parsing them.

    The `tokenizers` library writes them as the last two keys of `model`, the last top-level
    key. The cut is verified: the rest must parse with null in exactly those two places and
    each cut-out value must end where the next begins; otherwise None (parse it all).
    """
    if not data:
        return None
    vocab_key = data.find(b'"vocab":')
    merges_key = data.rfind(b'"merges":')
    if vocab_key < 0 or merges_key < vocab_key:
        return None
    vocab_start = vocab_key + len(b'"vocab":')
    vocab_end = data.rfind(b",", vocab_start, merges_key)
    merges_start = merges_key + len(b'"merges":')
    merges_end = _rstripped(data, len(data))
    for _ in range(2):  # the closing braces of `model` and of the file (no 8 MB copies)
        if data[merges_end - 1 : merges_end] != b"}":
            return None
        merges_end = _rstripped(data, merges_end - 1)
    if vocab_end < 0 or merges_end <= merges_start:
        return None
    skeleton = parse_json(
        data[:vocab_start] + b"null" + data[vocab_end:merges_start] + b"null" + data[merges_end:]
    )
    model = skeleton.get("model") if isinstance(skeleton, dict) else None
    if not (
        isinstance(model, dict) and model.get("vocab", 0) is None and model.get("merges", 0) is None
    ):
        return None
    if data[vocab_end:merges_key].strip() != b",":
        return None
    return SplitTokenizer(
        skeleton, {"vocab": data[vocab_start:vocab_end], "merges": data[merges_start:merges_end]}
    )


def _rstripped(data: bytes, end: int) -> int:
    """Where `data[:end].rstrip()` would end."""
    while end and data[end - 1] in b" \t\n\r\x0b\x0c":
        end -= 1
    return end


def _kind_of(section: Any) -> str:
    if section is None:
        return "none"
    if isinstance(section, dict):
        return str(section.get("type", "custom"))
    return type(section).__name__


def _vocab(value: Any) -> dict[str, int]:
    if isinstance(value, dict):
        return value  # token → id as parsed; ids are only compared, never computed with
    if isinstance(value, list):  # Unigram: [[piece, score], ...], the id is the position
        return {str(item[0]): i for i, item in enumerate(value) if isinstance(item, list) and item}
    return {}


def _merges(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    kinds = set(map(type, value))
    if kinds <= {str}:  # the old format, "a b"
        return value
    if kinds == {list}:  # the current format, ["a", "b"]: joined in C
        try:
            return list(map(" ".join, value))
        except TypeError:  # a piece that is not a string: spelled with str() below
            pass
    return [" ".join(map(str, m)) if isinstance(m, list) else str(m) for m in value]


def _by_content(value: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(value, list):
        return {}
    return {str(t.get("content")): t for t in value if isinstance(t, dict)}


# -- the pieces, shared by every file that holds them -------------------------------------------


def _ids_are_positions(vocab: dict[str, int]) -> bool:
    return all(map(eq, vocab.values(), range(len(vocab))))


def vocab_changes(before: dict[str, int], after: dict[str, int], path: str) -> list[Change]:
    """Tokens added, removed or given another id."""
    if before == after:
        return []
    # Every token is visited in C (map, compress, filterfalse); Python only sees the tokens
    # that moved, in `before`'s order: those whose id differs (before[t] != after[t]) or that
    # are gone.
    if _ids_are_positions(before) and _ids_are_positions(after):
        # As `tokenizers` writes them (ids 0, 1, 2… in order), a token's id is its position
        # and the tokens that moved are those with another token in their place.
        tokens_before, tokens_after = list(before), list(after)
        moved = list(compress(tokens_before, map(ne, tokens_before, tokens_after)))
        moved += tokens_before[len(tokens_after) :]
    else:
        ids_after = map(after.get, before, repeat(_MISSING))
        moved = list(compress(before, map(ne, before.values(), ids_after)))
    removed = [t for t in moved if t not in after]
    renumbered = [t for t in moved if t in after]
    kept = len(before) - len(removed)
    added = list(filterfalse(before.__contains__, after)) if len(after) > kept else []
    if not (added or removed or renumbered):
        return []
    parts = []
    if added:
        parts.append(f"{len(added)} added ({listing(show(t) for t in added[:3])})")
    if removed:
        parts.append(f"{len(removed)} removed ({listing(show(t) for t in removed[:3])})")
    if renumbered:
        examples = (f"{show(t)} {before[t]}→{after[t]}" for t in renumbered[:3])
        parts.append(f"{len(renumbered)} re-numbered ({listing(examples)})")
    breaking = bool(removed or renumbered)
    return [
        Change(
            "tokenizer.vocab",
            Severity.BREAKING if breaking else Severity.BEHAVIOR,
            f"{path}: vocabulary {len(before)} → {len(after)} tokens: {'; '.join(parts)}.",
            path,
            {
                "size": len(before),
                "removed": removed[:20],
                "renumbered": {t: before[t] for t in renumbered[:20]},
            },
            {
                "size": len(after),
                "added": added[:20],
                "renumbered": {t: after[t] for t in renumbered[:20]},
            },
        )
    ]


def added_tokens_changes(
    before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]], path: str
) -> list[Change]:
    """Added tokens (usually the special ones) added, removed or with other attributes."""
    added = [t for t in after if t not in before]
    removed = [t for t in before if t not in after]
    changed = {
        t: [a for a in _TOKEN_ATTRS if before[t].get(a) != after[t].get(a)]
        for t in before
        if t in after and before[t] != after[t]
    }
    changed = {t: attrs for t, attrs in changed.items() if attrs}
    if not (added or removed or changed):
        return []
    parts = []
    if added:
        parts.append(f"{len(added)} added ({_tokens(added, after)})")
    if removed:
        parts.append(f"{len(removed)} removed ({_tokens(removed, before)})")
    for token, attrs in list(changed.items())[:3]:
        moved = ", ".join(f"{a} {arrow(before[token].get(a), after[token].get(a))}" for a in attrs)
        parts.append(f"{show(token)}: {moved}")
    if len(changed) > 3:
        parts.append(f"{len(changed) - 3} more changed")
    breaking = bool(removed) or any("id" in attrs for attrs in changed.values())
    return [
        Change(
            "tokenizer.added_tokens",
            Severity.BREAKING if breaking else Severity.BEHAVIOR,
            f"{path}: added tokens changed: {'; '.join(parts)}.",
            path,
            {t: before[t] for t in [*removed, *changed][:50]},
            {t: after[t] for t in [*added, *changed][:50]},
        )
    ]


def _tokens(names: list[str], table: dict[str, dict[str, Any]]) -> str:
    def one(name: str) -> str:
        token = table[name]
        special = " special" if token.get("special") else ""
        return f"{show(name)} id {token.get('id')}{special}"

    return listing(one(n) for n in names[:5]) + (
        f", … {len(names) - 5} more" if len(names) > 5 else ""
    )


# -- the other files ---------------------------------------------------------------------------


def _tokenizer_config(old: RevisionView, new: RevisionView, path: str) -> list[Change]:
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
        changes += auto_map_changes(before.get("auto_map"), after.get("auto_map"), path)
    claimed = {k for _, _, _, group in _CONFIG_GROUPS for k in group} | _CONFIG_SKIP
    rest = [k for k in keys if k not in claimed]
    if rest:
        changes.append(
            Change(
                "tokenizer.other",
                Severity.INFO,
                f"{path}: {len(rest)} other setting(s) changed: {listing(rest)}.",
                path,
                {k: before.get(k) for k in rest},
                {k: after.get(k) for k in rest},
            )
        )
    return changes


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


def _special_tokens_map(old: RevisionView, new: RevisionView, path: str) -> list[Change]:
    before, after = pair(old, new, path)
    return _grouped(before, after, changed_keys(before, after), path)


def _added_tokens_json(old: RevisionView, new: RevisionView, path: str) -> list[Change]:
    before, after = pair(old, new, path)

    def table(value: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {str(k): {"id": v} for k, v in value.items()}

    return added_tokens_changes(table(before), table(after), path)


def _vocab_json(old: RevisionView, new: RevisionView, path: str) -> list[Change]:
    before, after = pair(old, new, path)
    return vocab_changes(_vocab(before), _vocab(after), path)


def _lines(view: RevisionView, path: str) -> list[str]:
    text = view.text(path)
    return [] if text is None else text.splitlines()


def _vocab_txt(old: RevisionView, new: RevisionView, path: str) -> list[Change]:
    if first_upload(old, path):
        return []
    before = {line: i for i, line in enumerate(_lines(old, path))}
    after = {line: i for i, line in enumerate(_lines(new, path))}
    return vocab_changes(before, after, path)


def _merges_txt(old: RevisionView, new: RevisionView, path: str) -> list[Change]:
    if first_upload(old, path):
        return []

    def merges(view: RevisionView) -> list[str]:
        return [line for line in _lines(view, path) if line and not line.startswith("#version")]

    return merges_changes(merges(old), merges(new), path)
