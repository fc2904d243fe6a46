"""tokenizer.json: the tokenization pipeline, added tokens, and the model's vocabulary and merges.

Real tokenizer.json files hold 100k-250k tokens; sections are compared whole first (one C-level
equality per section) and only the sections that differ are taken apart: model.merges as bytes
(merges.py), model.vocab parsed and compared in C. A file rewritten by another writer (Python's
`json.dump`) has its sections parsed and written again as the other side is laid out
(relaid.py), so that they compare as bytes again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hubwatch.caching import Slot
from hubwatch.diff.sections import arrow, changed_keys, first_upload, pair
from hubwatch.diff.tokenizer.merges import MergesBytes, merges_bytes_changes, merges_changes
from hubwatch.diff.tokenizer.relaid import relaid, rewritten_side
from hubwatch.diff.tokenizer.vocabulary import added_tokens_changes, vocab_changes
from hubwatch.formats.tokenizer import vocab_table
from hubwatch.formats.view import RevisionView, parse_json
from hubwatch.gcpause import paused_gc
from hubwatch.models import Change, Severity

PIPELINE = ("normalizer", "pre_tokenizer", "post_processor", "decoder")
_BIG = ("vocab", "merges")  # the two sections that hold 100k+ entries


def tokenizer_json_changes(old: RevisionView, new: RevisionView, path: str) -> list[Change]:
    """Changes to a tokenizer.json, section by section."""
    if first_upload(old, path):
        return []
    # Parsing model.merges (when it cannot be compared as bytes) allocates ~150k lists; each
    # 700 allocations start a collection that walks every young container, which took half of
    # orjson's time. Nothing built here is cyclic: nothing is left for the collector to find.
    with paused_gc():
        sections = _sections(old, new, path)
        before, after = sections.before, sections.after
        changes = _pipeline_changes(before, after, path)
        if before.get("added_tokens") != after.get("added_tokens"):
            changes += added_tokens_changes(
                _by_content(before.get("added_tokens")),
                _by_content(after.get("added_tokens")),
                path,
            )
        return changes + _model_changes(sections, path)


@dataclass(frozen=True)
class _Sections:
    """Both sides of a tokenizer.json, as far as they need parsing to be compared."""

    before: dict[str, Any]
    """The old file; model.vocab and model.merges are None in it when it was split."""
    after: dict[str, Any]
    """The new file, likewise."""
    big: dict[str, tuple[Any, Any]]
    """model.vocab and model.merges (old, new), parsed, for those still to be compared."""
    merges: list[Change] | None
    """model.merges' changes when they were compared as bytes; None otherwise."""


def _sections(old: RevisionView, new: RevisionView, path: str) -> _Sections:
    split_b = _split(old, path) if path in old.files else None
    split_a = _split(new, path) if path in new.files else None
    if split_b is None or split_a is None:  # not in the usual layout: parse everything
        before, after = pair(old, new, path)
        models = (before.get("model"), after.get("model"))
        b, a = (m if isinstance(m, dict) else {} for m in models)
        return _Sections(before, after, {key: (b.get(key), a.get(key)) for key in _BIG}, None)
    differ = [key for key in _BIG if split_b.raw[key] != split_a.raw[key]]
    again = {key: _in_one_layout(split_b, split_a, key) for key in differ}
    differ = [key for key in differ if again[key][0] != again[key][1]]  # equal again: the same
    merges = None
    if "merges" in differ:
        raw_b, raw_a = again["merges"]
        merges = merges_bytes_changes(  # a side as it was keeps what it was taken apart into
            split_b.merges if raw_b is split_b.raw["merges"] else raw_b,
            split_a.merges if raw_a is split_a.raw["merges"] else raw_a,
            path,
        )
    big = {  # the same bytes, or merges compared as bytes: not even parsed
        key: (split_b.load(key), split_a.load(key))
        for key in differ
        if key == "vocab" or merges is None
    }
    return _Sections(split_b.skeleton, split_a.skeleton, big, merges)


def _in_one_layout(
    split_b: SplitTokenizer, split_a: SplitTokenizer, key: str
) -> tuple[bytes, bytes]:
    """Both sides of a section that differs, the one rewritten by another writer (Python's
    `json.dump`) parsed and written again as the other is laid out (relaid.py) when they first
    differ in their layout; as they are otherwise, or when it cannot be written so."""
    sides = (split_b, split_a)
    kept = (split_b.raw[key], split_a.raw[key])
    side = rewritten_side(*kept)
    if side is None:
        return kept
    written = relaid(sides[side].load(key), kept[1 - side])  # the parsed side is kept
    if written is None:
        return kept
    return (written, kept[1]) if side == 0 else (kept[0], written)


def _pipeline_changes(before: dict[str, Any], after: dict[str, Any], path: str) -> list[Change]:
    """The pipeline stages, truncation and padding: each one that changed, by its kind."""
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
    return changes


def _model_changes(sections: _Sections, path: str) -> list[Change]:
    """The model: its vocabulary, its merges, then any other setting."""
    b_model, a_model = sections.before.get("model"), sections.after.get("model")
    b_model = b_model if isinstance(b_model, dict) else {}
    a_model = a_model if isinstance(a_model, dict) else {}
    big = sections.big
    changes: list[Change] = []
    if "vocab" in big and big["vocab"][0] != big["vocab"][1]:
        changes += vocab_changes(vocab_table(big["vocab"][0]), vocab_table(big["vocab"][1]), path)
    if sections.merges is not None:
        changes += sections.merges
    elif "merges" in big and big["merges"][0] != big["merges"][1]:
        changes += merges_changes(_merges(big["merges"][0]), _merges(big["merges"][1]), path)
    rest = [k for k in changed_keys(b_model, a_model) if k not in _BIG]
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
    """A tokenizer.json with its two big sections (model.vocab, model.merges) kept as bytes.

    Shared by every diff of the same bytes (`SPLITS`): nothing read from it is mutated. Its
    merges section is taken apart at most once too (`merges`).
    """

    __slots__ = ("_loaded", "merges", "raw", "skeleton")

    def __init__(self, skeleton: dict[str, Any], raw: dict[str, bytes]) -> None:
        self.skeleton = skeleton
        """Everything else, parsed; model.vocab and model.merges are None in it."""
        self.raw = raw
        self.merges = MergesBytes(raw["merges"])
        """model.merges' bytes, taken apart at most once when compared as bytes."""
        self._loaded: dict[str, Any] = {}

    def load(self, key: str) -> Any:
        """The section parsed, once."""
        if key not in self._loaded:
            self._loaded[key] = parse_json(self.raw[key])
        return self._loaded[key]


SPLITS: Slot[SplitTokenizer] = Slot("tokenizer_json.splits", 2)
"""tokenizer.json files taken apart, by their content's sha256: the new side of one change is
the old side of the next, whose vocabulary is then not parsed again."""


def _split(view: RevisionView, path: str) -> SplitTokenizer | None:
    """`split_tokenizer_json` of `path`'s bytes, shared by the views of the same memo."""
    raw = view.raw(path)
    sha = view.content_sha(path) if raw is not None else None
    splits = view.memo[SPLITS]
    found = splits.get(sha) if sha is not None else None
    if found is None:
        found = split_tokenizer_json(raw)
        if found is not None and sha is not None:
            splits.put(sha, found)
    return found


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
    # A file whose `model` is not its last key also ends in `}}` (a decoder's, say): the cut
    # would swallow the keys after `model` into merges. Merges is an array, vocab an object.
    if not _encloses(data, merges_start, merges_end, b"[", b"]") or not _encloses(
        data, vocab_start, vocab_end, b"{", b"}"
    ):
        return None
    return SplitTokenizer(
        skeleton, {"vocab": data[vocab_start:vocab_end], "merges": data[merges_start:merges_end]}
    )


def _encloses(data: bytes, start: int, end: int, first: bytes, last: bytes) -> bool:
    """Whether `data[start:end]`, stripped, opens with `first` and closes with `last`."""
    end = _rstripped(data, end)
    while start < end and data[start] in b" \t\n\r":
        start += 1
    return data[start : start + 1] == first and data[end - 1 : end] == last


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
