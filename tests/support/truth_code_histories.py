"""Synthetic labelled histories for issue 27: custom code, config keys its code reads, licence
files, honest health and architecture claims, merges, renames, tokenizer settings.

As in `truth_histories`, each expectation was written by hand, with the commits, before
hubwatch ran on them; each names the class of change of the issue it stands for.
"""

from __future__ import annotations

from tests.support.gitrepo import CommitSpec
from tests.support.truth_histories import (
    VOCAB,
    History,
    _c,
    _e,
    config,
    js,
    tensors,
    weights,
)

AUTO = {
    "AutoConfig": "configuration_tiny.TinyConfig",
    "AutoModelForCausalLM": "modeling_tiny.TinyForCausalLM",
}
CONFIG_CLASS = (
    b"from transformers import PretrainedConfig\n\n\n"
    b"class TinyConfig(PretrainedConfig):\n"
    b'    model_type = "tiny"\n\n'
    b"    def __init__(self, hidden_size=8, **kwargs):\n"
    b"        self.hidden_size = hidden_size\n"
    b"        super().__init__(**kwargs)\n"
)


def modeling(
    *,
    header: str = "",
    forward: str = "return self.proj(x)",
    chat: str = "def chat(self, tokenizer, query, history=None, max_length=2048):",
    extra: str = "",
    doc: str = "The tiny model.",
    hint: str = "",
    warning: str = "use_cache is not supported",
    comment: str = "# project the hidden states",
    cls: str = "TinyForCausalLM",
) -> bytes:
    """A small modeling_tiny.py; each keyword rewrites one part of it."""
    return f'''import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.utils import logging
{header}
logger = logging.get_logger(__name__)


class {cls}(PreTrainedModel):
    """{doc}"""

    def __init__(self, config):
        super().__init__(config)
        self.proj = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, x{hint}):
        {comment}
        if getattr(self.config, "use_cache", False):
            logger.warning("{warning}")
        {forward}

    {chat}
        history = history or []
        return tokenizer.decode(self.generate(tokenizer(query))), history
{extra}'''.encode()


def repo(**files: bytes | None) -> dict[str, bytes | None]:
    """A loadable custom-code repo: config with auto_map, weights, config and modeling code."""
    return {
        "config.json": js(
            config(architectures=["TinyForCausalLM"], model_type="tiny", auto_map=AUTO)
        ),
        "model.safetensors": weights(tensors()),
        "configuration_tiny.py": CONFIG_CLASS,
        "modeling_tiny.py": modeling(),
    } | files


FIRST = [
    _e("files.added", "info", "the upload"),
    _e("code.", "security", "the repo's first custom code", "configuration_tiny.py"),
    _e("code.", "security", "the repo's first custom code", "modeling_tiny.py"),
]


def _code(severity: str, why: str, path: str = "modeling_tiny.py") -> dict[str, str]:
    return _e("code.", severity, why, path)


def _harmless() -> History:
    edits = [
        ("Reword a comment", {"comment": "# the projection"}, "a comment only"),
        ("Fix the docstring", {"doc": "The tiny causal LM."}, "a docstring only"),
        ("Add type hints", {"hint": ": torch.Tensor"}, "a type hint only"),
        ("Reword a warning", {"warning": "use_cache is ignored"}, "log text only"),
    ]
    commits, expected = [_c("Upload", repo())], {"Upload": FIRST}
    kwargs: dict[str, str] = {}
    for title, change, why in edits:
        kwargs |= change
        commits.append(_c(title, {"modeling_tiny.py": modeling(**kwargs)}))
        expected[title] = [_code("info", why)]
    reformatted = modeling(**kwargs).replace(
        b"super().__init__(config)", b"super().__init__(\n            config\n        )"
    )
    commits.append(_c("Reformat", {"modeling_tiny.py": reformatted}))
    expected["Reformat"] = [_code("info", "whitespace and line breaks only")]
    return History("code-harmless-edits", tuple(commits), expected)


RISKS = [
    (
        "Fetch a file on load",
        "import requests",
        "requests.get('https://example.com/x')",
        "network: requests.get",
    ),
    (
        "Run a command",
        "import subprocess",
        "subprocess.run(['nvidia-smi'])",
        "process: subprocess.run",
    ),
    ("Eval a setting", "", "eval(self.config.activation)", "dynamic code: eval"),
    (
        "Load a pickle",
        "",
        "torch.load('extra.pt')",
        "deserialisation: torch.load without weights_only",
    ),
    (
        "Build a CUDA kernel",
        "from torch.utils.cpp_extension import load",
        "load(name='k', sources=['k.cu'])",
        "native code: cpp_extension.load",
    ),
]


def _risky() -> History:
    commits, expected = [_c("Upload", repo())], {"Upload": FIRST}
    headers: list[str] = []
    calls: list[str] = []
    for title, header, call, why in RISKS:
        headers += [header] if header else []
        calls.append(call)
        body = "; ".join(calls) + "\n        return self.proj(x)"
        files = {"modeling_tiny.py": modeling(header="\n".join(headers), forward=body)}
        commits.append(_c(title, files))
        expected[title] = [_code("security", f"newly reaches {why}")]
    return History("code-risky-calls", tuple(commits), expected)


OPTIONAL = "def chat(self, tokenizer, query, history=None, max_length=2048, top_p=0.8):"
MESSAGES = (
    "def chat(self, tokenizer, messages, max_length=2048, top_p=0.8):\n        query = messages[-1]"
)
HEAD = "heads_tiny.TinyForSequenceClassification"
POLICY = b"# Acceptable Use Policy\n\nYou shall not use the Model for military purposes.\n"


def _behavior_and_breaks() -> History:
    return History(
        "code-behavior-and-breaks",
        (
            _c("Upload", repo()),
            _c(
                "Scale the projection",
                {"modeling_tiny.py": modeling(forward="return self.proj(x) * 2")},
            ),
            _c(
                "Add an optional parameter",
                {
                    "modeling_tiny.py": modeling(
                        forward="return self.proj(x) * 2",
                        chat=OPTIONAL,
                    )
                },
            ),
            _c(
                "Take messages instead of a query",
                {
                    "modeling_tiny.py": modeling(
                        forward="return self.proj(x) * 2",
                        chat=MESSAGES,
                    )
                },
            ),
            _c(
                "Rename the model class",
                {
                    "modeling_tiny.py": modeling(
                        forward="return self.proj(x) * 2",
                        cls="TinyLM",
                        chat=MESSAGES,
                    )
                },
            ),
        ),
        {
            "Upload": FIRST,
            "Scale the projection": [_code("behavior", "forward's body changed")],
            "Add an optional parameter": [_code("behavior", "chat gains top_p, a default")],
            "Take messages instead of a query": [
                _code("breaking", "chat: query and history removed")
            ],
            "Rename the model class": [
                _code("breaking", "TinyForCausalLM, named by auto_map, is gone")
            ],
        },
    )


def _auto_map() -> History:
    two = modeling(extra="\n\nclass TinyModel(PreTrainedModel):\n    pass\n")
    auto = {**AUTO, "AutoModel": "modeling_tiny.TinyModel"}
    head = "\n\nclass TinyForSequenceClassification(PreTrainedModel):\n    pass\n"
    return History(
        "code-auto-map",
        (
            _c("Upload", repo(**{"modeling_tiny.py": two})),
            _c(
                "Map AutoModel to a class the repo has",
                {
                    "config.json": js(
                        config(architectures=["TinyForCausalLM"], model_type="tiny", auto_map=auto)
                    )
                },
            ),
            _c(
                "Map a new head in a new module",
                {
                    "config.json": js(
                        config(
                            architectures=["TinyForCausalLM"],
                            model_type="tiny",
                            auto_map={
                                **auto,
                                "AutoModelForSequenceClassification": HEAD,
                            },
                        )
                    ),
                    "heads_tiny.py": b"from transformers import PreTrainedModel\n" + head.encode(),
                },
            ),
            _c(
                "Drop AutoModel",
                {
                    "config.json": js(
                        config(
                            architectures=["TinyForCausalLM"],
                            model_type="tiny",
                            auto_map={
                                **AUTO,
                                "AutoModelForSequenceClassification": HEAD,
                            },
                        )
                    )
                },
            ),
        ),
        {
            "Upload": FIRST,
            "Map AutoModel to a class the repo has": [
                _e(
                    "config.auto_map",
                    "info",
                    "AutoModel added, TinyModel already there",
                    "config.json",
                )
            ],
            "Map a new head in a new module": [
                _e("config.auto_map", "security", "maps code the repo did not have", "config.json"),
                _e("files.added", "info", "heads_tiny.py", "heads_tiny.py"),
                _code("behavior", "new module on the loading path", "heads_tiny.py"),
            ],
            "Drop AutoModel": [
                _e(
                    "config.auto_map",
                    "breaking",
                    "AutoModel.from_pretrained no longer loads it",
                    "config.json",
                )
            ],
        },
    )


READS = (
    "        self.flash = config.use_flash_attn\n        self.ntk = config.use_dynamic_ntk\n"
    "        self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_epsilon)\n"
    "        self.kv = nn.Linear(config.hidden_size, config.kv_channels)\n"
    "        self.fp32 = config.fp32"
)


def _config_keys() -> History:
    code = modeling().replace(
        b"        self.proj = nn.Linear(config.hidden_size, config.hidden_size)",
        b"        self.proj = nn.Linear(config.hidden_size, config.hidden_size)\n" + READS.encode(),
    )
    keys = {
        "use_flash_attn": True,
        "use_dynamic_ntk": False,
        "layer_norm_epsilon": 1e-6,
        "kv_channels": 8,
        "bf16": True,
        "fp32": False,
        "torch_dtype": "bfloat16",
    }

    def cfg(**moved: object) -> bytes:
        return js(
            config(
                architectures=["TinyForCausalLM"],
                model_type="tiny",
                auto_map=AUTO,
                **(keys | moved),
            )
        )

    steps = [
        ("Turn off flash attention", {"use_flash_attn": False}, "config.attention", "behavior"),
        ("Enable dynamic NTK", {"use_dynamic_ntk": True}, "config.custom", "behavior"),
        ("Change the norm epsilon", {"layer_norm_epsilon": 1e-5}, "config.custom", "behavior"),
        ("Load in fp32", {"bf16": False, "fp32": True}, "config.dtype", "behavior"),
        ("Widen kv_channels", {"kv_channels": 16}, "config.dimensions", "breaking"),
        ("Add a note key", {"note": "trained on 1T tokens"}, "config.other", "info"),
    ]
    commits, expected, moved = (
        [_c("Upload", repo(**{"modeling_tiny.py": code, "config.json": cfg()}))],
        {"Upload": FIRST},
        {},
    )
    for title, change, kind, severity in steps:
        moved |= change
        commits.append(_c(title, {"config.json": cfg(**moved)}))
        expected[title] = [_e(kind, severity, f"{change} read by the repo's code", "config.json")]
    # NOTE: labelled after custom code became estimable from its safetensors headers (issue
    # 30): this code's KV projection is kv_channels wide, so its KV cache per token doubles.
    expected["Widen kv_channels"].append(
        _e("estimate.kv_bytes_per_token", "behavior", "the KV width the code reads", "config.json")
    )
    return History("code-config-keys", tuple(commits), expected)


LICENSE = """The Tiny Model License
Version 1.0

1. Grant. You may use, copy and modify the Model.
2. Attribution. You must retain this notice in all copies.
"""


def _licences() -> History:
    nc = LICENSE + "3. You may use the Model solely for non-commercial research purposes.\n"
    nd = LICENSE + "3. You may not distribute the Model or derivatives of it.\n"
    return History(
        "license-terms",
        (
            _c(
                "Upload",
                {
                    "config.json": js(config()),
                    "model.safetensors": weights(tensors()),
                    "LICENSE": LICENSE.encode(),
                },
            ),
            _c("Add a non-commercial clause", {"LICENSE": nc.encode()}),
            _c("Drop the non-commercial clause", {"LICENSE": LICENSE.encode()}),
            _c("Forbid redistribution", {"LICENSE": nd.encode()}),
            _c("Allow redistribution again", {"LICENSE": LICENSE.encode()}),
            _c(
                "Retitle the licence",
                {"LICENSE": LICENSE.replace("Tiny Model", "Tiny LM").encode()},
            ),
            _c(
                "Bump the licence version",
                {
                    "LICENSE": LICENSE.replace("Tiny Model", "Tiny LM")
                    .replace("1.0", "2.0")
                    .encode()
                },
            ),
            _c(
                "Add an acceptable use policy",
                {"USE_POLICY.md": POLICY},
            ),
            _c("Remove the licence", {"LICENSE": None}),
        ),
        {
            "Upload": [
                _e("files.added", "info", "a licence in the first revision: files.added says it")
            ],
            "Add a non-commercial clause": [
                _e("license.", "breaking", "commercial use now forbidden", "LICENSE")
            ],
            "Drop the non-commercial clause": [
                _e("license.", "behavior", "commercial use allowed again", "LICENSE")
            ],
            "Forbid redistribution": [
                _e("license.", "breaking", "redistribution now forbidden", "LICENSE")
            ],
            "Allow redistribution again": [
                _e("license.", "behavior", "redistribution allowed again", "LICENSE")
            ],
            "Retitle the licence": [_e("license.", "info", "name change, same terms", "LICENSE")],
            "Bump the licence version": [
                _e("license.", "info", "version 1.0 -> 2.0, same terms", "LICENSE")
            ],
            "Add an acceptable use policy": [
                _e("files.added", "info", "USE_POLICY.md", "USE_POLICY.md"),
                _e(
                    "license.",
                    "breaking",
                    "an acceptable-use restriction beside the licence",
                    "USE_POLICY.md",
                ),
            ],
            "Remove the licence": [
                _e("files.removed", "info", "LICENSE", "LICENSE"),
                _e("license.", "breaking", "the licence is gone: all rights reserved", "LICENSE"),
            ],
        },
    )


def _honest_health() -> History:
    shards = {f"pytorch_model-0000{n}-of-00002.bin": f"shard {n}".encode() for n in (1, 2)}
    index = js(
        {
            "metadata": {"total_size": 16},
            "weight_map": {
                "a": "pytorch_model-00001-of-00002.bin",
                "b": "pytorch_model-00002-of-00002.bin",
            },
        }
    )
    no_type = config(architectures=["TinyForCausalLM"], auto_map=AUTO)
    del no_type["model_type"]
    return History(
        "honest-health-claims",
        (
            _c(
                "Upload the code",
                {
                    "config.json": js(no_type),
                    "configuration_tiny.py": CONFIG_CLASS,
                    "modeling_tiny.py": modeling(),
                },
            ),
            _c(
                "Fill in model_type",
                {
                    "config.json": js(
                        config(architectures=["TinyForCausalLM"], model_type="tiny", auto_map=AUTO)
                    )
                },
            ),
            _c(
                "Upload shard 1",
                {"pytorch_model-00001-of-00002.bin": shards["pytorch_model-00001-of-00002.bin"]},
            ),
            _c(
                "Upload shard 2",
                {"pytorch_model-00002-of-00002.bin": shards["pytorch_model-00002-of-00002.bin"]},
            ),
            _c("Add the index", {"pytorch_model.bin.index.json": index}),
        ),
        {
            "Upload the code": [
                *FIRST,
                _e("health.weights", "breaking", "config names a class, no weights"),
            ],
            "Fill in model_type": [
                _e(
                    "config.architecture",
                    "info",
                    "model_type filled in: the same class",
                    "config.json",
                )
            ],
            "Upload shard 1": [
                _e("files.added", "info", "shard 1", "pytorch_model-00001-of-00002.bin"),
                _e("weights.pickle_added", "security", "a pickle shard"),
            ],
            "Upload shard 2": [
                _e("files.added", "info", "shard 2", "pytorch_model-00002-of-00002.bin"),
                _e(
                    "weights.pickle_added",
                    "security",
                    "another pickle shard; no index yet: still not loadable",
                ),
            ],
            "Add the index": [
                _e("files.added", "info", "the index", "pytorch_model.bin.index.json"),
                _e("health.weights", "info", "now loadable: the index finds both shards"),
            ],
        },
    )


def _merge_and_rename() -> History:
    moved = {**AUTO, "AutoModelForCausalLM": "modeling_small.TinyForCausalLM"}
    return History(
        "merge-and-rename",
        (
            _c("Upload", repo(**{"NOTES.md": b"# Notes\n\nFirst notes.\n"})),
            CommitSpec(
                {"modeling_tiny.py": modeling(forward="return self.proj(x) + 1")},
                message="Fix forward on a branch",
                branch="fix",
            ),
            CommitSpec(
                {"NOTES.md": b"# Notes\n\nMain-line notes.\n"}, message="Edit the notes on main"
            ),
            CommitSpec(
                {"modeling_tiny.py": modeling(forward="return self.proj(x) + 1")},
                message="Merge the fix",
                merge="fix",
            ),
            _c(
                "Move the notes",
                {"NOTES.md": None, "docs/NOTES.md": b"# Notes\n\nMain-line notes.\n"},
            ),
            _c(
                "Rename the modeling module",
                {
                    "modeling_tiny.py": None,
                    "modeling_small.py": modeling(forward="return self.proj(x) + 1"),
                    "config.json": js(
                        config(architectures=["TinyForCausalLM"], model_type="tiny", auto_map=moved)
                    ),
                },
            ),
        ),
        {
            "Upload": FIRST,
            "Fix forward on a branch": [_code("behavior", "forward's body changed")],
            "Edit the notes on main": [_e("text.changed", "info", "NOTES.md", "NOTES.md")],
            "Merge the fix": [_code("behavior", "the merge brings the branch's fix against main")],
            "Move the notes": [
                _e("files.renamed", "info", "NOTES.md -> docs/NOTES.md: one change")
            ],
            "Rename the modeling module": [
                _e("files.renamed", "info", "modeling_tiny.py -> modeling_small.py"),
                _e(
                    "config.auto_map",
                    "behavior",
                    "now loads the same class from the renamed module",
                    "config.json",
                ),
            ],
        },
    )


SPECIAL = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}


def _tokenizer_settings() -> History:
    tok = {
        "tokenizer_class": "LlamaTokenizer",
        "model_max_length": 131072,
        "use_fast": False,
        **SPECIAL,
    }
    dicts = {
        k: {
            "content": v,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
        }
        for k, v in SPECIAL.items()
    }
    return History(
        "tokenizer-settings",
        (
            _c(
                "Upload",
                {
                    "config.json": js(config()),
                    "model.safetensors": weights(tensors()),
                    "tokenizer_config.json": js(tok),
                },
            ),
            _c("Add special_tokens_map.json", {"special_tokens_map.json": js(SPECIAL)}),
            _c("Reformat special_tokens_map.json", {"special_tokens_map.json": js(dicts)}),
            _c(
                "Use the fast tokenizer",
                {"tokenizer_config.json": js({k: v for k, v in tok.items() if k != "use_fast"})},
            ),
            _c(
                "Lift the length limit",
                {
                    "tokenizer_config.json": js(
                        {k: v for k, v in tok.items() if k != "use_fast"}
                        | {"model_max_length": 1000000000000000019884624838656}
                    )
                },
            ),
        ),
        {
            "Upload": [_e("files.added", "info", "the upload")],
            "Add special_tokens_map.json": [
                _e(
                    "files.added",
                    "info",
                    "the same tokens as tokenizer_config.json: nothing else",
                    "special_tokens_map.json",
                )
            ],
            "Reformat special_tokens_map.json": [],
            "Use the fast tokenizer": [
                _e(
                    "tokenizer.other",
                    "behavior",
                    "use_fast false -> unset: the fast class loads",
                    "tokenizer_config.json",
                )
            ],
            "Lift the length limit": [
                _e(
                    "tokenizer.model_max_length",
                    "behavior",
                    "131072 -> 1e30: truncation no longer stops",
                    "tokenizer_config.json",
                )
            ],
        },
    )


def _first_revision_tokens() -> History:
    decoder = {str(VOCAB + i): {"content": f"<extra_{i}>", "special": True} for i in range(2)}
    return History(
        "first-revision-tokens-beyond-vocab",
        (
            _c(
                "Upload",
                {
                    "config.json": js(config()),
                    "model.safetensors": weights(tensors()),
                    "tokenizer_config.json": js({**SPECIAL, "added_tokens_decoder": decoder}),
                },
            ),
        ),
        {
            "Upload": [
                _e("files.added", "info", "the upload"),
                _e(
                    "health.tokenizer",
                    "breaking",
                    "ids 32, 33 at or beyond vocab_size 32 from the start",
                ),
            ]
        },
    )


CODE_HISTORIES: tuple[History, ...] = (
    _harmless(),
    _risky(),
    _behavior_and_breaks(),
    _auto_map(),
    _config_keys(),
    _licences(),
    _honest_health(),
    _merge_and_rename(),
    _tokenizer_settings(),
    _first_revision_tokens(),
)
"""Every synthetic history of issue 27, by name."""
