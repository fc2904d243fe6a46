"""What a derivative inherits from its base, as comparable values: the fingerprint lineage
matches on (chat template, special tokens, tokenizer, stop tokens), from HF files or GGUF.

Texts are compared exactly, not whitespace-insensitively: a template fix is often whitespace
only (a stray newline before the generation prompt), and that is what a stale derivative lacks.

Stop tokens (the "generation" aspect) are compared as llama.cpp's end-of-generation set on both
sides (`end_of_generation`): a GGUF's eos/eot/eom (and FIM pad/repo/sep) ids, an HF repo's
generation_config eos_token_id(s) and tokenizer_config eos_token, each plus the vocabulary's
tokens llama.cpp takes as end-of-generation by their text. So a Llama-3.1-8B-Instruct GGUF (eos
`<|eot_id|>`, eom, `<|end_of_text|>` in the vocabulary) matches its base's generation_config
eos [128001, 128008, 128009]; and a base model's GGUF, whose vocabulary holds chat stops its
generation_config does not list, still matches its base.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hubwatch.caching import Slot
from hubwatch.formats.tokenizer import templates, vocab_table
from hubwatch.formats.view import RevisionView

CHAT_TEMPLATE, SPECIAL_TOKENS, TOKENIZER, GENERATION = (
    "chat_template",
    "special_tokens",
    "tokenizer",
    "generation",
)
ASPECTS = (CHAT_TEMPLATE, SPECIAL_TOKENS, TOKENIZER, GENERATION)
"""Every aspect, in the order they are reported."""
SPECIAL = ("bos", "eos", "pad")
_GGUF_SPECIAL = {"bos": "bos_token_id", "eos": "eos_token_id", "pad": "padding_token_id"}
_GGUF_STOPS = (
    "eos_token_id",
    "eot_token_id",
    "eom_token_id",
    "fim_pad_token_id",
    "fim_rep_token_id",
    "fim_sep_token_id",
)
# The token texts llama.cpp adds to its end-of-generation set whatever the metadata says
# (ggml-org/llama.cpp src/llama-vocab.cpp @ 00ad355, llama_vocab::impl::load, the loop that fills
# `special_eog_ids`; ref. llama.cpp issue #9606), and the FIM pad/repo/sep texts it detects
# when their ids are not in the metadata (the same function, "find FIM_PAD token"…), which are
# end-of-generation too. llama.cpp keeps one FIM id of each kind; all are kept here.
_EOG_TEXTS = frozenset(
    {
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
        "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>",
        "[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>",
        "<|tool_response>", "<\uff5cend\u2581of\u2581sentence\uff5c>", "[e~[",
        "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]",
        "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", "<|file_sep|>",
    }
)  # fmt: skip
_CALLS = frozenset({"<|call|>", "<|calls|>"})
_TEMPLATE_KEY = "tokenizer.chat_template"


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """One revision's inherited aspects; an aspect it lacks is absent from `values`.

    Values are a mapping (chat templates by name, special tokens by role: only the keys both
    sides have are compared), a digest (the tokenizer), or a sorted list (stop tokens).
    """

    values: Mapping[str, Any] = field(default_factory=dict)
    source: str = "files"
    """Where it was read: "files" (tokenizer and config JSON) or "gguf:<model name>"."""

    def compared(self, other: Fingerprint) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(the aspects both have, those of them that differ), in ASPECTS order."""
        both: list[str] = []
        differ: list[str] = []
        for aspect in ASPECTS:
            mine, theirs = self.values.get(aspect), other.values.get(aspect)
            if mine is None or theirs is None:
                continue
            if isinstance(mine, Mapping) and isinstance(theirs, Mapping):
                common = mine.keys() & theirs.keys()
                if not common:
                    continue
                same = all(mine[key] == theirs[key] for key in common)
            else:
                same = mine == theirs
            both.append(aspect)
            if not same:
                differ.append(aspect)
        return tuple(both), tuple(differ)


def fingerprint(view: RevisionView) -> Fingerprint:
    """The revision's fingerprint: from its HF files when it has any, else from its first GGUF
    model (by name) whose header was read; empty when it has neither."""
    found = _from_files(view)
    if found.values:
        return found
    for name, model in sorted(view.gguf_models().items()):
        if model.metadata:
            return gguf_fingerprint(model.metadata, f"gguf:{name}")
    return found


def _from_files(view: RevisionView) -> Fingerprint:
    values: dict[str, Any] = {}
    chat = {name: source for name, (_, source) in templates(view).items()}
    if chat:
        values[CHAT_TEMPLATE] = chat
    special = _special_tokens(view)
    if special:
        values[SPECIAL_TOKENS] = special
    ids = _id_tokens(view)
    if ids is not None:
        values[TOKENIZER] = token_digest(ids)
    stops = _stop_tokens(view, ids or {})
    if stops is not None:
        values[GENERATION] = stops
    return Fingerprint(values)


def gguf_fingerprint(metadata: Mapping[str, Any], source: str = "gguf") -> Fingerprint:
    """The fingerprint of one GGUF model's metadata (`tokenizer.ggml.*`, its chat templates)."""
    values: dict[str, Any] = {}
    chat = {
        ("default" if key == _TEMPLATE_KEY else key[len(_TEMPLATE_KEY) + 1 :]): value
        for key, value in metadata.items()
        if (key == _TEMPLATE_KEY or key.startswith(_TEMPLATE_KEY + ".")) and isinstance(value, str)
    }
    if chat:
        values[CHAT_TEMPLATE] = chat
    raw = metadata.get("tokenizer.ggml.tokens")
    tokens = [str(t) for t in raw] if isinstance(raw, list) else []
    if tokens:
        values[TOKENIZER] = token_digest(dict(enumerate(tokens)))
    special = {
        role: tokens[id_]
        for role, key in _GGUF_SPECIAL.items()
        if (id_ := _id(metadata.get(f"tokenizer.ggml.{key}"))) is not None and id_ < len(tokens)
    }
    if special:
        values[SPECIAL_TOKENS] = special
    stops = {
        tokens[id_] if id_ < len(tokens) else f"<id {id_}>"
        for key in _GGUF_STOPS
        if (id_ := _id(metadata.get(f"tokenizer.ggml.{key}"))) is not None
    }
    if stops:
        values[GENERATION] = end_of_generation(stops, tokens)
    return Fingerprint(values, source)


def end_of_generation(declared: Iterable[str], vocabulary: Iterable[str]) -> list[str]:
    """The stop set llama.cpp builds (sorted texts): the `declared` stop tokens, plus every token
    of `vocabulary` whose text llama.cpp takes as end-of-generation, less its two exceptions:
    `<|end|>` beside `<|return|>`/`<|call|>` (gpt-oss) or `<|calls|>`/`<|flush|>`, and `</s>`
    beside `<|tool_response>` (gemma4)."""
    found = set(declared) | _EOG_TEXTS.intersection(vocabulary)
    calls = bool(found & _CALLS)
    if calls and ("<|return|>" in found or "<|flush|>" in found):
        found.discard("<|end|>")
    if "<|tool_response>" in found:
        found.discard("</s>")
    return sorted(found)


def token_digest(ids: Mapping[int, str]) -> str:
    """sha256 of the id → token mapping, ids ascending. The `[PAD<id>]` fillers llama.cpp's
    converter appends up to the config's vocab_size are left out, so a GGUF and its HF source
    digest alike."""
    lines = (f"{i}\t{t}" for i, t in sorted(ids.items()) if t != f"[PAD{i}]")
    return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogatepass")).hexdigest()


def _special_tokens(view: RevisionView) -> dict[str, str]:
    """bos/eos/pad as transformers loads them: special_tokens_map.json overrides
    tokenizer_config.json (`PreTrainedTokenizerBase._from_pretrained`)."""
    found: dict[str, str] = {}
    for path in ("tokenizer_config.json", "special_tokens_map.json"):
        data = view.json(path)
        if not isinstance(data, dict):
            continue
        for role in SPECIAL:
            value = data.get(f"{role}_token")
            if isinstance(value, dict):
                value = value.get("content")
            if isinstance(value, str):
                found[role] = value
    return found


ID_TOKENS: Slot[dict[int, str]] = Slot("lineage.id_tokens", 8)
"""tokenizer.json's id → token by its blob: a base's many revisions mostly share one."""


def _id_tokens(view: RevisionView) -> dict[int, str] | None:
    """tokenizer.json's id → token (model.vocab, then added_tokens); None without one."""
    entry = view.files.get("tokenizer.json")
    if entry is None:
        return None
    key = f"{entry.blob_id}:{entry.lfs_sha256}"
    id_tokens = view.memo[ID_TOKENS]
    cached = id_tokens.get(key)
    if cached is not None:
        return cached
    data = view.json("tokenizer.json")
    if not isinstance(data, dict):
        return None
    model = data.get("model")
    ids = {
        i: token
        for token, i in vocab_table(model.get("vocab") if isinstance(model, dict) else None).items()
        if _id(i) is not None
    }
    added_tokens = data.get("added_tokens")
    for added in added_tokens if isinstance(added_tokens, list) else []:
        if isinstance(added, dict) and _id(added.get("id")) is not None:
            ids[added["id"]] = str(added.get("content"))
    id_tokens.put(key, ids)
    return ids


def _stop_tokens(view: RevisionView, ids: Mapping[int, str]) -> list[str] | None:
    """The stops llama.cpp would have once this repo is converted (`end_of_generation`):
    generation_config.json's eos_token_id(s) as token texts (tokenizer.json, else the
    tokenizer_config's added_tokens_decoder; an id neither knows stays `<id N>`) and
    tokenizer_config's eos_token; None when neither file names one."""
    config = view.json("generation_config.json")
    value = config.get("eos_token_id") if isinstance(config, dict) else None
    tokenizer_config = view.json("tokenizer_config.json")
    if not isinstance(tokenizer_config, dict):
        tokenizer_config = {}
    decoder = tokenizer_config.get("added_tokens_decoder")
    decoder = decoder if isinstance(decoder, dict) else {}
    added = {
        id_: entry["content"]
        for key, entry in decoder.items()
        if isinstance(entry, dict)
        and isinstance(entry.get("content"), str)
        and (id_ := _decimal(key)) is not None
    }
    names: set[str] = set()
    for id_ in (_id(v) for v in (value if isinstance(value, list) else [value])):
        if id_ is not None:
            names.add(ids.get(id_) or added.get(id_) or f"<id {id_}>")
    eos = tokenizer_config.get("eos_token")
    eos = eos.get("content") if isinstance(eos, dict) else eos
    if isinstance(eos, str):
        names.add(eos)
    if not names:
        return None
    return end_of_generation(names, [*ids.values(), *added.values()])


def _decimal(key: object) -> int | None:
    return int(key) if isinstance(key, str) and key.isdecimal() and len(key) < 12 else None


def _id(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
