"""Synthetic labelled histories, one per class of change in issue 13 and per differ.

Each history is a few commits built with `gitrepo.make_repo`, and beside it, written by hand
before hubwatch ever ran on it, the changes a person expects reported (keyed by commit title,
in the structure of an expected-change YAML file; see `tests/support/truth.py`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.gitrepo import CommitSpec, make_repo, safetensors_bytes
from tests.support.truth import Truth, truth_from_data

# NOTE: safetensors files are committed as plain blobs (not LFS pointers) so that their headers
# can be read from git, as the Hub's would be; pickle-capable files stay LFS pointers.
LFS_PATTERNS = ("*.bin", "*.pt", "*.pth", "*.gguf")
VOCAB = 32
HIDDEN = 8


@dataclass(frozen=True)
class History:
    """A synthetic history: its commits, oldest first, and what each is expected to report."""

    name: str
    commits: tuple[CommitSpec, ...]
    expected: Mapping[str, Sequence[Mapping[str, str]]]
    """Commit title -> expected changes (kind, severity, optional path, why)."""

    def truth(self) -> Truth:
        """The expectations as a Truth, like a loaded YAML file."""
        return truth_from_data(
            {
                "history": self.name,
                "source": "tests/support/truth_histories.py",
                "labelled": "by hand, with the commits, before running hubwatch on them",
                "revisions": [
                    {"sha": title, "changes": list(changes)}
                    for title, changes in self.expected.items()
                ],
            }
        )

    def build(self, path: Path) -> list[str]:
        """Write the history as a git repository at `path`; return its shas, oldest first."""
        return make_repo(path, self.commits, lfs_patterns=LFS_PATTERNS)


def js(value: object) -> bytes:
    """JSON bytes, indented like the Hub's files."""
    return json.dumps(value, indent=2).encode()


def config(**overrides: Any) -> dict[str, Any]:
    """A tiny, self-consistent Llama config."""
    base: dict[str, Any] = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": VOCAB,
        "hidden_size": HIDDEN,
        "intermediate_size": 16,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "max_position_embeddings": 128,
        "bos_token_id": 1,
        "eos_token_id": 2,
    }
    return base | overrides


def tensors(layers: int = 1, dtype: str = "F32") -> dict[str, tuple[str, list[int]]]:
    """Every tensor of a Llama with `layers` layers, at the tiny config's sizes."""
    out = {"model.embed_tokens.weight": (dtype, [VOCAB, HIDDEN])}
    for i in range(layers):
        p = f"model.layers.{i}."
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            out[f"{p}self_attn.{name}.weight"] = (dtype, [HIDDEN, HIDDEN])
        out[f"{p}mlp.gate_proj.weight"] = (dtype, [16, HIDDEN])
        out[f"{p}mlp.up_proj.weight"] = (dtype, [16, HIDDEN])
        out[f"{p}mlp.down_proj.weight"] = (dtype, [HIDDEN, 16])
        out[f"{p}input_layernorm.weight"] = (dtype, [HIDDEN])
        out[f"{p}post_attention_layernorm.weight"] = (dtype, [HIDDEN])
    out["model.norm.weight"] = (dtype, [HIDDEN])
    out["lm_head.weight"] = (dtype, [VOCAB, HIDDEN])
    return out


def weights(spec: Mapping[str, tuple[str, list[int]]], salt: int = 0) -> bytes:
    """A safetensors file of `spec`; `salt` fills the data, so equal headers, new content."""
    raw = safetensors_bytes(spec)
    size = sum(_nbytes(dtype, shape) for dtype, shape in spec.values())
    return raw[: len(raw) - size] + bytes([salt]) * size


def _nbytes(dtype: str, shape: Sequence[int]) -> int:
    n = {"F32": 4, "BF16": 2, "F16": 2}[dtype]
    for dim in shape:
        n *= dim
    return n


def sharded(
    spec: Mapping[str, tuple[str, list[int]]],
    shards: int,
    *,
    salt: int = 0,
    fmt: str = "model-{i:05d}-of-{n:05d}.safetensors",
    index: str = "model.safetensors.index.json",
) -> dict[str, bytes]:
    """The tensors of `spec` spread round-robin over `shards` files, with their index."""
    names = [fmt.format(i=i + 1, n=shards) for i in range(shards)]
    parts: list[dict[str, tuple[str, list[int]]]] = [{} for _ in names]
    for k, (tensor, value) in enumerate(spec.items()):
        parts[k % shards][tensor] = value
    total = sum(_nbytes(dtype, shape) for dtype, shape in spec.values())
    weight_map = {t: names[k % shards] for k, t in enumerate(spec)}
    out = {name: weights(part, salt) for name, part in zip(names, parts, strict=True)}
    out[index] = js({"metadata": {"total_size": total}, "weight_map": weight_map})
    return out


def base(**overrides: Any) -> dict[str, bytes | None]:
    """A loadable repo: config.json and one model.safetensors that matches it."""
    return {"config.json": js(config(**overrides)), "model.safetensors": weights(tensors())}


def tokenizer_json(vocab: Mapping[str, int], added: Sequence[tuple[str, int]] = ()) -> bytes:
    """A word-level tokenizer.json with `vocab` and `added` (content, id) special tokens."""
    return js(
        {
            "version": "1.0",
            "added_tokens": [
                {
                    "id": i,
                    "content": c,
                    "single_word": False,
                    "lstrip": False,
                    "rstrip": False,
                    "normalized": False,
                    "special": True,
                }
                for c, i in added
            ],  # fmt: skip
            "normalizer": None,
            "pre_tokenizer": {"type": "Whitespace"},
            "post_processor": None,
            "decoder": None,
            "model": {"type": "WordLevel", "vocab": dict(vocab), "unk_token": "<unk>"},
        }
    )


WORDS = ["<unk>", "<s>", "</s>", *(f"w{i}" for i in range(VOCAB - 3))]
TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}</s>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
GATING = "You agree to share your contact information."
CODE = b"import torch\n\n\nclass TinyModel(torch.nn.Module):\n    pass\n"
TOOLS = "{% if tools %}<|tools|>{{ tools | tojson }}</s>{% endif %}"


def card(front: Mapping[str, object], body: str = "# Tiny model\n\nA tiny test model.\n") -> bytes:
    """A README.md with YAML front matter."""
    lines = [f"{k}: {json.dumps(v)}" for k, v in front.items()]
    return ("---\n" + "\n".join(lines) + "\n---\n\n" + body).encode()


def tekken(special: Sequence[str], version: str = "v7") -> bytes:
    """A tiny tekken.json (mistral-common's tokenizer file)."""
    return js(
        {
            "config": {
                "pattern": r"[^\r\n\p{L}\p{N}]?\p{L}+",
                "num_vocab_tokens": 16,
                "default_vocab_size": 16 + len(special),
                "default_num_special_tokens": len(special),
                "version": version,
            },
            "vocab": [{"rank": r, "token_bytes": "", "token_str": chr(97 + r)} for r in range(16)],
            "special_tokens": [
                {"rank": r, "token_str": s, "is_control": True} for r, s in enumerate(special)
            ],
        }
    )


def params(**overrides: Any) -> bytes:
    """A tiny params.json (the Mistral-native config vLLM's mistral mode reads)."""
    value: dict[str, Any] = {
        "dim": HIDDEN, "n_layers": 1, "head_dim": 4, "hidden_dim": 16, "n_heads": 2,
        "n_kv_heads": 2, "rope_theta": 10000.0, "norm_eps": 1e-05, "vocab_size": VOCAB,
        "max_seq_len": 4096,
    }  # fmt: skip
    return js(value | overrides)


def _c(title: str, files: Mapping[str, bytes | None]) -> CommitSpec:
    return CommitSpec(files, message=title)


def _e(kind: str, severity: str, why: str, path: str | None = None) -> dict[str, str]:
    out = {"kind": kind, "severity": severity, "why": why}
    return out | ({"path": path} if path else {})


ADDED = _e("files.added", "info", "the first upload")


def _histories() -> list[History]:
    shuffled = dict(zip(WORDS, [0, 1, 2, *reversed(range(3, VOCAB))], strict=True))
    mix = sharded(tensors(), 2)
    mix_bf16 = sharded(tensors(dtype="BF16"), 2)
    three = sharded(tensors(layers=2), 3)
    bins = sharded(
        tensors(),
        3,
        fmt="pytorch_model-{i:05d}-of-{n:05d}.bin",
        index="pytorch_model.bin.index.json",
    )
    bins2 = sharded(tensors(), 2, fmt="pytorch_model-{i:05d}-of-{n:05d}.bin",
                    index="pytorch_model.bin.index.json")  # fmt: skip
    two = sharded(tensors(), 2)
    moved = json.loads(two["model.safetensors.index.json"])
    moved["metadata"]["total_size"] += 4096
    return [
        History(
            "tokenizer-renumbered",
            (
                _c(
                    "Upload",
                    base()
                    | {
                        "tokenizer.json": tokenizer_json(
                            dict(zip(WORDS, range(VOCAB), strict=True))
                        )
                    },
                ),
                _c("Re-number the vocabulary", {"tokenizer.json": tokenizer_json(shuffled)}),
            ),
            {
                "Upload": [ADDED],
                "Re-number the vocabulary": [
                    _e("tokenizer.vocab", "breaking", "w0..w28 get new ids", "tokenizer.json")
                ],
            },
        ),
        History(
            "chat-template-tools-only",
            (
                _c("Upload", base() | {"tokenizer_config.json": js({"chat_template": TEMPLATE})}),
                _c(
                    "Render tools",
                    {"tokenizer_config.json": js({"chat_template": TOOLS + TEMPLATE})},
                ),
            ),
            {
                "Upload": [ADDED],
                "Render tools": [
                    _e(
                        "chat_template.rendered",
                        "behavior",
                        "only conversations with tools render differently",
                        "tokenizer_config.json",
                    )
                ],
            },  # fmt: skip
        ),
        History(
            "shard-reupload-100",
            (
                _c(
                    "Upload",
                    {"config.json": js(config(num_hidden_layers=11))}
                    | sharded(tensors(layers=11), 100),
                ),
                _c(
                    "Re-upload every shard",
                    {
                        k: v
                        for k, v in sharded(tensors(layers=11), 100, salt=7).items()
                        if k.endswith(".safetensors")
                    },
                ),
            ),
            {
                "Upload": [ADDED],
                "Re-upload every shard": [
                    _e(
                        "weights.reuploaded",
                        "behavior",
                        "100 of 100 shards re-uploaded: new content, identical headers",
                    )
                ],
            },  # fmt: skip
        ),
        History(
            "upload-over-three-commits",
            (
                _c(
                    "Upload the index and shard 1",
                    {
                        "config.json": js(config(num_hidden_layers=2)),
                        "model.safetensors.index.json": three["model.safetensors.index.json"],
                        "model-00001-of-00003.safetensors": three[
                            "model-00001-of-00003.safetensors"
                        ],
                    },
                ),
                _c(
                    "Upload shard 2",
                    {"model-00002-of-00003.safetensors": three["model-00002-of-00003.safetensors"]},
                ),
                _c(
                    "Upload shard 3",
                    {"model-00003-of-00003.safetensors": three["model-00003-of-00003.safetensors"]},
                ),
            ),
            {
                "Upload the index and shard 1": [
                    ADDED,
                    _e("health.weights", "breaking", "the index names 3 shards, 1 present"),
                ],
                "Upload shard 2": [_e("files.added", "info", "shard 2 of 3")],
                "Upload shard 3": [
                    _e("files.added", "info", "shard 3 of 3"),
                    _e("health.weights", "info", "every shard the index names is present"),
                ],
            },  # fmt: skip
        ),
        History(
            "bin-index-3-to-2",
            (
                _c("Upload", {"config.json": js(config())} | bins),
                _c(
                    "Re-shard into two files",
                    dict.fromkeys((k for k in bins if k.endswith(".bin")), None) | bins2,
                ),
            ),
            {
                "Upload": [ADDED, _e("weights.pickle_added", "security", "3 .bin shards")],
                "Re-shard into two files": [
                    _e("files.added", "info", "2 new .bin shards"),
                    _e("files.removed", "info", "3 old .bin shards"),
                    _e(
                        "weights.shard_layout",
                        "info",
                        "3 shards -> 2",
                        "pytorch_model.bin.index.json",
                    ),
                    _e("weights.pickle_added", "security", "new pickle files to load"),
                ],
            },  # fmt: skip
        ),
        History(
            "safetensors-index-total-size",
            (
                _c("Upload", {"config.json": js(config())} | two),
                _c(
                    "Update model.safetensors.index.json",
                    {"model.safetensors.index.json": js(moved)},
                ),
            ),
            {
                "Upload": [ADDED],
                "Update model.safetensors.index.json": [
                    _e(
                        "weights.shard_layout",
                        "info",
                        "total_size +4096 in the index",
                        "model.safetensors.index.json",
                    ),
                ],
            },  # fmt: skip
        ),
        History(
            "from-model-config-removed",
            (
                _c(
                    "Upload",
                    base()
                    | {
                        "generation_config.json": js(
                            {"_from_model_config": True, "bos_token_id": 1, "eos_token_id": 2}
                        )
                    },
                ),
                _c(
                    "Drop _from_model_config",
                    {"generation_config.json": js({"bos_token_id": 1, "eos_token_id": 2})},
                ),
            ),
            {
                "Upload": [ADDED],
                "Drop _from_model_config": [
                    _e(
                        "generation.",
                        "info",
                        "_from_model_config true -> absent",
                        "generation_config.json",
                    )
                ],
            },  # fmt: skip
        ),
        History(
            "card-metadata-and-text",
            (
                _c("Upload", base()),
                _c("Add a model card", {"README.md": card({"license": "apache-2.0"})}),
                _c(
                    "Add a gating prompt",
                    {
                        "README.md": card(
                            {
                                "license": "apache-2.0",
                                "extra_gated_prompt": GATING,
                                "extra_gated_fields": {"Company": "text"},
                            }
                        )
                    },
                ),
                _c(
                    "Edit the card text",
                    {
                        "README.md": card(
                            {
                                "license": "apache-2.0",
                                "extra_gated_prompt": GATING,
                                "extra_gated_fields": {"Company": "text"},
                            },
                            body="# Tiny model\n\nA tiny model for tests, now documented.\n",
                        )
                    },
                ),
            ),
            {
                "Upload": [ADDED],
                "Add a model card": [
                    _e("files.added", "info", "README.md", "README.md"),
                    _e("card.license", "info", "absent -> apache-2.0 in a new README"),
                ],
                "Add a gating prompt": [
                    _e("card.metadata", "info", "extra_gated_prompt, extra_gated_fields added")
                ],
                "Edit the card text": [_e("card.text", "info", "README body edited")],
            },  # fmt: skip
        ),
        History(
            "card-keys-in-new-readme",
            (
                _c("Upload", base()),
                _c(
                    "Add a model card",
                    {
                        "README.md": card(
                            {
                                "license": "mit",
                                "base_model": "meta-llama/Llama-3.2-1B",
                                "pipeline_tag": "text-generation",
                            }
                        )
                    },
                ),
            ),
            {
                "Upload": [ADDED],
                "Add a model card": [
                    _e("files.added", "info", "README.md", "README.md"),
                    _e("card.license", "info", "absent -> mit"),
                    _e("card.base_model", "info", "absent -> meta-llama/Llama-3.2-1B"),
                    _e("card.pipeline_tag", "info", "absent -> text-generation"),
                ],
            },  # fmt: skip
        ),
        History(
            "eos-list-to-int",
            (
                _c("Upload", base(eos_token_id=[2, 3])),
                _c("Use one eos id", {"config.json": js(config(eos_token_id=2))}),
            ),
            {
                "Upload": [ADDED],
                "Use one eos id": [
                    _e(
                        "config.special_token_ids",
                        "breaking",
                        "eos_token_id [2, 3] -> 2",
                        "config.json",
                    )
                ],
            },  # fmt: skip
        ),
        History(
            "pad-token-removed",
            (
                _c(
                    "Upload",
                    base()
                    | {
                        "tokenizer_config.json": js(
                            {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<unk>"}
                        )
                    },
                ),
                _c(
                    "Remove the pad token",
                    {"tokenizer_config.json": js({"bos_token": "<s>", "eos_token": "</s>"})},
                ),
            ),
            {
                "Upload": [ADDED],
                "Remove the pad token": [
                    _e(
                        "tokenizer.special_tokens",
                        "breaking",
                        "pad_token <unk> -> absent",
                        "tokenizer_config.json",
                    )
                ],
            },  # fmt: skip
        ),
        History(
            "license-removed-restored",
            (
                _c("Upload", base()),
                _c("Add a model card", {"README.md": card({"license": "apache-2.0"})}),
                _c("Remove the license", {"README.md": card({})}),
                _c("Restore the license", {"README.md": card({"license": "apache-2.0"})}),
            ),
            {
                "Upload": [ADDED],
                "Add a model card": [
                    _e("files.added", "info", "README.md", "README.md"),
                    _e("card.license", "info", "absent -> apache-2.0 in a new README"),
                ],
                "Remove the license": [_e("card.license", "breaking", "apache-2.0 -> absent")],
                "Restore the license": [_e("card.license", "info", "absent -> apache-2.0")],
            },
        ),
        History(
            "tokens-beyond-vocab-size",
            (
                _c(
                    "Upload",
                    base()
                    | {
                        "tokenizer.json": tokenizer_json(
                            dict(zip(WORDS, range(VOCAB), strict=True))
                        )
                    },
                ),
                _c(
                    "Add tool tokens",
                    {
                        "tokenizer.json": tokenizer_json(
                            dict(zip(WORDS, range(VOCAB), strict=True)),
                            [("<tool>", VOCAB), ("</tool>", VOCAB + 1)],
                        )
                    },
                ),
            ),
            {
                "Upload": [ADDED],
                "Add tool tokens": [
                    _e(
                        "tokenizer.added_tokens",
                        "behavior",
                        "<tool> 32, </tool> 33 added",
                        "tokenizer.json",
                    ),
                    _e("health.tokenizer", "breaking", "ids 32, 33 beyond vocab_size 32"),
                ],
            },  # fmt: skip
        ),
        History(
            "base-model-mismatch",
            (
                _c("Upload", base()),
                _c(
                    "Add a model card",
                    {"README.md": card({"base_model": "meta-llama/Llama-3.2-1B"})},
                ),
                _c(
                    "Point the card at Qwen",
                    {"README.md": card({"base_model": "Qwen/Qwen2.5-0.5B"})},
                ),
            ),
            {
                "Upload": [ADDED],
                "Add a model card": [
                    _e("files.added", "info", "README.md", "README.md"),
                    _e("card.base_model", "info", "absent -> meta-llama/Llama-3.2-1B"),
                ],
                "Point the card at Qwen": [
                    _e("card.base_model", "info", "Llama-3.2-1B -> Qwen2.5-0.5B"),
                    _e("health.card", "info", "card says qwen2, config.json says llama"),
                ],
            },  # fmt: skip
        ),
        History(
            "mistral-native",
            (
                _c(
                    "Upload",
                    {
                        "params.json": params(),
                        "tekken.json": tekken(["<unk>", "<s>", "</s>", "[INST]", "[/INST]"]),
                        "SYSTEM_PROMPT.txt": b"You are a helpful assistant.\n",
                        "consolidated.safetensors": weights(tensors()),
                    },
                ),
                _c("Longer context", {"params.json": params(max_seq_len=131072, rope_theta=1e6)}),
                _c(
                    "Add tool-call tokens",
                    {
                        "tekken.json": tekken(
                            ["<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[TOOL_CALLS]"]
                        )
                    },
                ),
                _c(
                    "Reword the system prompt",
                    {"SYSTEM_PROMPT.txt": b"You are Devstral, a helpful coding agent.\n"},
                ),
                _c(
                    "Consolidated weights in bf16",
                    {"consolidated.safetensors": weights(tensors(dtype="BF16"))},
                ),
            ),
            {
                "Upload": [ADDED],
                "Longer context": [
                    _e(
                        "mistral.params",
                        "behavior",
                        "max_seq_len 4096 -> 131072, rope_theta",
                        "params.json",
                    )
                ],
                "Add tool-call tokens": [
                    _e("mistral.tekken", "behavior", "[TOOL_CALLS] added", "tekken.json")
                ],
                "Reword the system prompt": [
                    _e(
                        "mistral.system_prompt",
                        "behavior",
                        "the default system prompt",
                        "SYSTEM_PROMPT.txt",
                    )
                ],
                "Consolidated weights in bf16": [
                    _e("weights.dtype", "behavior", "F32 -> BF16", "consolidated.safetensors")
                ],
            },  # fmt: skip
        ),
        History(
            "generation-sampling",
            (
                _c(
                    "Upload",
                    base()
                    | {
                        "generation_config.json": js(
                            {"do_sample": True, "temperature": 0.7, "top_p": 0.9}
                        )
                    },
                ),
                _c(
                    "Sample cooler",
                    {
                        "generation_config.json": js(
                            {"do_sample": True, "temperature": 0.3, "top_p": 0.9}
                        )
                    },
                ),
            ),
            {
                "Upload": [ADDED],
                "Sample cooler": [
                    _e(
                        "generation.sampling",
                        "behavior",
                        "temperature 0.7 -> 0.3",
                        "generation_config.json",
                    )
                ],
            },  # fmt: skip
        ),
        History(
            "custom-code-added",
            (
                _c("Upload", base()),
                _c(
                    "Add custom modeling code",
                    {"modeling_tiny.py": CODE},
                ),
            ),
            {
                "Upload": [ADDED],
                "Add custom modeling code": [
                    _e("files.added", "info", "modeling_tiny.py", "modeling_tiny.py"),
                    _e("code.custom_added", "security", "modeling_tiny.py", "modeling_tiny.py"),
                ],
            },  # fmt: skip
        ),
        History(
            "pickle-added",
            (
                _c("Upload", base()),
                _c("Add a PyTorch checkpoint", {"pytorch_model.bin": b"PK\x03\x04 pickle"}),
            ),
            {
                "Upload": [ADDED],
                "Add a PyTorch checkpoint": [
                    _e("files.added", "info", "pytorch_model.bin", "pytorch_model.bin"),
                    _e("weights.pickle_added", "security", "pytorch_model.bin"),
                ],
            },
        ),
        History(
            "mixed-shard-upload",
            (
                _c("Upload", {"config.json": js(config())} | mix),
                _c(
                    "Re-upload shard 1 in bf16",
                    {
                        "model-00001-of-00002.safetensors": mix_bf16[
                            "model-00001-of-00002.safetensors"
                        ]
                    },
                ),
                _c(
                    "Re-upload shard 2 in bf16",
                    {
                        "model-00002-of-00002.safetensors": mix_bf16[
                            "model-00002-of-00002.safetensors"
                        ]
                    },
                ),
            ),
            {
                "Upload": [ADDED],
                "Re-upload shard 1 in bf16": [
                    _e("weights.dtype", "behavior", "shard 1 F32 -> BF16"),
                    _e("health.weights", "breaking", "a mix of two uploads (F32 and BF16 shards)"),
                ],
                "Re-upload shard 2 in bf16": [
                    _e("weights.dtype", "behavior", "shard 2 F32 -> BF16"),
                    _e("health.weights", "info", "one upload again"),
                ],
            },  # fmt: skip
        ),
        History(
            "generic-files",
            (
                _c(
                    "Upload",
                    base()
                    | {
                        "NOTES.txt": b"first line\nsecond line\n",
                        "eval_results.json": js({"mmlu": 0.31, "gsm8k": 0.12}),
                        "assets/logo.png": b"\x89PNG\r\n\x1a\n" + bytes(64),
                    },
                ),
                _c("Edit the notes", {"NOTES.txt": b"first line\nsecond line, edited\n"}),
                _c("Update eval results", {"eval_results.json": js({"mmlu": 0.33, "gsm8k": 0.12})}),
                _c("Replace the logo", {"assets/logo.png": b"\x89PNG\r\n\x1a\n" + bytes(80)}),
            ),
            {
                "Upload": [ADDED],
                "Edit the notes": [_e("text.changed", "info", "1 line changed", "NOTES.txt")],
                "Update eval results": [
                    _e("json.changed", "info", "mmlu 0.31 -> 0.33", "eval_results.json")
                ],
                "Replace the logo": [
                    _e("binary.changed", "info", "72 -> 88 bytes", "assets/logo.png")
                ],
            },  # fmt: skip
        ),
    ]


HISTORIES: tuple[History, ...] = tuple(_histories())
"""Every synthetic labelled history, by name."""
