"""Tokenizer health: special-token ids inside the vocabulary, added tokens inside vocab_size."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hubwatch.caching import Slot
from hubwatch.diff.sections import listing
from hubwatch.formats.view import RevisionView

_ID_KEYS = ("bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id")


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """What a revision's tokenizer files say about its token ids."""

    ids: frozenset[int] | None
    """Every id tokenizer.json knows (vocab and added tokens); None without one."""
    added: dict[str, int]
    """Added tokens (tokenizer.json, added_tokens.json): content → id."""
    size: int | None
    """The embedding rows: config.json (or its text_config) vocab_size, else params.json's."""


def tokenizer_problems(view: RevisionView) -> list[str]:
    """Special-token ids outside the vocabulary, added tokens beyond vocab_size."""
    vocabulary = _vocabulary(view)
    problems = []
    for path, key, token_id in _special_ids(view):
        if token_id < 0:
            continue  # -1 is a common "unset"
        if vocabulary.size is not None and token_id >= vocabulary.size:
            problems.append(f"{key} {token_id} in {path} is beyond vocab_size {vocabulary.size}")
        elif vocabulary.ids is not None and token_id not in vocabulary.ids:
            problems.append(
                f"{key} {token_id} in {path} is not in the tokenizer's vocabulary "
                f"({len(vocabulary.ids)} tokens)"
            )
    if vocabulary.size is not None:
        beyond = sorted((i, t) for t, i in vocabulary.added.items() if i >= vocabulary.size)
        if beyond:
            problems.append(
                f"{len(beyond)} added token(s) beyond vocab_size {vocabulary.size} "
                f"({listing((f'{t} = {i}' for i, t in beyond), 3)})"
            )
    problems += _tekken_problems(view, vocabulary.size)
    return problems


def _special_ids(view: RevisionView) -> list[tuple[str, str, int]]:
    found = []
    for path in ("config.json", "generation_config.json"):
        parsed = view.json(path)
        if not isinstance(parsed, dict):
            continue
        for key in _ID_KEYS:
            value = parsed.get(key)
            values = value if isinstance(value, list) else [value]
            found += [
                (path, key, v) for v in values if isinstance(v, int) and not isinstance(v, bool)
            ]
    return found


def _vocabulary(view: RevisionView) -> Vocabulary:
    ids, known = _tokenizer_ids(view)
    added = dict(known)
    extra = view.json("added_tokens.json")
    if isinstance(extra, dict):
        added.update({str(k): v for k, v in extra.items() if _is_id(v)})
    config = view.json("tokenizer_config.json")  # transformers 4.34+: added_tokens_decoder
    decoder = config.get("added_tokens_decoder") if isinstance(config, dict) else None
    for token_id, token in (decoder or {}).items() if isinstance(decoder, dict) else ():
        if str(token_id).isdigit() and isinstance(token, dict):
            added.setdefault(str(token.get("content")), int(token_id))
    return Vocabulary(ids, added, _size(view))


TOKENIZERS: Slot[tuple[frozenset[int] | None, dict[str, int]]] = Slot("health.tokenizers", 8)
"""tokenizer.json's ids and added tokens by its content's sha256: in a backfill the same
tokenizer.json is judged at every config edit, and parsing it is most of the judgement."""


def _tokenizer_ids(view: RevisionView) -> tuple[frozenset[int] | None, dict[str, int]]:
    """The ids and added tokens (content → id) tokenizer.json knows; (None, {}) without one."""
    # the store's sha when the bytes were stored before: most revisions hash nothing here (a
    # blob the store lost reads as no tokenizer.json, whatever its sha)
    readable = view.raw("tokenizer.json") is not None
    key = (view.content_sha("tokenizer.json") or "") if readable else ""
    tokenizers = view.memo[TOKENIZERS]
    found = tokenizers.get(key) if key else None
    if found is not None:
        return found
    added: dict[str, int] = {}
    ids: set[int] | None = None
    tokenizer = view.json("tokenizer.json")
    if isinstance(tokenizer, dict):
        ids = set(_model_ids(tokenizer.get("model")))
        for token in tokenizer.get("added_tokens") or []:
            if isinstance(token, dict) and _is_id(token.get("id")):
                added[str(token.get("content"))] = token["id"]
        ids.update(added.values())
    found = (None if ids is None else frozenset(ids), added)
    if key:
        tokenizers.put(key, found)
    return found


def _model_ids(model: Any) -> list[int]:
    vocab = model.get("vocab") if isinstance(model, dict) else None
    if isinstance(vocab, dict):
        ids = vocab.values()
        if set(map(type, ids)) == {int}:  # as the `tokenizers` library writes it: taken in C
            return list(ids)
        return [v for v in ids if _is_id(v)]
    if isinstance(vocab, list):  # Unigram: the id is the position
        return list(range(len(vocab)))
    return []


def _size(view: RevisionView) -> int | None:
    config = view.json("config.json")
    if isinstance(config, dict):
        text = config.get("text_config")
        for source in (config, text if isinstance(text, dict) else {}):
            if _is_id(source.get("vocab_size")):
                return int(source["vocab_size"])
    params = view.json("params.json")
    if isinstance(params, dict) and _is_id(params.get("vocab_size")):
        return int(params["vocab_size"])
    return None


def _is_id(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _tekken_problems(view: RevisionView, size: int | None) -> list[str]:
    """tekken.json's vocabulary (special tokens included) against the embedding rows."""
    tekken = view.json("tekken.json")
    config = tekken.get("config") if isinstance(tekken, dict) else None
    if size is None or not isinstance(config, dict):
        return []
    vocab = config.get("default_vocab_size")
    if isinstance(vocab, int) and vocab > size:
        return [f"tekken.json default_vocab_size {vocab} is beyond vocab_size {size}"]
    return []
