"""Tokenizer files: each file a tokenizer may ship, in any folder, sent to the differ for its kind.

tokenizer.json is compared in tokenizer_json.py, tokenizer_config.json and
special_tokens_map.json in special_tokens.py; the plain vocabulary and merges files are here.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from typing import Any

from hubwatch.diff.sections import first_upload, pair
from hubwatch.diff.tokenizer.merges import merges_changes
from hubwatch.diff.tokenizer.special_tokens import (
    special_tokens_map_changes,
    tokenizer_config_changes,
)
from hubwatch.diff.tokenizer.tokenizer_json import tokenizer_json_changes
from hubwatch.diff.tokenizer.vocabulary import added_tokens_changes, vocab_changes
from hubwatch.formats.tokenizer import vocab_table
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change


def diff_tokenizer(old: RevisionView, new: RevisionView) -> list[Change]:
    """Changes to every tokenizer file, in any folder."""
    changes: list[Change] = []
    for path in sorted(old.files.keys() | new.files.keys()):
        handler = _HANDLERS.get(posixpath.basename(path))
        if handler is None:
            continue
        a, b = old.files.get(path), new.files.get(path)
        if a is not None and b is not None and a.blob_id == b.blob_id:
            continue  # the same bytes: nothing to parse
        changes += handler(old, new, path)
    return changes


def _added_tokens_json(old: RevisionView, new: RevisionView, path: str) -> list[Change]:
    before, after = pair(old, new, path)

    def table(value: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {str(k): {"id": v} for k, v in value.items()}

    return added_tokens_changes(table(before), table(after), path)


def _vocab_json(old: RevisionView, new: RevisionView, path: str) -> list[Change]:
    before, after = pair(old, new, path)
    return vocab_changes(vocab_table(before), vocab_table(after), path)


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


_HANDLERS: dict[str, Callable[[RevisionView, RevisionView, str], list[Change]]] = {
    "tokenizer.json": tokenizer_json_changes,
    "tokenizer_config.json": tokenizer_config_changes,
    "special_tokens_map.json": special_tokens_map_changes,
    "added_tokens.json": _added_tokens_json,
    "vocab.json": _vocab_json,
    "vocab.txt": _vocab_txt,
    "merges.txt": _merges_txt,
}
"""The differ for each tokenizer file, by file name."""
