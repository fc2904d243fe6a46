"""Which config.json keys a repo's own code reads (`config.X`, `self.config.X`,
`getattr(config, "X")`), and whether it builds a tensor's shape from one."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from hubwatch.diff.code.risky import dotted

SHAPE, VALUE = "shape", "value"
# Calls whose positional arguments (and these keywords) are sizes: a key read there fixes the
# shape of a weight, so a checkpoint saved under the old value no longer fits.
_SHAPE_CALLS = frozenset(
    {"Linear", "Embedding", "Conv1d", "Conv2d", "Conv1D", "LayerNorm", "RMSNorm", "GroupNorm",
     "Parameter", "empty", "zeros", "ones", "randn", "rand", "skip_init", "ColumnParallelLinear",
     "RowParallelLinear", "VocabParallelEmbedding"}
)  # fmt: skip
_SHAPE_KEYWORDS = frozenset(
    {"in_features", "out_features", "num_embeddings", "embedding_dim", "normalized_shape",
     "hidden_size", "size", "in_channels", "out_channels"}
)  # fmt: skip


def _is_config(owner: ast.AST) -> bool:
    return (isinstance(owner, ast.Name) and owner.id in ("config", "cfg")) or (
        isinstance(owner, ast.Attribute) and owner.attr == "config"
    )


def _config_key(node: ast.AST) -> str | None:
    """X when `node` reads `config.X`, `self.config.X`, `model.config.X` or
    `getattr(config, "X", …)`."""
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
        return node.attr if _is_config(node.value) else None
    if isinstance(node, ast.Call) and dotted(node.func) in ("getattr", "hasattr"):
        args = node.args
        if len(args) >= 2 and _is_config(args[0]) and isinstance(args[1], ast.Constant):
            return str(args[1].value)
    return None


def _aliases(nodes: list[ast.AST]) -> dict[str, str]:
    """`self.hidden = config.hidden_size` and `hidden = config.hidden_size`: hidden → the key."""
    found: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            key = _config_key(node.value)
            target = node.targets[0]
            if key is None:
                continue
            if isinstance(target, ast.Name):
                found[target.id] = key
            elif isinstance(target, ast.Attribute) and dotted(target.value) == "self":
                found[f"self.{target.attr}"] = key
    return found


def _keys_in(node: ast.AST, aliases: dict[str, str]) -> Iterator[str]:
    for inner in ast.walk(node):
        key = _config_key(inner)
        if key is not None:
            yield key
        elif isinstance(inner, ast.Name | ast.Attribute):
            name = dotted(inner)
            if name in aliases:
                yield aliases[name]


def config_reads(nodes: list[ast.AST]) -> dict[str, str]:
    """Each config key the module reads (`nodes`: all of its nodes): `shape` when it sizes a
    weight, else `value`."""
    aliases = _aliases(nodes)
    reads: dict[str, str] = {}
    for node in nodes:
        key = _config_key(node)
        if key is not None:
            reads.setdefault(key, VALUE)
        if isinstance(node, ast.Call) and (dotted(node.func) or "").split(".")[-1] in _SHAPE_CALLS:
            sizes: list[ast.AST] = list(node.args)
            sizes += [k.value for k in node.keywords if k.arg in _SHAPE_KEYWORDS]
            for size in sizes:
                for found in _keys_in(size, aliases):
                    reads[found] = SHAPE
    return reads
