"""Stop tokens in lineage fingerprints, compared as llama.cpp's end-of-generation set: real
Llama-3.1-8B layouts (128,256 tokens) on both sides, and llama.cpp's exceptions."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hubwatch.formats.view import RevisionView
from hubwatch.lineage.fingerprint import end_of_generation, fingerprint
from hubwatch.models import FileEntry, ReadResult, ReadStatus
from hubwatch.models.gguf import GGUFHeader
from tests.support.revisions import view

# Llama 3.1's special tokens (tokenizer_config.json's added_tokens_decoder, ids 128000..128255).
_NAMED = {
    128000: "<|begin_of_text|>",
    128001: "<|end_of_text|>",
    128002: "<|reserved_special_token_0|>",
    128003: "<|reserved_special_token_1|>",
    128004: "<|finetune_right_pad_id|>",
    128005: "<|reserved_special_token_2|>",
    128006: "<|start_header_id|>",
    128007: "<|end_header_id|>",
    128008: "<|eom_id|>",
    128009: "<|eot_id|>",
    128010: "<|python_tag|>",
}
SPECIALS = [
    _NAMED.get(i, f"<|reserved_special_token_{i - 128008}|>") for i in range(128000, 128256)
]
REGULAR = [f"\u0120r{i}" if i % 2 else f"r{i}" for i in range(128000)]
TEMPLATE = "{{- bos_token }}{% for m in messages %}{{ m['content'] }}<|eot_id|>{% endfor %}"


def hf_files(*, instruct: bool) -> dict[str, Any]:
    """Llama-3.1-8B(-Instruct) as meta-llama ships it: generation_config eos [128001, 128008,
    128009] and eos_token <|eot_id|> (Instruct), or eos 128001 / <|end_of_text|> (base)."""
    added = [{"id": 128000 + n, "content": t, "special": True} for n, t in enumerate(SPECIALS)]
    decoder = {str(a["id"]): {"content": a["content"], "special": True} for a in added}
    return {
        "tokenizer.json": {
            "added_tokens": added,
            "model": {"type": "BPE", "vocab": {t: i for i, t in enumerate(REGULAR)}, "merges": []},
        },
        "tokenizer_config.json": {
            "bos_token": "<|begin_of_text|>",
            "eos_token": "<|eot_id|>" if instruct else "<|end_of_text|>",
            "chat_template": TEMPLATE,
            "added_tokens_decoder": decoder,
        },
        "generation_config.json": {
            "bos_token_id": 128000,
            "eos_token_id": [128001, 128008, 128009] if instruct else 128001,
        },
    }


def gguf_files(*, instruct: bool) -> RevisionView:
    """The GGUF convert_hf_to_gguf.py makes of it: eos 128009 and eom 128008 (Instruct), or eos
    128001 (base); the 128,256 tokens in id order."""
    metadata: dict[str, Any] = {
        "general.architecture": "llama",
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.tokens": REGULAR + SPECIALS,
        "tokenizer.ggml.bos_token_id": 128000,
        "tokenizer.ggml.eos_token_id": 128009 if instruct else 128001,
        "tokenizer.chat_template": TEMPLATE,
    }
    if instruct:
        metadata["tokenizer.ggml.eom_token_id"] = 128008
    path = "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"
    data = json.dumps(GGUFHeader(3, 32, 1024, metadata, ()).to_json()).encode()
    entry = FileEntry(path, 4_920_000_000, "f" * 40, "e" * 64)
    return RevisionView([entry], {}, {path: ReadResult(ReadStatus.STORED, data=data)})


EVERY = ("chat_template", "special_tokens", "tokenizer", "generation")
STOPS = ["<|end_of_text|>", "<|eom_id|>", "<|eot_id|>"]


@pytest.mark.parametrize("instruct", [True, False], ids=["instruct", "base"])
def test_a_llama_3_1_gguf_matches_its_base_on_every_aspect(instruct: bool) -> None:
    """Instruct: the GGUF names eos and eom, llama.cpp adds <|end_of_text|> by its text; the
    base: the GGUF names <|end_of_text|>, llama.cpp adds <|eot_id|> and <|eom_id|> by theirs."""
    gguf = fingerprint(gguf_files(instruct=instruct))
    hf = fingerprint(view(hf_files(instruct=instruct)))
    assert gguf.values["generation"] == hf.values["generation"] == STOPS
    assert gguf.compared(hf) == (EVERY, ())


def test_the_instruct_gguf_does_not_match_the_base_model() -> None:
    gguf = fingerprint(gguf_files(instruct=True))
    base = fingerprint(view(hf_files(instruct=False)))
    assert gguf.compared(base) == (EVERY, ("special_tokens",))  # eos <|eot_id|> vs <|end_of_text|>


@pytest.mark.parametrize(
    ("declared", "vocabulary", "expected"),
    [
        # gpt-oss (o200k_harmony): <|end|> is not a stop beside <|return|> and <|call|>
        (["<|return|>"], ["<|end|>", "<|return|>", "<|call|>", "x"], ["<|call|>", "<|return|>"]),
        # solar-open: nor beside <|calls|> and <|flush|>
        (["<|flush|>"], ["<|end|>", "<|calls|>", "<|flush|>"], ["<|calls|>", "<|flush|>"]),
        # gemma4: </s> is not a stop beside <|tool_response>
        (["<eos>"], ["</s>", "<|tool_response>", "<turn|>"],
         ["<eos>", "<turn|>", "<|tool_response>"]),
        # Qwen2.5: the FIM pad/repo/sep tokens end generation too
        (["<|im_end|>"], ["<|endoftext|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "a"],
         ["<|endoftext|>", "<|file_sep|>", "<|fim_pad|>", "<|im_end|>", "<|repo_name|>"]),
        # a declared stop outside the text list is kept; ordinary tokens are not added
        (["<|eot|>"], ["<|eot|>", "a", "b"], ["<|eot|>"]),
    ],
)  # fmt: skip
def test_end_of_generation_follows_llama_cpp(
    declared: list[str], vocabulary: list[str], expected: list[str]
) -> None:
    assert end_of_generation(declared, vocabulary) == expected
