"""A long synthetic history of a custom-code model (345 revisions by default): code, card,
config, generation and weight edits in turn, as a repo maintained for months has them."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.gitrepo import CommitSpec, make_repo

REVISIONS = 345


def _module(version: int, functions: int = 120) -> bytes:
    """A modeling file of `functions` functions; each `version` rewrites a tenth of them, as a
    maintained model's fixes and features do."""
    lines = ['"""Modeling code of a tiny custom model."""', "", "import math", "", ""]
    for i in range(functions):
        touched = (i + version) % 10 == 0
        lines += [
            f"def step_{i}(x, scale={1 + (version if touched else 0)}):",
            f'    """Step {i} of the forward pass."""',
            "    y = x * scale",
            *(f"    y = y + math.sqrt(abs(y)) * {k}" for k in range(1 + (3 if touched else 0))),
            "    return y",
            "",
            "",
        ]
    return ("\n".join(lines) + "\n").encode()


def _card(version: int) -> bytes:
    notes = range(version // 4 + (1 if version else 0))
    body = "\n".join(f"Release note {i}: a fix to step {i % 40}." for i in notes)
    return f"---\nlicense: apache-2.0\n---\n\n# Tiny custom model\n\n{body}\n".encode()


def _config(version: int) -> bytes:
    return json.dumps(
        {
            "architectures": ["TinyForCausalLM"],
            "model_type": "tiny",
            "auto_map": {"AutoModelForCausalLM": "modeling_tiny.TinyForCausalLM"},
            "vocab_size": 32,
            "hidden_size": 8,
            "max_position_embeddings": 1024 * (2 + version % 3),
            "torch_dtype": "bfloat16",
        },
        indent=2,
    ).encode()


def commits(revisions: int = REVISIONS) -> list[CommitSpec]:
    """The history, oldest first: an upload, then one kind of edit per revision in turn."""
    specs = [
        CommitSpec(
            {
                "config.json": _config(0),
                "modeling_tiny.py": _module(0) + b"\n\nclass TinyForCausalLM:\n    pass\n",
                "README.md": _card(0),
                "generation_config.json": json.dumps({"temperature": 0.7}).encode(),
                "model.safetensors": b"weights 0",
            },
            message="Upload",
        )
    ]
    for n in range(1, revisions):
        step = n % 5
        if step == 0:
            files = {"model.safetensors": f"weights {n}".encode()}
        elif step == 1:
            files = {"README.md": _card(n)}
        elif step == 2:
            files = {"config.json": _config(n)}
        elif step == 3:
            files = {
                "generation_config.json": json.dumps({"temperature": 0.5 + n % 3 / 10}).encode()
            }
        else:
            files = {"modeling_tiny.py": _module(n) + b"\n\nclass TinyForCausalLM:\n    pass\n"}
        specs.append(CommitSpec(files, message=f"Revision {n}"))
    return specs


def build(path: Path, revisions: int = REVISIONS) -> list[str]:
    """Write the history as a git repository at `path` (weights as LFS pointers)."""
    return make_repo(path, commits(revisions))
