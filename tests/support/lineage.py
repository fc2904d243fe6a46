"""The files of a small model whose base fixes its chat template and eos, for lineage tests."""

from __future__ import annotations

import json
from typing import Any

OLD_TEMPLATE = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}</s>{% endfor %}"
NEW_TEMPLATE = (
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|eot|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
OTHER_TEMPLATE = "{% for m in messages %}### {{ m.role }}: {{ m.content }}\n{% endfor %}"
VOCAB = {"<unk>": 0, "<s>": 1, "</s>": 2, "<|eot|>": 3, "a": 4, "b": 5, "ab": 6}
SPECIAL = ("<unk>", "<s>", "</s>", "<|eot|>")


def tokenizer_json() -> dict[str, Any]:
    added = [
        {"id": i, "content": t, "special": True, "single_word": False, "lstrip": False}
        for i, t in enumerate(SPECIAL)
    ]
    return {
        "version": "1.0",
        "added_tokens": added,
        "model": {"type": "BPE", "vocab": VOCAB, "merges": ["a b"]},
    }


def model_files(*, fixed: bool, template: str | None = None) -> dict[str, Any]:
    """A model's files as JSON values: the old template and eos `</s>` (id 2), or the fix:
    the new template, eos `<|eot|>` (id 3) in both files."""
    return {
        "config.json": {"architectures": ["LlamaForCausalLM"], "model_type": "llama"},
        "tokenizer.json": tokenizer_json(),
        "tokenizer_config.json": {
            "bos_token": "<s>",
            "eos_token": "<|eot|>" if fixed else "</s>",
            "chat_template": template or (NEW_TEMPLATE if fixed else OLD_TEMPLATE),
        },
        "generation_config.json": {"bos_token_id": 1, "eos_token_id": 3 if fixed else 2},
    }


def card(
    base: str | list[str] | None = None, relation: str | None = None, text: str = "A model."
) -> str:
    front: dict[str, object] = {"license": "apache-2.0"}
    if base is not None:
        front["base_model"] = base
    if relation is not None:
        front["base_model_relation"] = relation
    lines = [f"{k}: {json.dumps(v)}" for k, v in front.items()]
    return "---\n" + "\n".join(lines) + "\n---\n" + text + "\n"


def as_bytes(files: dict[str, Any]) -> dict[str, bytes | None]:
    """JSON values and text as the bytes a commit holds."""
    return {
        path: (value if isinstance(value, bytes) else value.encode())
        if isinstance(value, bytes | str)
        else json.dumps(value, indent=2).encode()
        for path, value in files.items()
    }
